"""Datasets: anything with ``__getitem__(index)`` and ``__len__``. ``TensorDataset`` pairs tensors
row by row; ``Subset`` and ``random_split`` take parts of a dataset without copying it, and
``ConcatDataset`` joins datasets end to end. An ``IterableDataset`` is a stream of samples instead,
which ``DataLoader`` batches in the order it yields them."""
from __future__ import annotations

import bisect
import itertools
import math
from typing import Generic, Iterable, Iterator, Sequence, TypeVar

from ...random import Generator, default_generator
from ...tensor import Tensor
from .sampler import permutation

Sample = TypeVar("Sample")


class Dataset(Generic[Sample]):
    """Base class of map-style datasets: subclasses give ``__getitem__`` (and ``__len__``, which
    ``DataLoader`` needs to make batches)."""

    def __getitem__(self, index: int) -> Sample:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")


class IterableDataset(Dataset[Sample]):
    """Base class of stream datasets: subclasses give ``__iter__``. A ``DataLoader`` over one takes no
    sampler and no shuffling (the stream has its own order)."""

    def __iter__(self) -> Iterator[Sample]:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")


class ConcatDataset(Dataset[Sample]):
    """The samples of each dataset in turn: index ``i`` of the whole is found by the running sizes."""

    def __init__(self, datasets: Iterable[Dataset[Sample]]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        if any(isinstance(d, IterableDataset) for d in self.datasets):
            raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Sample:
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Sample ``i`` is ``(t[i] for t in tensors)``: every tensor must have the same first size."""

    def __init__(self, *tensors: Tensor) -> None:
        if any(t.shape[0] != tensors[0].shape[0] for t in tensors):
            raise ValueError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset[Sample]):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset[Sample], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index: int) -> Sample:
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def _split_lengths(total: int, lengths: Sequence[int | float]) -> list[int]:
    """Integer lengths from lengths or from fractions summing to 1 (the remainder of the fractions'
    floors handed out one by one from the first part, as PyTorch does)."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, fraction in enumerate(lengths):
            if not 0 <= fraction <= 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        counts = [int(math.floor(total * fraction)) for fraction in lengths]
        for i in range(total - sum(counts)):
            counts[i % len(counts)] += 1
        return counts
    if sum(lengths) != total:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    return [int(n) for n in lengths]


def random_split(dataset: Dataset[Sample], lengths: Sequence[int | float],
                 generator: Generator = default_generator) -> list[Subset[Sample]]:
    """Disjoint random subsets of ``dataset`` of the given lengths (or fractions): a permutation
    drawn from ``generator`` (jitgrad's, seeded by ``manual_seed``, unless another is given)."""
    counts = _split_lengths(len(dataset), lengths)
    order = permutation(sum(counts), generator)
    subsets, start = [], 0
    for count in counts:
        subsets.append(Subset(dataset, order[start:start + count]))
        start += count
    return subsets


__all__ = ["ConcatDataset", "Dataset", "IterableDataset", "Subset", "TensorDataset", "random_split"]
