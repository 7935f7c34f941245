"""``jitgrad.compile``: trace a function once, run compiled graphs for its forward and backward.

See docs/compile.md. ``capture`` traces (reading free variables through ``free_variables`` and
``sources``, flattening containers with ``pytree``, undoing ``side_effects``), ``guards`` decides when
to trace again, ``lowering`` takes a graph through the passes and the backend, ``compiled_function``
runs a whole step (``result_template`` rebuilding its value), ``loss_program`` builds and runs a loss
and holds ``CompiledFunctionBackward``, ``cache`` keeps lowered graphs on disk and ``warm_index`` whole
programs, ``explain`` reports on them and ``backend`` picks the LLVM generator, numba or the
interpreter fallback. The tracing half (``capture``, ``lowering``, ``loss_program``, ``templates``, and
``jitgrad.fx`` under them) is imported at the first trace; its two public names here on first use.
"""
from __future__ import annotations

from typing import Any

from .arguments import InvalidBackend, compile
from .backend import LoweringError, get_backend
from .decorator import MAX_RECOMPILES, CompileCheckError, CompiledFunction, CompileError, CompileWarning
from .explain import Explanation

# Names of the tracing half, imported on first use: a warm process never traces (decorator.py's docstring).
_TRACING_NAMES = {"EagerThisCall": "capture", "CompiledFunctionBackward": "loss_program"}


def __getattr__(name: str) -> Any:
    if name in _TRACING_NAMES:
        import importlib
        return getattr(importlib.import_module(f".{_TRACING_NAMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CompileCheckError", "CompileError", "CompileWarning", "CompiledFunction", "CompiledFunctionBackward",
           "EagerThisCall", "Explanation", "InvalidBackend", "LoweringError", "MAX_RECOMPILES", "compile",
           "get_backend"]
