"""The numba CUDA backend: lowers a ``jitgrad.fx.Graph`` (after the pass pipeline) to one generated Python
module: a ``@cuda.jit`` kernel per fusion group and a host function that launches them (see
``compiler.py`` for the interface and docs/backends.md for how the lowering works)."""
from .compiler import CudaProgram, clear_cache, lower, structural_key
from .errors import LoweringError

__all__ = ["CudaProgram", "LoweringError", "clear_cache", "lower", "structural_key"]
