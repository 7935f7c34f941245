"""Samplers: the order in which a ``DataLoader`` visits a dataset's indices, and how it groups them
into batches. ``RandomSampler`` draws its permutations from jitgrad's generator, so
``jitgrad.manual_seed`` makes the order of every epoch repeatable."""
from __future__ import annotations

from typing import Iterable, Iterator, Sequence, Sized

import numpy as np

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
    """A new permutation of the indices at every iteration (every epoch), drawn from ``generator``;
    ``num_samples`` more than the dataset's size runs through whole permutations and then part of
    one, as PyTorch's. With ``replacement``, ``num_samples`` independent uniform indices."""

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        self.data_source, self.replacement, self._num_samples = data_source, replacement, num_samples
        self.generator = generator
        if isinstance(self.num_samples, bool) or not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        """The dataset's size unless given: read at each epoch, as the dataset may grow."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        generator = default_generator if self.generator is None else self.generator
        size, count = len(self.data_source), self.num_samples
        if self.replacement:
            draws = sampling.sample(generator.take(count), (count,), np.float64, "uniform")
            return iter(np.minimum((draws * size).astype(np.int64), size - 1).tolist())
        order: list[int] = []
        for _ in range(count // size):
            order += permutation(size, generator)
        if count % size:
            order += permutation(size, generator)[:count % size]
        return iter(order)

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a new random order at every iteration."""

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        generator = default_generator if self.generator is None else self.generator
        return iter([self.indices[i] for i in permutation(len(self.indices), generator)])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices of ``range(len(weights))``, index ``i`` drawn with probability
    proportional to ``weights[i]``: with replacement by inverting the weights' running sum at uniform
    draws, without it by the largest keys ``u ** (1 / w)`` (each draw weighted as the next pick of a
    draw without replacement would be)."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Generator | None = None) -> None:
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        values = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, dtype=np.float64)
        if values.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(values.shape)}")
        self.weights, self.num_samples, self.replacement, self.generator = values, num_samples, replacement, generator

    def __iter__(self) -> Iterator[int]:
        generator = default_generator if self.generator is None else self.generator
        weights, count = self.weights, self.num_samples
        if (weights < 0).any() or not np.isfinite(weights).all():
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if weights.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not self.replacement and count > len(weights):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        if not self.replacement and count > np.count_nonzero(weights):
            raise RuntimeError("invalid multinomial distribution (with replacement=False, not enough non-negative "
                               f"category to sample): {count} samples asked of {np.count_nonzero(weights)} nonzero "
                               "weights")
        draws = sampling.sample(generator.take(count if self.replacement else len(weights)),
                                (count if self.replacement else len(weights),), np.float64, "uniform")
        if self.replacement:
            running = np.cumsum(weights)
            picked = np.minimum(np.searchsorted(running, draws * running[-1], side="right"), len(weights) - 1)
        else:
            with np.errstate(divide="ignore"):
                keys = np.where(weights > 0, np.log(draws) / weights, -np.inf)
            picked = np.argsort(-keys, kind="stable")[:count]
        return iter(picked.tolist())

    def __len__(self) -> int:
        return self.num_samples


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


__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "permutation"]
