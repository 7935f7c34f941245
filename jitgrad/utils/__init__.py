"""``jitgrad.utils.data``: datasets and batching, where PyTorch has them (``torch.utils.data``)."""
from . import data

__all__ = ["data"]
