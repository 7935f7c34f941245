"""The backend a compiled function lowers its graphs with, one per device.

On the CPU, by default, ``jitgrad.backends.llvm_cpu`` (LLVM IR written directly, compiled with
llvmlite in a tenth of numba's time) for each graph it covers, and ``jitgrad.backends.numba_cpu`` for
any other (the op that sent it there is said with ``JITGRAD_LOG=backend``); either alone with
``JITGRAD_COMPILE_BACKEND=llvm_cpu`` or ``numba_cpu``. Without numba, ``INTERPRETER``, which runs the
graph's generated Python (``GraphModule.code``, what ``fx.Interpreter`` computes) on the eager ops
behind the same interface, so that everything above the backend (tracing, guards, the backward node,
write-back, the caches) behaves the same with either.

The contract: ``lower(graph, fastmath=..., parallel=...)`` returns a callable taking one array per
placeholder (in ``graph.placeholders`` order) and returning the output values flattened depth-first,
each in memory of its own that nothing else holds (the caller makes them ``.grad``s and writes into
them without a copy; numba_cpu hands out again only an output nobody kept); ``.source`` is the code
it runs. Graphs handed to a backend here always return a flat tuple of nodes.
For CUDA, ``jitgrad.backends.numba_cuda`` under the same contract, on device arrays: its callable
returns device arrays, and also has ``.launches`` (the kernels of its last call with their grid and
block) for ``explain``. It has no interpreter to fall back to: the eager ops are what runs a CUDA
function that cannot be compiled.
"""
from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable

from .packages import installed_version
from .placement import device_kind

if TYPE_CHECKING:
    from ..fx.graph import Graph
    from .interpreted_graph import InterpretedGraph


class LoweringError(RuntimeError):
    """An op (or a use of one) the backend has no lowering for."""


def _no_version() -> str:
    return "0"


class Backend:
    """A backend as ``jitgrad.compile`` uses it: ``lower`` and the errors that mean "no lowering";
    ``structural_key`` says whether a graph equal up to sizes was lowered before; ``version_of`` is read
    when asked (package metadata costs ~50 ms to import); ``warm_state`` and ``from_warm_state`` are the
    backend's half of the warm-start index (``warm_index.py``; None: never indexed); ``pipeline`` names
    the pass pipeline its graphs go through (``jitgrad.fx.passes.PIPELINES``: "loops" rolls loops, for a
    backend that lowers them): named, not held, so that picking a backend imports no pass. A plain class
    (as ``compiled_function.py`` says why): a warm process makes one before its first result."""

    def __init__(self, name: str, lower: Callable[..., Any], lowering_errors: tuple[type[BaseException], ...],
                 structural_key: Callable[[Graph], Any] | None, version_of: Callable[[], str] = _no_version,
                 warm_state: Callable[..., Any] | None = None, from_warm_state: Callable[..., Any] | None = None,
                 pipeline: str = "default") -> None:
        self.name, self.lower, self.lowering_errors, self.structural_key = name, lower, lowering_errors, structural_key
        self.version_of, self.warm_state, self.from_warm_state = version_of, warm_state, from_warm_state
        self.pipeline = pipeline

    @property
    def version(self) -> str:
        return self.version_of()


def interpret(graph: Graph, *, fastmath: bool = False, parallel: bool | None = None,
              cache: Any = None) -> InterpretedGraph:
    """The interpreter compiles nothing, so it has nothing for the disk cache (``cache`` is unused).
    ``InterpretedGraph`` (``interpreted_graph.py``) needs ``jitgrad.fx``: imported with the first graph."""
    from .interpreted_graph import InterpretedGraph
    return InterpretedGraph.from_graph(graph)


INTERPRETER = Backend("interpreter", interpret, (LoweringError,), None)


def _numba_module() -> ModuleType | None:
    try:
        return importlib.import_module("jitgrad.backends.numba_cpu")
    except ImportError:
        return None


def _llvm_module() -> ModuleType | None:
    try:
        return importlib.import_module("jitgrad.backends.llvm_cpu")
    except ImportError:
        return None


def _log_backend(line: str) -> None:
    if "backend" in os.environ.get("JITGRAD_LOG", "").split(","):
        print(f"jitgrad.compile: {line}", file=sys.stderr)


def llvm_then_numba(llvm: ModuleType, numba: ModuleType) -> Callable[..., Any]:
    """The default CPU lowering: the LLVM generator where it covers the graph, numba otherwise. A
    failure of the generator itself (LLVM refusing its IR) also goes to numba: a slower first call,
    never a wrong or missing result; the log says which."""
    def lower(graph: Graph, *, fastmath: bool = False, parallel: bool | None = None, cache: Any = None) -> Any:
        try:
            return llvm.lower(graph, fastmath=fastmath, parallel=parallel, cache=cache)
        except llvm.NotCovered as why:
            _log_backend(f"llvm_cpu does not cover {why}; numba_cpu compiles the graph")
        except Exception as error:  # noqa: BLE001 - any failure of the generator: numba compiles instead
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            _log_backend(f"llvm_cpu failed ({type(error).__name__}: {first}); numba_cpu compiles the graph")
        return numba.lower(graph, fastmath=fastmath, parallel=parallel, cache=cache)
    return lower


def warm_states_of_either(llvm: ModuleType, numba: ModuleType) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The warm-start index's two functions for the default CPU lowering: a kernel is described, and
    rebuilt from its description, by the backend that made it (an LLVM kernel's description says so)."""
    def warm_state(compiled: Any) -> Any:
        if isinstance(compiled, llvm.CompiledGraph):
            return llvm.warm_state(compiled)
        return numba.warm_state(compiled)

    def from_warm_state(state: dict[str, Any], constants: list, cache: Any) -> Any:
        module = llvm if state.get("backend") == "llvm_cpu" else numba
        return module.from_warm_state(state, constants, cache)
    return warm_state, from_warm_state


def _cuda_module() -> ModuleType:
    """The CUDA backend; it imports numba.cuda, so only a function that runs on CUDA loads it."""
    try:
        return importlib.import_module("jitgrad.backends.numba_cuda")
    except ImportError as error:
        raise ImportError(f"jitgrad.compile on CUDA needs numba-cuda ({error}): pip install 'jitgrad[cuda]'") from None


def cuda_backend() -> Backend:
    module = _cuda_module()
    errors = (getattr(module, "LoweringError", LoweringError), LoweringError)
    return Backend("numba_cuda", module.lower, errors, getattr(module, "structural_key", None),
                   lambda: f"numba-cuda {installed_version('numba-cuda')}")


def get_backend(device: str = "cpu") -> Backend:
    """On the CPU the LLVM generator, falling back to numba graph by graph, when both are there;
    numba alone without llvm_cpu; else the interpreter (same results, no speed-up).
    ``JITGRAD_COMPILE_BACKEND`` picks one: ``interpreter`` (to tell a backend problem from a tracing
    one, and for tests of what lies above the backend), ``numba_cpu`` (numba's kernels, as tests of
    them need) or ``llvm_cpu`` (the generator alone: a graph it does not cover runs eagerly).
    ``"cuda"`` (any index) is the numba_cuda backend."""
    kind = device_kind(device)
    if kind == "cuda":
        return cuda_backend()
    if kind != "cpu":
        raise ValueError(f"jitgrad.compile: device {str(device)!r} is not supported ('cpu' or 'cuda')")
    choice = os.environ.get("JITGRAD_COMPILE_BACKEND", "")
    if choice not in ("", "interpreter", "numba_cpu", "llvm_cpu"):
        raise ValueError(f"JITGRAD_COMPILE_BACKEND={choice!r}: expected 'interpreter', 'numba_cpu' or 'llvm_cpu'")
    llvm = _llvm_module() if choice in ("", "llvm_cpu") else None
    if choice == "llvm_cpu":
        if llvm is None:
            raise ImportError("JITGRAD_COMPILE_BACKEND=llvm_cpu but jitgrad.backends.llvm_cpu cannot be imported")
        return Backend("llvm_cpu", llvm.lower, (llvm.NotCovered, LoweringError), llvm.structural_key,
                       lambda: f"llvmlite {installed_version('llvmlite')}", llvm.warm_state, llvm.from_warm_state,
                       "loops")
    module = _numba_module() if choice != "interpreter" else None
    if module is None or "lower" not in getattr(module, "__all__", ()):  # not hasattr: that would import the compiler
        if choice == "numba_cpu":
            raise ImportError("JITGRAD_COMPILE_BACKEND=numba_cpu but jitgrad.backends.numba_cpu has no lower()")
        return INTERPRETER
    errors = (getattr(module, "LoweringError", LoweringError), LoweringError)
    def numba_version() -> str:
        return f"numba {installed_version('numba')}, BLAS {module.blas_description()}"
    if choice == "" and llvm is not None:
        return Backend("llvm_cpu+numba_cpu", llvm_then_numba(llvm, module), errors, None,
                       lambda: f"llvmlite {installed_version('llvmlite')}, {numba_version()}",
                       *warm_states_of_either(llvm, module), "loops")
    return Backend("numba_cpu", module.lower, errors, getattr(module, "structural_key", None), numba_version,
                   getattr(module, "warm_state", None), getattr(module, "from_warm_state", None),
                   "loops" if getattr(module, "LOWERS_LOOPS", False) else "default")


__all__ = ["Backend", "INTERPRETER", "LoweringError", "cuda_backend", "get_backend", "interpret", "llvm_then_numba",
           "warm_states_of_either"]
