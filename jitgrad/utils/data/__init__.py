"""Datasets and batching as PyTorch's ``torch.utils.data`` spells them (docs/nn.md)."""
from .collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)


def get_worker_info() -> None:
    """None: jitgrad's ``DataLoader`` has no worker processes (``num_workers`` is 0), so code that
    splits an ``IterableDataset`` among workers reads the single-process case, as in PyTorch."""
    return None


__all__ = [
    "BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler", "IterableDataset",
    "RandomSampler", "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler", "TensorDataset",
    "WeightedRandomSampler", "default_collate", "default_convert", "get_worker_info", "random_split"]
