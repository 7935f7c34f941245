"""Shape and dtype rules: an op's output metadata computed from its inputs' metadata and attributes.

Graph mode needs every value's shape and dtype without running anything (``jitgrad.fx`` gives each node
the metadata its op's rule computes from the nodes it reads; passes that insert nodes do the same),
so each registry entry carries a rule (``meta=`` in ``defop``): a function of the op's inputs, in
order, and its attributes, returning the output's ``TensorMeta`` (a tuple of them for an op with
several outputs). An input is a ``TensorMeta`` for a tensor, a list of them for a variadic op's
sequence, and itself for a plain value (a Python number, None).

Most ops share a few generic rules, built here from a dtype rule: ``elementwise`` (the broadcast of
the inputs' shapes) and ``reduction`` (``dim`` folded, or kept as size 1 with ``keepdim``), with the
dtype rules ``promoted`` (PyTorch's promotion, ``jitgrad.dtypes``), ``floating`` (promoted, and the
default float for integers and bools), ``boolean``, ``unchanged`` (the first input's), ``accumulated``
(a sum's or product's: integers and bools widen to int64) and ``indices`` (int64). An op whose output
these do not describe (views, ``matmul``, ``cat``, ``getitem``...) writes its rule next to its entry.
``tests/fx/test_meta_rules.py`` checks every rule against what the forward returns, on every op sample.
"""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from .. import dtypes
from ..shapes import broadcast_shapes


class TensorMeta(NamedTuple):
    """What a rule knows of a tensor: its shape and dtype."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)


_SCALAR_TYPES = {"float16": "Half", "float32": "Float", "float64": "Double", "int8": "Char", "int16": "Short",
                 "int32": "Int", "int64": "Long", "uint8": "Byte", "bool": "Bool"}


def scalar_type_name(dtype: np.dtype) -> str:
    """PyTorch's name of a dtype in its error messages (``Float``, ``Long``...)."""
    return _SCALAR_TYPES.get(np.dtype(dtype).name, np.dtype(dtype).name)


MetaRule = Callable[..., "TensorMeta | tuple[TensorMeta, ...]"]
DtypeRule = Callable[..., np.dtype]


def meta_of(value: Any) -> Any:
    """A rule's view of an argument: a ``TensorMeta`` for a tensor or an array, a list of them for a
    sequence of tensors, anything else as it is."""
    data = getattr(value, "_data", value)
    if isinstance(data, np.ndarray):
        return TensorMeta(tuple(data.shape), data.dtype)
    if isinstance(value, (list, tuple)) and value and all(hasattr(v, "_data") for v in value):
        return [meta_of(v) for v in value]
    return value


def _tensors(operands: Sequence[Any]) -> list[TensorMeta]:
    return [o for o in operands if isinstance(o, TensorMeta)]


# ---- dtype rules --------------------------------------------------------------------------------------
def promoted(*operands: Any) -> np.dtype:
    """PyTorch's promotion over tensors and Python numbers (``jitgrad.dtypes.result_type``)."""
    tensors = _tensors(operands)
    scalars = [o for o in operands if not isinstance(o, TensorMeta) and o is not None]
    if not scalars and all(t.dtype == tensors[0].dtype for t in tensors):
        return tensors[0].dtype  # the common case, without the promotion table
    return dtypes.promote([t.dtype for t in tensors if t.ndim], [t.dtype for t in tensors if not t.ndim], scalars)


def floating(*operands: Any) -> np.dtype:
    """Promoted, and the default float dtype where that is an integer or a bool (``log`` of an int)."""
    dtype = promoted(*operands)
    return dtype if dtype.kind == "f" else dtypes.get_default_dtype().numpy


def boolean(*operands: Any) -> np.dtype:
    return np.dtype(np.bool_)


def unchanged(*operands: Any) -> np.dtype:
    """The first tensor input's dtype."""
    return _tensors(operands)[0].dtype


def accumulated(*operands: Any) -> np.dtype:
    """A sum's or a product's dtype, PyTorch's: bools and integers, unsigned ones too, widen to int64
    (numpy's uint64 for uint8 is no dtype of jitgrad's), floats stay."""
    dtype = _tensors(operands)[0].dtype
    return np.dtype(np.int64) if dtype.kind in "biu" else dtype


def indices(*operands: Any) -> np.dtype:
    return np.dtype(np.int64)


# ---- shape rules, generic ---------------------------------------------------------------------------
def elementwise(dtype_rule: DtypeRule) -> MetaRule:
    """An op computing each output element from the inputs' elements at the same broadcast index."""
    def rule(*operands: Any, **attrs: Any) -> TensorMeta:
        shapes = [t.shape for t in _tensors(operands)]  # none (Python numbers alone): broadcast to 0-d
        shape = shapes[0] if shapes and all(s == shapes[0] for s in shapes) else broadcast_shapes("", shapes)
        return TensorMeta(shape, np.dtype(dtype_rule(*operands)))
    return rule


def reduced_shape(shape: tuple[int, ...], dim: int | Sequence[int] | None, keepdim: bool) -> tuple[int, ...]:
    """``shape`` with ``dim`` (an int, a tuple, or None for all) folded: dropped, or size 1 with
    ``keepdim``. An empty tuple folds nothing (a 0-d input's dim)."""
    folded = range(len(shape)) if dim is None else {dim} if isinstance(dim, int) else set(dim)
    if keepdim:
        return tuple(1 if i in folded else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in folded)


def reduction(dtype_rule: DtypeRule) -> MetaRule:
    """An op folding ``dim`` of its input (``keepdim`` keeps the folded dimensions as size 1)."""
    def rule(self: TensorMeta, dim: Any = None, keepdim: bool = False, **attrs: Any) -> TensorMeta:
        return TensorMeta(reduced_shape(self.shape, dim, keepdim), np.dtype(dtype_rule(self)))
    return rule


def like(position: int = 0) -> MetaRule:
    """The output has the metadata of input ``position`` (``fill``, ``copy``, ``index_put``...)."""
    def rule(*operands: Any, **attrs: Any) -> TensorMeta:
        return operands[position]
    return rule


def given(shape: str = "shape", dtype: str | int = 0) -> MetaRule:
    """The shape is the attribute ``shape``; the dtype the attribute named ``dtype``, or that of the
    input at position ``dtype`` (``index_scatter``, ``uniform``...)."""
    def rule(*operands: Any, **attrs: Any) -> TensorMeta:
        out = attrs[dtype] if isinstance(dtype, str) else operands[dtype].dtype
        return TensorMeta(tuple(attrs[shape]), np.dtype(out))
    return rule


def reshaped(size: int, shape: Sequence[int]) -> tuple[int, ...]:
    """``shape`` with its -1 (if any) resolved for ``size`` elements, as numpy's reshape does."""
    shape = tuple(int(s) for s in shape)
    if -1 not in shape:
        return shape
    known = math.prod(s for s in shape if s != -1)
    return tuple(size // known if s == -1 else s for s in shape)


__all__ = ["DtypeRule", "MetaRule", "TensorMeta", "accumulated", "boolean", "elementwise", "floating", "given",
           "indices", "like", "meta_of", "promoted", "reduced_shape", "reduction", "reshaped", "unchanged"]
