"""Writing into a tensor at indices: ``index_add``, ``index_copy``, ``index_fill``, ``scatter``,
``scatter_reduce`` and their in-place forms; and the random in-place fills ``bernoulli_``,
``exponential_`` and ``random_``, drawn from jitgrad's generator like ``uniform_`` (docs/random.md).

All are composites: ``scatter_add`` (an op whose index is an input, read by kernels at run time) places
values and counts how many land at each position, ``where`` keeps the input where none did; ``prod``,
``amax`` and ``amin`` reduce a one-hot spread of the values (each value compared with every target
position), so the gradients are the reductions' (the maximum's shared evenly among equal values, as
PyTorch's). Indices are never read on the host, so these trace and compile, except that a repeated
index in ``index_copy``/``scatter`` is refused eagerly (PyTorch leaves which value wins unspecified)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..random import Generator
from ..shapes import wrap_dim
from ..tensor import Tensor
from . import arithmetic, gathering, inplace, reductions, sampling, shape
from .arithmetic import where
from .combining import constant
from .comparisons import scalar_type
from .host_reads import host_values
from .public import declare_public, public
from .registry import observed

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _counts(input: Tensor, dim: int, index: Tensor, dtype: Any) -> Tensor:
    """How many indices name each position of ``input`` along ``dim`` (a tensor of ``input``'s shape)."""
    zeros = constant(np.zeros(input.shape, dtype), input)
    ones = constant(np.ones(index.shape, dtype), input)
    return gathering.scatter_add(zeros, dim, index, ones)


def _spread(op: str, input: Tensor, dim: int, index: Tensor) -> Tensor:
    """A 1-d ``index`` of positions along ``dim`` expanded to the source's shape, for ``scatter_add``."""
    if index._data.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    if index._data.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")
    return index.reshape(tuple(-1 if d == dim else 1 for d in range(input._data.ndim)))


def _check_source(op: str, input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    if input._data.dtype != source._data.dtype:
        raise RuntimeError(f"{op}(): self ({scalar_type(input)}) and source ({scalar_type(source)}) must have the "
                           "same scalar type")
    count = index._data.reshape(-1).shape[0]
    if source._data.ndim != input._data.ndim or any(
            s != i for d, (s, i) in enumerate(zip(source.shape, input.shape)) if d != dim):
        raise RuntimeError(f"{op}(): source {list(source.shape)} must have the shape of self {list(input.shape)} "
                           f"outside dim {dim}")
    if source.shape[dim] != count:
        raise RuntimeError(f"{op}(): Number of indices ({count}) should be equal to source.size(dim) "
                           f"({source.shape[dim]})")
    return _spread(op, input, dim, index).expand(source.shape)


def _refuse_repeats(op: str, index: Tensor, dim: int) -> None:
    """A repeated index along ``dim`` (eagerly; a trace cannot read the index)."""
    if observed():
        return
    values = np.sort(host_values(index), axis=dim if index._data.ndim else None)
    if values.size and np.any(np.diff(values, axis=dim if values.ndim else 0) == 0):
        raise RuntimeError(f"{op}(): an index repeats along dim {dim}: PyTorch leaves which value is written "
                           "there unspecified; use scatter_reduce or index_add to combine them")


def _as_0d_safe(input: Tensor) -> tuple[Tensor, bool]:
    return (input.reshape(1), True) if input._data.ndim == 0 else (input, False)


@public("function", "method")
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: float = 1) -> Tensor:
    """``input`` with ``alpha * source[..., j, ...]`` added at position ``index[j]`` along ``dim``
    (repeated indices add up)."""
    input, flat = _as_0d_safe(input)
    source = source.reshape(1) if source._data.ndim == 0 else source
    dim = wrap_dim(dim, input._data.ndim, "index_add")
    spread = _check_source("index_add", input, dim, index, source)
    out = gathering.scatter_add(input, dim, spread, source if alpha == 1 else source * alpha)
    return out.reshape(()) if flat else out


@public("function", "method")
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """``input`` with the slice ``index[j]`` along ``dim`` replaced by ``source``'s slice ``j``."""
    input, flat = _as_0d_safe(input)
    source = source.reshape(1) if source._data.ndim == 0 else source
    dim = wrap_dim(dim, input._data.ndim, "index_copy")
    spread = _check_source("index_copy", input, dim, index, source)
    _refuse_repeats("index_copy", index.reshape(-1), 0)
    out = _placed(input, dim, spread, source)
    return out.reshape(()) if flat else out


def _placed(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """``src`` written at ``index`` along ``dim``, ``input`` elsewhere (each position named once)."""
    covered = _counts(input, dim, index, np.float32) > 0
    zeros = constant(np.zeros(input.shape, input._data.dtype), input)
    return where(covered, gathering.scatter_add(zeros, dim, index, src), input)


@public("function", "method")
def index_fill(input: Tensor, dim: int, index: Tensor, value: float | Tensor) -> Tensor:
    """``input`` with the slices ``index`` along ``dim`` set to ``value`` (a number or a 0-d tensor,
    which then gets their gradients' sum)."""
    input, flat = _as_0d_safe(input)
    dim = wrap_dim(dim, input._data.ndim, "index_fill")
    if isinstance(value, Tensor) and value._data.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value._data.ndim} dimension(s).")
    length = input.shape[dim]
    line = constant(np.zeros((length,), np.float32), input)
    hits = gathering.scatter_add(line, 0, index.reshape(-1), constant(np.ones((index._data.size,), np.float32), input))
    mask = (hits > 0).reshape(tuple(-1 if d == dim else 1 for d in range(input._data.ndim)))
    out = arithmetic.masked_fill(input, mask.expand(input.shape), value)
    return out.reshape(()) if flat else out


@public("function", "method")
def scatter(input: Tensor, dim: int, index: Tensor, src: Tensor | float | None = None, *,
            value: float | None = None, reduce: str | None = None) -> Tensor:
    """``input`` with ``src[i][j]`` (or ``value``) written at ``[index[i][j]][j]`` (``dim`` 0, and likewise
    for the others); ``reduce="add"``/``"multiply"`` combine with what is there, as PyTorch's."""
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter(): expected a src tensor or a value")
    dim = wrap_dim(dim, input._data.ndim, "scatter") if input._data.ndim else 0
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
        if not isinstance(src, Tensor):
            src = where(index == index, src, src).to(input.dtype)   # the number at the index's shape
        return scatter_reduce(input, dim, index, src, "sum" if reduce == "add" else "prod")
    _refuse_repeats("scatter", index, dim)
    covered = _counts(input, dim, index, np.float32) > 0
    if not isinstance(src, Tensor):
        return arithmetic.masked_fill(input, covered, src)
    if input._data.dtype != src._data.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    zeros = constant(np.zeros(input.shape, input._data.dtype), input)
    return where(covered, gathering.scatter_add(zeros, dim, index, src), input)


def _one_hot_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, include_self: bool) -> Tensor:
    """``prod``/``amax``/``amin`` of the values landing at each position: every value compared with every
    target position along ``dim`` (a new axis after it), the others replaced by the reduction's
    identity, then reduced over the values' axis, with ``input`` as one more value when it counts."""
    for d, (i, s) in enumerate(zip(index.shape, input.shape)):
        if d != dim and i != s:
            raise RuntimeError(f"scatter_reduce(): reduce='{reduce}' needs index {list(index.shape)} of self's shape "
                               f"{list(input.shape)} outside dim {dim} (jitgrad does not cover a smaller index yet)")
    ndim, targets = input._data.ndim, input.shape[dim]
    positions = constant(np.arange(targets).reshape((1,) * dim + (targets,) + (1,) * (ndim - dim)), input)
    hit = index.unsqueeze(dim) == positions
    dtype = input._data.dtype
    if reduce == "prod":
        identity = 1
    elif dtype.kind == "f":
        identity = -np.inf if reduce == "amax" else np.inf
    else:
        info = np.iinfo(dtype) if dtype.kind in "iu" else None
        identity = (info.min if reduce == "amax" else info.max) if info else reduce == "amin"
    values = where(hit, src.unsqueeze(dim), identity)
    if include_self:
        values = shape.cat([input.unsqueeze(dim + 1), values], dim + 1)
    if reduce == "prod":
        return reductions.prod(values, dim + 1)
    return (reductions.amax if reduce == "amax" else reductions.amin)(values, dim + 1)


@public("function", "method")
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """``input`` with the values of ``src`` landing at each position (``[index[i][j]][j]`` for ``dim``
    0) combined by ``reduce`` (``"sum"``, ``"prod"``, ``"mean"``, ``"amax"``, ``"amin"``), with the
    input's own value among them when ``include_self``; positions no index names keep the input's.
    An integer ``mean`` rounds down, as PyTorch's."""
    if reduce not in REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if input._data.dtype != src._data.dtype:
        raise RuntimeError("scatter_reduce(): Expected self.dtype to be equal to src.dtype")
    input, flat = _as_0d_safe(input)
    index = index.reshape(1) if index._data.ndim == 0 else index
    src = src.reshape(1) if src._data.ndim == 0 else src
    dim = wrap_dim(dim, input._data.ndim, "scatter_reduce")
    if tuple(src.shape) != tuple(index.shape):
        src = src[tuple(slice(0, n) for n in index.shape)]
    floating = input._data.dtype.kind == "f"
    counts = _counts(input, dim, index, input._data.dtype if floating else np.int64)
    covered = counts > 0
    if reduce in ("sum", "mean"):
        base = input if include_self else where(covered, 0, input)
        total = gathering.scatter_add(base, dim, index, src)
        if reduce == "sum":
            out = total
        else:
            number = counts + 1 if include_self else where(covered, counts, 1)
            out = where(covered, total / number if floating else arithmetic.floor_divide(total, number), input)
    else:
        out = where(covered, _one_hot_reduce(input, dim, index, src, reduce, include_self), input)
    if out._data.dtype != input._data.dtype:   # an int32 prod or mean computed in int64: the input's dtype, as PyTorch
        out = arithmetic.to_dtype(out, input._data.dtype)
    return out.reshape(()) if flat else out


# ---- in place --------------------------------------------------------------------------------------------
for _fn in (index_add, index_copy, index_fill, scatter, scatter_reduce):
    declare_public(f"{_fn.__name__}_", inplace._written_back(_fn.__name__, _fn), ("method",))


# ---- random fills ----------------------------------------------------------------------------------------
def _uniforms(self: Tensor, generator: Generator | None) -> Tensor:
    """``rand``'s numbers for ``self``'s shape: in ``self``'s dtype for a float tensor, else float64."""
    dtype = self._data.dtype if self._data.dtype.kind == "f" else np.dtype(np.float64)
    return sampling.draw(sampling.uniform, tuple(self.shape), dtype, generator)


@public("method")
def bernoulli_(self: Tensor, p: float | Tensor = 0.5, *, generator: Generator | None = None) -> Tensor:
    """Fills ``self`` with 1 with probability ``p`` (a number, or a tensor broadcast to ``self``), else 0:
    ``rand``'s numbers below ``p``."""
    if not isinstance(p, Tensor) and not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return inplace.copy_(self, _uniforms(self, generator) < p)


@public("function", "method")
def bernoulli(input: Tensor, p: float | None = None, *, generator: Generator | None = None) -> Tensor:
    """A tensor of ``input``'s shape and dtype holding 1 with probability ``input`` (each element's own),
    or ``p`` when given, else 0; no gradient, as in PyTorch."""
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"bernoulli: expected a floating point tensor of probabilities, got {scalar_type(input)}")
    probability = input.detach() if p is None else p
    if isinstance(probability, Tensor):
        outside = arithmetic.logical_or(probability < 0, probability > 1).any()
        if not observed() and bool(outside):
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    return arithmetic.to_dtype(_uniforms(input, generator) < probability, input._data.dtype)


@public("method")
def exponential_(self: Tensor, lambd: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fills ``self`` with exponential samples of rate ``lambd``: ``-log(1 - u) / lambd`` of ``rand``'s
    numbers ``u`` (in [0, 1), so never an infinity)."""
    if self._data.dtype.kind != "f":
        raise RuntimeError(f"exponential_ not implemented for '{scalar_type(self)}'")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return inplace.copy_(self, -(-_uniforms(self, generator)).log1p() / lambd)


def _random_bound(dtype: np.dtype) -> int:
    """PyTorch's upper bound of ``random_()``: every integer the dtype holds exactly."""
    if dtype == np.bool_:
        return 2
    if dtype.kind == "f":
        return 2 ** (np.finfo(dtype).nmant + 1)
    return int(np.iinfo(dtype).max)


@public("method")
def random_(self: Tensor, from_: int = 0, to: int | None = None, *, generator: Generator | None = None) -> Tensor:
    """Fills ``self`` with integers uniform in ``[from_, to)`` (``random_(to)``: ``[0, to)``; ``random_()``:
    up to the largest integer the dtype holds exactly), ``floor(u * (to - from_)) + from_`` of float64
    ``rand`` numbers ``u``, so a range wider than 2**53 is not uniform to the last integer."""
    if to is None and from_ != 0:
        from_, to = 0, from_
    if to is None:
        to = _random_bound(self._data.dtype)
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
    u = sampling.draw(sampling.uniform, tuple(self.shape), np.float64, generator)
    return inplace.copy_(self, (u * float(to - from_)).floor() + from_)
