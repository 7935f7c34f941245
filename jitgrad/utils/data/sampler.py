"""Samplers: the order in which a ``DataLoader`` visits a dataset's indices, and how it groups them
into batches. ``RandomSampler`` draws its permutations from jitgrad's generator, so
``jitgrad.manual_seed`` makes the order of every epoch repeatable."""
from __future__ import annotations

from typing import Iterable, Iterator, Sized

from ...random import Generator, default_generator
from ...random import sampling


def permutation(n: int, generator: Generator) -> list[int]:
    """A uniformly random order of ``range(n)``: the ranks of ``n`` uniform float64 draws, which move
    ``generator`` by ``n`` elements, as ``rand(n)`` would."""
    return sampling.permutation(generator.take(n), n).tolist()


class Sampler:
    """Base class: ``__iter__`` yields indices (or, for a batch sampler, lists of indices)."""

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new permutation of the indices at every iteration (every epoch), drawn from ``generator``."""

    def __init__(self, data_source: Sized, generator: Generator | None = None) -> None:
        self.data_source = data_source
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        generator = default_generator if self.generator is None else self.generator
        return iter(permutation(len(self.data_source), generator))

    def __len__(self) -> int:
        return len(self.data_source)


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler``; the last, shorter one dropped with ``drop_last``."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        count = len(self.sampler)
        return count // self.batch_size if self.drop_last else -(-count // self.batch_size)


__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "permutation"]
