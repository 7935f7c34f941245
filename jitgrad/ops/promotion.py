"""PyTorch's questions about dtype promotion: ``result_type`` (of operands, tensors or numbers),
``promote_types`` (of two dtypes) and ``can_cast`` (its casting rule: never down a category, float to
integer or integer to bool), answered by ``jitgrad.dtypes``' one promotion."""
from __future__ import annotations

from typing import Any

from .. import dtypes
from ..tensor import Tensor
from .public import public


@public("function")
def result_type(tensor: Tensor | Any, other: Tensor | Any) -> dtypes.dtype:
    """The dtype an elementwise op of ``tensor`` and ``other`` computes in."""
    operands = [v._data if isinstance(v, Tensor) else v for v in (tensor, other)]
    return dtypes.from_numpy_dtype(dtypes.result_type(*operands))


@public("function")
def promote_types(type1: dtypes.dtype, type2: dtypes.dtype) -> dtypes.dtype:
    """The dtype two tensors of these dtypes promote to."""
    return dtypes.from_numpy_dtype(dtypes.promote([dtypes.as_numpy_dtype(type1), dtypes.as_numpy_dtype(type2)],
                                                  [], []))


_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


@public("function")
def can_cast(from_: dtypes.dtype, to: dtypes.dtype) -> bool:
    """Whether PyTorch's casting rule allows ``from_`` to ``to``: not to a lower category (bool <
    integer < float)."""
    return _CATEGORY[dtypes.as_numpy_dtype(from_).kind] <= _CATEGORY[dtypes.as_numpy_dtype(to).kind]
