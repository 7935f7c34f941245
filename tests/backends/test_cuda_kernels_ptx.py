"""Every hand-written CUDA kernel of the maths intrinsics (matrix products, row kernels, losses) compiles
to PTX for sm_80 and sm_90 (``ptx_targets.ptx_of``: numba-cuda's lowering, as ``compile_ptx``, then
NVVM for each), which needs NVVM but no GPU: the check CI runs for the kernel library on machines
without one. Where the toolkit's ``ptxas`` is on ``PATH`` the PTX is also
assembled, and must not spill registers (the tiled product holds 16 accumulators per thread)."""
from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import types as pytypes

import pytest

from ptx_targets import ptx_of

INSTALL = 'numba-cuda is not installed with NVVM: pip install "numba-cuda[cu12]"'
MODULES = ("linalg", "rows", "losses", "convolution", "pooling")


def _cuda():
    """numba.cuda, when it can compile PTX here (not under the simulator, which compiles nothing)."""
    cuda = pytest.importorskip("numba.cuda", reason=INSTALL)
    from numba import config
    if config.ENABLE_CUDASIM:
        pytest.skip("NUMBA_ENABLE_CUDASIM=1: the simulator compiles no PTX")
    try:
        from numba.cuda.cudadrv import nvvm
        nvvm.NVVM()
    except Exception as error:  # NvvmSupportError, or a missing library behind it
        pytest.skip(f"{INSTALL} ({type(error).__name__})")
    return cuda


def _entries() -> list:
    try:
        return [(module, name, index) for module in MODULES
                for index, (name, _, _) in enumerate(importlib.import_module(
                    f"jitgrad.backends.numba_cuda.kernels.{module}").KERNELS)]
    except ImportError:  # numba-cuda missing: the test below skips with the reason
        return [(module, "?", 0) for module in MODULES]


@pytest.fixture
def device_capability(monkeypatch):
    """The kernels call device functions (``block_reduce``), which numba-cuda compiles for the current
    device's compute capability even inside ``compile_ptx``: with no GPU there is none, so the device
    functions are compiled for the capability the kernel is (8.0)."""
    cuda = _cuda()
    if not cuda.is_available():
        import numba.cuda.dispatcher as dispatcher
        monkeypatch.setattr(dispatcher, "get_current_device",
                            lambda: pytypes.SimpleNamespace(compute_capability=(8, 0)))
    return cuda


@pytest.mark.parametrize("module, name, index", _entries())
def test_kernel_compiles_to_ptx(device_capability, module, name, index, tmp_path):
    cuda = device_capability
    kernels = importlib.import_module(f"jitgrad.backends.numba_cuda.kernels.{module}").KERNELS
    name, function, argument_types = kernels[index]
    ptxes = ptx_of(function, argument_types)
    assert [f"sm_{a}{b}" for a, b in ptxes] == ["sm_80", "sm_90"]
    ptx = ptxes[8, 0]
    for (major, minor), code in ptxes.items():
        assert f".target sm_{major}{minor}" in code
        assert f"{function.__name__}" in code  # the kernel's entry point, named after its function
        # The matrix product's per-thread accumulators (cuda.local.array) must live in registers: local
        # memory would make every product a memory round trip. No kernel here needs any.
        assert ".local" not in code
    ptxas = shutil.which("ptxas")
    if ptxas:
        report = _assemble(ptxas, ptx, tmp_path)
        assert "0 bytes spill stores, 0 bytes spill loads" in report, report


def _assemble(ptxas: str, ptx: str, folder) -> str:
    """ptxas's verbose report (registers, spills) for ``ptx`` assembled for sm_80."""
    source = folder / "kernel.ptx"
    source.write_text(ptx)
    done = subprocess.run([ptxas, "-arch=sm_80", "-v", str(source), "-o", os.devnull], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr
