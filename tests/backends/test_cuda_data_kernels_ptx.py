"""Every kernel of the CUDA data-movement library (``KERNELS`` of ``jitgrad/backends/numba_cuda/kernels/
{copy,indexing,gathering,sorting,sampling,strided,tap_sums}.py``) compiles to PTX for sm_80 and sm_90 with numba-cuda's NVVM
(``ptx_targets.ptx_of``), with no GPU: the real compiler, which the simulator that runs the kernels in
``tests/cuda`` never exercises (types it cannot lower, such as a float16 to bool cast, show up only
here)."""
from __future__ import annotations

import os

import pytest

INSTALL = 'numba-cuda with NVVM is not installed: pip install "numba-cuda[cu12]"'

if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    pytest.skip("under NUMBA_ENABLE_CUDASIM the CUDA compiler is replaced by the simulator", allow_module_level=True)
pytest.importorskip("numba_cuda", reason=INSTALL)

from numba import cuda  # noqa: E402 - after the skips, which must not import it

from jitgrad.backends.numba_cuda.kernels import copy, gathering, indexing, sampling, sorting, strided, tap_sums  # noqa: E402
from ptx_targets import ptx_of  # noqa: E402


def _nvvm_works() -> bool:
    def nothing(out):
        out[0] = 1.0
    try:
        cuda.compile_ptx(nothing, "void(float32[:])", cc=(8, 0))
    except Exception:  # NvvmSupportError or a missing libNVVM: the toolkit is not installed
        return False
    return True


if not _nvvm_works():
    pytest.skip(INSTALL, allow_module_level=True)

ENTRIES = [(f"{module.__name__.rsplit('.', 1)[1]}.{name}[{k}]", pyfunc, argument_types)
           for module in (copy, indexing, gathering, sorting, sampling, strided, tap_sums)
           for k, (name, pyfunc, argument_types) in enumerate(module.KERNELS)]


def test_every_module_lists_kernels_it_launches():
    assert {name for name, _, _ in copy.KERNELS} == {"strided_copy", "strided_truth", "strided_fill"}
    assert {name for name, _, _ in indexing.KERNELS} == {"gather", "scatter_sum", "put", "put_number"}
    assert {name for name, _, _ in gathering.KERNELS} == {"gather_along", "scatter_add_along", "embedding_rows",
                                                      "embedding_backward_rows"}
    assert {name for name, _, _ in sorting.KERNELS} == {"rank_select", "running_sum"}
    assert {name for name, _, _ in tap_sums.KERNELS} == {"tap_sum_rows"}
    assert sampling.KERNELS == []  # the draw runs on the host (kernels/sampling.py says why)
    assert strided.KERNELS == []  # views only; listed because statements call its indexed_view


@pytest.mark.parametrize("label, pyfunc, argument_types", ENTRIES, ids=[label for label, _, _ in ENTRIES])
def test_kernel_compiles_to_ptx_for_sm_80_and_sm_90(label, pyfunc, argument_types):
    ptxes = ptx_of(pyfunc, argument_types)
    assert [f"sm_{a}{b}" for a, b in ptxes] == ["sm_80", "sm_90"]
    for (major, minor), ptx in ptxes.items():
        assert f".target sm_{major}{minor}" in ptx and f"{pyfunc.__name__}" in ptx
