"""``jitgrad.utils.data``: datasets and batching, where PyTorch has them (``torch.utils.data``);
``jitgrad.utils.checkpoint``: activation checkpointing (``torch.utils.checkpoint``)."""
from . import checkpoint, data

__all__ = ["checkpoint", "data"]
