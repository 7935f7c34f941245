"""Datasets and batching as PyTorch's ``torch.utils.data`` spells them (docs/nn.md)."""
from .collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import Dataset, Subset, TensorDataset, random_split
from .distributed import DistributedSampler
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = [
    "BatchSampler", "DataLoader", "Dataset", "DistributedSampler", "RandomSampler", "Sampler", "SequentialSampler",
    "Subset", "TensorDataset", "default_collate", "default_convert", "random_split"]
