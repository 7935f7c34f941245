"""``DataLoader``: iterates over a dataset in batches, as PyTorch's, in this process.

Each epoch (each ``iter()``) asks the sampler for indices, the batch sampler groups them, and
``collate_fn`` turns each group of samples into a batch. With ``shuffle=True`` the order is a new
permutation every epoch, drawn from ``generator`` (jitgrad's own unless another is given), so
``jitgrad.manual_seed`` fixes the order of every epoch. ``num_workers`` must be 0: jitgrad loads
in the training process (its tensors are numpy arrays; there are no worker processes to feed). An
``IterableDataset`` is batched in the order it yields its samples.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Sequence

from ...random import Generator
from .collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler


class DataLoader:
    def __init__(self, dataset: Dataset | Sequence[Any], batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable[int] | None = None,
                 batch_sampler: Sampler | Iterable[list[int]] | None = None, num_workers: int = 0,
                 collate_fn: Callable[[list[Any]], Any] | None = None, drop_last: bool = False,
                 generator: Generator | None = None) -> None:
        if num_workers != 0:
            raise ValueError(f"num_workers={num_workers}: jitgrad's DataLoader loads in this process; use 0")
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable and shuffle not in (None, False):
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                             f"shuffle={shuffle}")
        if self._iterable and sampler is not None:
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                             f"sampler={sampler}")
        if self._iterable and batch_sampler is not None:
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but got "
                             f"batch_sampler={batch_sampler}")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                             "drop_last")
        if batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if batch_sampler is not None:
            batch_size = None  # the batch sampler decides
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn

    def __iter__(self) -> Iterator[Any]:
        if self._iterable:
            yield from self._stream()
            return
        if self.batch_sampler is None:  # batch_size=None: samples one by one, as they are
            for index in self.sampler:
                yield self.collate_fn(self.dataset[index])
            return
        for indices in self.batch_sampler:
            yield self.collate_fn([self.dataset[index] for index in indices])

    def _stream(self) -> Iterator[Any]:
        """An ``IterableDataset``'s samples, batched as they come."""
        if self.batch_size is None:
            for sample in self.dataset:
                yield self.collate_fn(sample)
            return
        batch: list[Any] = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if self._iterable:  # the dataset's own length, if it has one, in batches
            count = len(self.dataset)
            if self.batch_size is None:
                return count
            return count // self.batch_size if self.drop_last else -(-count // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)


__all__ = ["DataLoader"]
