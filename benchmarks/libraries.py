"""The libraries compared by the eager benchmark, and how to find out which of them are importable.

jitgrad and numpy are required (jitgrad is what is measured, numpy is the hand-written reference);
PyTorch, JAX and HIPS autograd are optional, so a machine without them still gets a partial table
instead of a crash.
"""
from __future__ import annotations

import importlib
import importlib.metadata
from dataclasses import dataclass


@dataclass(frozen=True)
class Library:
    """One column of the comparison: ``key`` names it in code and on the command line, ``label`` in tables."""

    key: str
    label: str
    module: str      # imported to decide availability
    dist: str        # distribution name, for the version string


LIBRARIES = (
    Library("jitgrad", "jitgrad eager", "jitgrad", "jitgrad"),
    Library("torch", "PyTorch eager", "torch", "torch"),
    Library("jax", "JAX jit(value_and_grad)", "jax", "jax"),
    Library("autograd", "HIPS autograd", "autograd", "autograd"),
    Library("numpy", "numpy, hand-written", "numpy", "numpy"),
)
# The compiled benchmark's extra columns (benchmarks/compiled.py).
COMPILED_LIBRARIES = (
    Library("jitgrad_compiled", "jitgrad @compile (step)", "jitgrad", "jitgrad"),
    Library("jitgrad_loss", "jitgrad @compile (loss)", "jitgrad", "jitgrad"),
    Library("jitgrad_closure", "jitgrad @compile (closure)", "jitgrad", "jitgrad"),
    Library("torch_compile", "torch.compile (loss)", "torch", "torch"),
    Library("numba", "numba, hand-fused", "numba", "numba"),
)
# The columns of ``--device cuda`` (benchmarks/cuda_workloads.py); numpy stays, on the CPU, as the reference.
CUDA_LIBRARIES = (
    Library("jitgrad_cuda_eager", "jitgrad eager on CUDA", "jitgrad", "jitgrad"),
    Library("jitgrad_cuda", "jitgrad @compile on CUDA (step)", "jitgrad", "jitgrad"),
    Library("torch_cuda", "PyTorch CUDA eager", "torch", "torch"),
    Library("torch_compile_cuda", "torch.compile on CUDA (loss)", "torch", "torch"),
)
# The workload suite's reference (benchmarks/suite.py): PyTorch eager on float64 copies of the inputs.
SUITE_LIBRARIES = (
    Library("torch_float64", "PyTorch eager float64 (reference)", "torch", "torch"),
)
BY_KEY = {lib.key: lib for lib in LIBRARIES + COMPILED_LIBRARIES + CUDA_LIBRARIES + SUITE_LIBRARIES}


def label(key: str) -> str:
    return BY_KEY[key].label


def version(lib: Library) -> str:
    """The installed version, or ``?`` when the package has no metadata (e.g. run from a source tree)."""
    try:
        return importlib.metadata.version(lib.dist)
    except importlib.metadata.PackageNotFoundError:
        module = importlib.import_module(lib.module)
        return getattr(module, "__version__", "?")


def _import_torch_before_jax() -> None:
    """Import torch, when installed, before JAX is imported, in every process that times JAX.

    JAX's dispatch of small compiled graphs was reported about 4x faster on this project's machines
    when torch was loaded first (W1: about 25 µs against 87-125 µs), so JAX is measured in the state
    that favours it. The main process already loads torch first (``LIBRARIES`` lists it before JAX);
    this makes the first-call child processes, which load only JAX, do the same. On the 2-core VM of
    2026-11-24 it made little difference (W1 85-103 µs with torch first, 100-115 µs without).
    """
    try:
        importlib.import_module("torch")
    except Exception:  # torch is optional; JAX is timed without it
        pass


def probe(candidates: tuple[Library, ...] = LIBRARIES) -> tuple[list[str], dict[str, str]]:
    """Import every library once. Returns the keys that imported, in table order, and for the others
    the reason they are skipped (the import error), so the report can say why a column is missing."""
    available, skipped = [], {}
    if any(lib.module == "jax" for lib in candidates):
        _import_torch_before_jax()
    for lib in candidates:
        try:
            importlib.import_module(lib.module)
        except Exception as exc:  # an optional library may fail in more ways than ImportError
            skipped[lib.key] = f"{type(exc).__name__}: {exc}"
        else:
            available.append(lib.key)
    if "jax" in available:
        # float64 workloads must really run in float64 under JAX; float32 arrays stay float32 with this on.
        import jax
        jax.config.update("jax_enable_x64", True)
    return available, skipped
