"""Ops that read a tensor's values on the host (``nonzero``, ``unique``, ``cummax``'s indices, numpy's
LAPACK, SciPy's special functions): the reading, the result made from what was read, and the refusal
inside a traced (compiled) function, whose graph would keep the values it saw as constants."""
from __future__ import annotations

import numpy as np

from ..device import to_host
from ..tensor import Tensor
from .registry import observed


class TraceRefused(RuntimeError):
    """An op that cannot be part of a traced graph was called in a trace (``refuse_when_traced``):
    ``jitgrad.compile`` runs such a call eagerly, with a warning that names the op."""


def refuse_when_traced(op: str, reason: str = "its result is computed from values read on the host, which "
                                               "a trace would keep as constants") -> None:
    """A compiled graph has its shapes fixed when it is traced and runs only ops a backend lowers: an op
    whose result comes from values read on the host (a trace would bake them in), or that runs a library
    call no backend has, cannot be part of it."""
    if observed():
        raise TraceRefused(f"{op} cannot run inside a compiled (traced) function: {reason}; call it outside the "
                           "compiled function")


def host_values(tensor: Tensor) -> np.ndarray:
    """The tensor's values as a numpy array (a copy of a CUDA tensor's)."""
    return to_host(tensor._data)


def from_host(array: np.ndarray) -> Tensor:
    """A result computed on the host from values that were read (``nonzero``...): no gradient."""
    return Tensor._make(array if array.flags.c_contiguous else array.copy())
