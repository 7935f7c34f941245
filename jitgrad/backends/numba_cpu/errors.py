"""The numba CPU backend's lowering error, in a module of its own: ``jitgrad.compile`` names it when it
picks the backend, which must not import the code generator (``nodes.py`` checks graphs with it)."""
from __future__ import annotations


class LoweringError(RuntimeError):
    """An op, or a use of one, that the numba CPU backend cannot lower. Raised by ``lower()``, before any
    compiling, naming the op and the IR node."""


__all__ = ["LoweringError"]
