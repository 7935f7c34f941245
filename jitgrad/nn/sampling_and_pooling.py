"""``adaptive_max_pool1d``/``2d``, ``pdist``, ``gumbel_softmax`` and ``alpha_dropout``: the
functions of ``torch.nn.functional`` that pick, pair or draw, composed of registry ops.

An adaptive max pool's windows differ in length (output ``i`` of a dimension of size ``n`` takes
inputs ``floor(i n / out)`` to ``ceil((i + 1) n / out)``), so it is not ``max_pool2d``: the rows
and columns of every window are picked with ``index_select`` (each window padded to the longest by
repeating its last element, which changes no maximum), and ``max`` over the window's elements gives
the values, with ``MaxBackward0`` sending each gradient to the first maximum, as PyTorch's kernel
picks it. The draws of ``gumbel_softmax`` and ``alpha_dropout`` come from jitgrad's generator
(``rand_like``), so they follow ``manual_seed`` and, compiled, draw afresh at each call; their values
differ from PyTorch's, their laws do not.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..factories import arange, rand_like, tensor
from ..ops import gather, index_select, softmax, where
from ..ops.products import distance_norm
from ..tensor import Tensor

_SELU_ALPHA = 1.7580993408473766  # PyTorch's alpha_dropout constant: -SELU's scale * alpha


def _window_rows(size: int, out: int) -> np.ndarray:
    """(out, longest window) input positions of each adaptive window, each padded with its last."""
    starts = [(i * size) // out for i in range(out)]
    ends = [math.ceil((i + 1) * size / out) for i in range(out)]
    longest = max((e - s for s, e in zip(starts, ends)), default=1)
    return np.array([[min(s + k, e - 1) for k in range(longest)] for s, e in zip(starts, ends)], dtype=np.int64)


def _output_size(output_size: Any, sizes: tuple[int, int]) -> tuple[int, int]:
    wanted = (output_size, output_size) if output_size is None or isinstance(output_size, (int, np.integer)) \
        else tuple(output_size)
    return tuple(s if o is None else int(o) for s, o in zip(sizes, wanted))


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """The maximum of each adaptive window of an (N, C, H, W) or (C, H, W) input; with
    ``return_indices`` also each maximum's position ``h * W + w``, as ``max_pool2d`` gives it."""
    if input.dim() not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {list(input.shape)}")
    height, width = input.shape[-2:]
    out = _output_size(output_size, (height, width))
    if min(out) <= 0 or height == 0 or width == 0:
        raise RuntimeError(f"adaptive_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, "
                           f"but input has sizes {list(input.shape)} with output size {list(out)}")
    rows, cols = _window_rows(height, out[0]), _window_rows(width, out[1])
    picked = index_select(input, -2, tensor(rows.reshape(-1), device=input.device))
    picked = index_select(picked, -1, tensor(cols.reshape(-1), device=input.device))
    lead = tuple(input.shape[:-2])
    windows = picked.reshape(*lead, out[0], rows.shape[1], out[1], cols.shape[1])
    windows = windows.movedim(-3, -2).reshape(*lead, out[0], out[1], rows.shape[1] * cols.shape[1])
    values, where_in_window = windows.max(-1)
    if not return_indices:
        return values
    positions = rows[:, None, :, None] * width + cols[None, :, None, :]  # (oh, ow, kh, kw) flat positions
    table = tensor(positions.reshape(out[0], out[1], -1), device=input.device).expand(*lead, *positions.shape[:2], -1)
    return values, gather(table, -1, where_in_window.unsqueeze(-1)).squeeze(-1)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Over the last dimension of an (N, C, L) or (C, L) input."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"adaptive_max_pool1d(): Expected 2D or 3D tensor, but got: {list(input.shape)}")
    size = output_size[0] if isinstance(output_size, (tuple, list)) else output_size
    pooled = adaptive_max_pool2d(input.unsqueeze(-2), (1, size), return_indices)
    if return_indices:
        return pooled[0].squeeze(-2), pooled[1].squeeze(-2)
    return pooled.squeeze(-2)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm distances between every pair of rows ``i < j`` of an (N, M) input, in row-major
    order (``N (N - 1) / 2`` of them). The gradient is PyTorch's: 0 through a zero difference. For
    ``p >= 1`` (and 0, inf) that is ``norm``'s; for ``0 < p < 1`` ``|d|^p`` is masked where ``d`` is 0,
    whose own derivative there would be ``0 * inf`` (NaN)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    first, second = np.triu_indices(input.shape[0], k=1)
    rows = index_select(input, 0, tensor(first.astype(np.int64), device=input.device))
    others = index_select(input, 0, tensor(second.astype(np.int64), device=input.device))
    differences = rows - others
    if 0 < p < 1:
        size = differences.abs()
        zero = size == 0
        powers = where(zero, 0.0, where(zero, 1.0, size) ** p)
        return powers.sum(-1) ** (1.0 / p)
    return distance_norm(differences, float(p))


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """A sample of the Gumbel-softmax (concrete) distribution: ``softmax((logits + g) / tau)`` with
    ``g = -log(-log(u))`` for uniform ``u``. With ``hard`` the result is the one-hot of its largest
    entry in the forward pass and the soft sample's gradient in the backward pass (straight-through:
    ``y_hard - y_soft.detach() + y_soft``). ``eps`` is PyTorch's unused argument."""
    uniform = rand_like(logits).clamp(min=np.finfo(logits.dtype.numpy).tiny)  # u > 0: a finite -log(u)
    gumbels = -(-uniform.log()).log()
    soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    dim = dim % logits.dim() if logits.dim() else 0
    classes = arange(logits.shape[dim], device=logits.device).reshape((-1,) + (1,) * (logits.dim() - dim - 1))
    one_hot = (classes == soft.argmax(dim, keepdim=True)).to(soft.dtype)
    return one_hot - soft.detach() + soft


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: each element kept with probability ``1 - p``, a dropped one set to
    SELU's negative saturation, then all scaled and shifted so that a standard input keeps its mean
    and variance (PyTorch's ``a x + b`` with its constants). The identity when not ``training``."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    scale = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    keep = (rand_like(input) >= p).to(input.dtype)
    return input * (keep * scale) + ((keep - 1.0) * (_SELU_ALPHA * scale) + _SELU_ALPHA * scale * p)


__all__ = ["adaptive_max_pool1d", "adaptive_max_pool2d", "alpha_dropout", "gumbel_softmax", "pdist"]
