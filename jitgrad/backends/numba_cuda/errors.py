"""The CUDA backend's lowering error."""
from __future__ import annotations


class LoweringError(RuntimeError):
    """An op, or a use of one, the CUDA backend cannot lower; raised by ``lower()`` before any kernel
    runs, naming the op and the IR node (never a numba traceback)."""


__all__ = ["LoweringError"]
