"""``DistributedSampler``: the share of a dataset's indices one rank of a data-parallel job visits.

As PyTorch's: every rank draws the same permutation (from ``seed + epoch``, so ``set_epoch`` gives
each epoch a new order that all ranks agree on) and keeps every ``num_replicas``-th index from its
``rank`` on. Without ``drop_last`` the indices are padded by repeating the first ones so that every
rank gets as many (the ranks' batches stay in step); with it the tail that does not divide evenly
is dropped.
"""
from __future__ import annotations

import math
from typing import Iterator, Sized

from ...distributed import get_rank, get_world_size
from ...random import Generator
from .sampler import Sampler, permutation


class DistributedSampler(Sampler):
    def __init__(self, dataset: Sized, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None:
            num_replicas = get_world_size()
        if rank is None:
            rank = get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if drop_last and len(dataset) % num_replicas != 0:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        count = len(self.dataset)
        indices = permutation(count, Generator(self.seed + self.epoch)) if self.shuffle else list(range(count))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Makes the next ``__iter__`` draw epoch ``epoch``'s order (the same on every rank)."""
        self.epoch = epoch


__all__ = ["DistributedSampler"]
