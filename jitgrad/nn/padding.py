"""``pad``, as PyTorch's ``nn.functional.pad`` spells it, composed of registry ops.

Constant padding concatenates blocks of the fill value (a negative amount crops, as in PyTorch);
``reflect``, ``replicate`` and ``circular`` read each padded dimension through one integer index,
whose gradient sums back into the positions read (an edge read twice gets both gradients). So the
gradient, its higher orders and compiling come from ``cat``, slicing and indexing.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..factories import full
from ..ops.shape import cat
from ..tensor import Tensor

_MODES = ("constant", "reflect", "replicate", "circular")
# Non-constant padding: the input dimensions PyTorch takes for each number of padded dimensions.
_NON_CONSTANT_DIMS = {1: (2, 3), 2: (3, 4), 3: (4, 5)}


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """``pad`` lists (before, after) amounts from the last dimension backwards."""
    amounts = [int(p) for p in pad]
    if len(amounts) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(amounts) // 2 > input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but "
                           f"got padding length {len(amounts)} and input of dimension {input.dim()}")
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    pairs = [(input.dim() - 1 - i, amounts[2 * i], amounts[2 * i + 1]) for i in range(len(amounts) // 2)]
    if mode == "constant":
        for dim, before, after in pairs:
            input = _constant(input, dim, before, after, 0.0 if value is None else value)
        return input
    if value is not None:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if input.dim() not in _NON_CONSTANT_DIMS.get(len(pairs), ()):
        raise NotImplementedError(f"Padding size {len(amounts)} is not supported for {input.dim()}D input tensor.")
    for dim, before, after in pairs:
        input = input[(slice(None),) * dim + (_positions(input.shape, dim, before, after, mode),)]
    return input


def _constant(input: Tensor, dim: int, before: int, after: int, value: float) -> Tensor:
    size = input.shape[dim]
    start, stop = max(-before, 0), size - max(-after, 0)
    if start or stop != size:
        input = input.narrow(dim, start, max(stop - start, 0))
    parts = []
    for amount in (before, after):
        shape = list(input.shape)
        shape[dim] = max(amount, 0)
        parts.append(full(shape, value, dtype=input.dtype, device=input.device) if amount > 0 else None)
    if parts[0] is None and parts[1] is None:
        return input
    return cat([p for p in (parts[0], input, parts[1]) if p is not None], dim)


def _positions(shape: tuple[int, ...], dim: int, before: int, after: int, mode: str) -> np.ndarray:
    """The input position each output position of ``dim`` reads."""
    size = shape[dim]
    wanted = np.arange(-before, size + after)
    if mode == "replicate":
        return np.clip(wanted, 0, size - 1)
    if mode == "circular":
        # PyTorch crops first and wraps within what is left: pad (-1, 2) of [0 1 2 3 4] is [1 2 3 4 1 2].
        start = max(-before, 0)
        kept = size - start - max(-after, 0)
        if before > kept or after > kept:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        return start + (wanted - start) % kept
    if before >= size or after >= size:
        raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, but "
                           f"got: padding ({before}, {after}) at dimension {dim} of input {list(shape)}")
    period = 2 * (size - 1)
    folded = np.abs(wanted) % period if period else np.zeros_like(wanted)
    return np.where(folded < size, folded, period - folded)


__all__ = ["pad"]
