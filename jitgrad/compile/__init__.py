"""``jitgrad.compile``: trace a function once, run compiled graphs for its forward and backward.

See docs/compile.md. ``capture`` traces (reading free variables through ``free_variables`` and
``sources``, flattening containers with ``pytree``, undoing ``side_effects``), ``guards`` decides when
to trace again, ``compiled_function`` lowers the graphs and runs a whole step, ``loss_program`` builds and
runs a loss and holds ``CompiledFunctionBackward``, ``cache`` keeps lowered graphs on disk, ``explain``
reports on them and ``backend`` picks numba or the interpreter fallback.
"""
from .backend import LoweringError, get_backend
from .capture import EagerThisCall
from .loss_program import CompiledFunctionBackward
from .decorator import (MAX_RECOMPILES, CompileCheckError, CompiledFunction, CompileError, CompileWarning,
                        compile)
from .explain import Explanation

__all__ = ["CompileCheckError", "CompileError", "CompileWarning", "CompiledFunction", "CompiledFunctionBackward",
           "EagerThisCall", "Explanation", "LoweringError", "MAX_RECOMPILES", "compile", "get_backend"]
