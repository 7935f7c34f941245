"""``jitgrad.compile``: trace a function once, run compiled graphs for its forward and backward.

See docs/compile.md. ``capture`` traces, ``guards`` decides when to trace again, ``compiled_function``
lowers and runs the graphs (and holds ``CompiledFunctionBackward``), ``cache`` keeps them on disk,
``explain`` reports on them and ``backend`` picks numba or the interpreter fallback.
"""
from .backend import LoweringError, get_backend
from .loss_program import CompiledFunctionBackward
from .decorator import (MAX_RECOMPILES, CompileCheckError, CompiledFunction, CompileError, CompileWarning,
                        compile)
from .explain import Explanation

__all__ = ["CompileCheckError", "CompileError", "CompileWarning", "CompiledFunction", "CompiledFunctionBackward",
           "Explanation", "LoweringError", "MAX_RECOMPILES", "compile", "get_backend"]
