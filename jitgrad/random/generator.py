"""jitgrad's generator: where random draws come from, seeded with ``manual_seed`` for reproducible runs.

Its state is two integers, PyTorch's "philox seed and offset": the seed, and the offset, the number of
Philox blocks drawn since seeding (``philox.py``; element ``i`` of a draw is block ``offset + i``).
``take(count)`` is how numbers leave it: it returns the state a draw of ``count`` elements starts at,
as an int64 array ``[seed, offset]``, and moves the offset past them. A random op receives that state
as a tensor input (``jitgrad.ops.sampling``), not as hidden state, which is what lets a compiled
function take its state from the generator afresh at every call and draw exactly what eager would
(docs/compile.md, "Random numbers").
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ..tensor import Tensor

_SEED_MODULUS = 2 ** 64


def _entropy() -> int:
    """64 bits from the operating system (what ``secrets.randbits`` reads, without importing ``secrets``,
    whose ``hmac`` and ``hashlib`` cost every ``import jitgrad`` 3 ms)."""
    return int.from_bytes(os.urandom(8), "little")


def _as_int64(value: int) -> np.int64:
    """``value`` modulo 2**64, as the int64 with the same bits (a state tensor is int64, as PyTorch's)."""
    return np.array([value % _SEED_MODULUS], dtype=np.uint64).view(np.int64)[0]


class Generator:
    """A Philox generator's ``(seed, offset)``; ``jitgrad.random.default_generator`` is the one the
    factories (``rand``, ``randn``...) draw from."""

    def __init__(self, seed: int | None = None) -> None:
        self.manual_seed(_entropy() if seed is None else seed)

    def manual_seed(self, seed: int) -> "Generator":
        """Starts the stream of ``seed`` (taken modulo 2**64) from its beginning."""
        self._seed = int(seed) % _SEED_MODULUS
        self._offset = 0
        return self

    def seed(self) -> int:
        """Seeds from the operating system's entropy; returns the new seed."""
        self.manual_seed(_entropy())
        return self._seed

    def initial_seed(self) -> int:
        return self._seed

    @property
    def offset(self) -> int:
        """Philox blocks drawn since seeding: one per element drawn."""
        return self._offset

    def take(self, count: int) -> np.ndarray:
        """The state ``[seed, offset]`` (int64) of a draw of ``count`` elements; the offset moves past them."""
        if count < 0:
            raise ValueError(f"cannot draw {count} elements")
        state = np.array([_as_int64(self._seed), self._offset], dtype=np.int64)
        self._offset += int(count)
        return state

    def peek(self) -> np.ndarray:
        """The state the next draw would start at, without drawing."""
        return self.take(0)

    def get_state(self) -> Tensor:
        """The state as an int64 tensor ``[seed, offset]``, the seed as its 64 bits (what ``set_state``
        takes back)."""
        return Tensor._make(self.peek())

    def set_state(self, state: Any) -> "Generator":
        """Puts the generator at ``state``: a tensor or array ``[seed, offset]``, as ``get_state`` gives."""
        values = np.asarray(getattr(state, "_data", state)).reshape(-1)
        if values.shape != (2,) or values.dtype.kind not in "iu":
            raise ValueError(f"a generator state is 2 integers [seed, offset], got {values.dtype}{list(values.shape)}")
        seed, offset = values.astype(np.int64).view(np.uint64)
        self._seed, self._offset = int(seed), int(offset)
        return self

    @contextmanager
    def replaying(self, state: np.ndarray) -> Iterator["Generator"]:
        """Runs the block with the generator at ``state`` (an earlier ``take``'s), then puts it back
        where it was: an eager re-run of a call (``create_graph``, ``check=True``) draws the call's
        numbers again without drawing anything for good."""
        previous = self._seed, self._offset
        self.set_state(state)
        try:
            yield self
        finally:
            self._seed, self._offset = previous

    def __repr__(self) -> str:
        return f"<jitgrad.random.Generator seed={self._seed} offset={self._offset}>"


@dataclass(frozen=True, eq=False)
class Draw:
    """What a factory tells a tracer about a state tensor it made (``ops.registry.note_created``):
    ``state`` came from ``generator.take(count)``. ``jitgrad.compile`` turns it into the call's own
    state plus the draws before it in the call, instead of a constant of the graph."""

    generator: Generator
    state: np.ndarray
    count: int


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seeds the generator behind ``rand``/``randn``/``dropout``...; returns it."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state, an int64 tensor ``[seed, offset]``."""
    return default_generator.get_state()


def set_rng_state(state: Any) -> None:
    default_generator.set_state(state)


__all__ = ["Draw", "Generator", "default_generator", "get_rng_state", "initial_seed", "manual_seed", "seed",
           "set_rng_state"]
