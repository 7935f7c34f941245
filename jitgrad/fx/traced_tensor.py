"""``TracedTensor``: a tensor inside a trace, which carries a real value but refuses to become a
Python value (``item()``, ``bool()``, ``float()``, use as an index...), and the ``TraceError`` it
raises, naming the conversion and the line of the user's code that asked for it."""
from __future__ import annotations

import os
import traceback
from typing import Any

import numpy as np

from ..tensor import Tensor
from .user_lines import PACKAGE_DIR


class TraceError(RuntimeError):
    """The traced function needs a tensor's value as a Python value, which a static graph cannot hold."""


def conversion_error(operation: str) -> TraceError:
    """Names the conversion and the first frame of the user's code (outside the jitgrad package)."""
    frames = [f for f in traceback.extract_stack() if not os.path.abspath(f.filename).startswith(PACKAGE_DIR)]
    where = f"{frames[-1].filename}:{frames[-1].lineno}: {frames[-1].line}" if frames else "unknown line"
    return TraceError(f"{operation} on a traced tensor at {where}\nA traced tensor stands for every value "
                      "it could take, so the graph cannot depend on this one; compute with tensor ops "
                      "(e.g. jitgrad.where instead of if) or pass the value in as a non-tensor argument.")


# Borrowed tensors (``borrowing.Loan``) that had a history when lent, by id: the trace gives them none
# (its backward must not reach the caller's graph), so their ``grad_fn`` and ``is_leaf`` would answer
# for a leaf. Such a read raises: the function runs eagerly (until 2026-11-28, ``if x.grad_fn is None:``
# took the leaf's branch for a computed input, silently).
BORROWED_WITH_HISTORY: set[int] = set()


class TracedTensor(Tensor):
    """A tensor inside a trace: a real value, but one that refuses to become a Python value."""

    __slots__ = ()

    @property
    def grad_fn(self) -> Any:
        if id(self) in BORROWED_WITH_HISTORY:
            raise conversion_error("Tensor.grad_fn of a tensor computed outside the function")
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        if id(self) in BORROWED_WITH_HISTORY:
            raise conversion_error("Tensor.is_leaf of a tensor computed outside the function")
        return self._grad_fn is None

    # The layout of the trace's value (its strides, its offset, its address) is this call's, not what
    # a compiled program keys or guards (a tensor's descriptor holds its shape, not its strides): a
    # branch on it ran a transposed input through the contiguous input's program, silently, until
    # 2026-11-28. Read, the function runs eagerly.
    def stride(self, dim: int | None = None) -> Any:
        raise conversion_error("Tensor.stride()")

    def is_contiguous(self, memory_format: Any = None) -> bool:
        raise conversion_error("Tensor.is_contiguous()")

    def storage_offset(self) -> int:
        raise conversion_error("Tensor.storage_offset()")

    def data_ptr(self) -> int:
        raise conversion_error("Tensor.data_ptr()")

    def item(self) -> Any:
        raise conversion_error("Tensor.item()")

    def tolist(self) -> Any:
        raise conversion_error("Tensor.tolist()")

    def numpy(self) -> np.ndarray:
        raise conversion_error("Tensor.numpy()")

    def __bool__(self) -> bool:
        raise conversion_error("bool()")

    def __float__(self) -> float:
        raise conversion_error("float()")

    def __int__(self) -> int:
        raise conversion_error("int()")

    def __index__(self) -> int:
        raise conversion_error("Use as an index (__index__)")


_TRACED_CLASSES: dict[type, type] = {}


def traced_class(kind: type) -> type:
    """The class a caller's tensor of class ``kind`` has while lent to a trace: ``TracedTensor``, or
    for a subclass of ``Tensor`` (``nn.Parameter``) a class deriving from both, so that
    ``isinstance(w, nn.Parameter)`` answers inside the trace as it does outside (until 2026-11-28 it
    was False there, and a branch on it ran the other way than eager mode's)."""
    if kind is Tensor or issubclass(kind, TracedTensor):
        return TracedTensor
    traced = _TRACED_CLASSES.get(kind)
    if traced is None:
        traced = _TRACED_CLASSES[kind] = type(f"Traced{kind.__name__}", (TracedTensor, kind),
                                              {"__slots__": (), "__module__": __name__})
    return traced


__all__ = ["BORROWED_WITH_HISTORY", "TraceError", "TracedTensor", "conversion_error", "traced_class"]
