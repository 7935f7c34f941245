"""Every kernel the CUDA backend generates compiles to real GPU code: ``numba.cuda.compile_ptx`` (NVVM,
which ``pip install "numba-cuda[cu12]"`` brings) for compute capability 8.0, with no GPU present. The
kernels are those of every elementwise and reduction call of the op samples (one per op and dtypes:
other shapes change only the unravelling) and of the small fused programs the simulator tests run
(tests/cuda_programs.py), with the library kernels and copies their programs launch. Where the
toolkit's ``ptxas`` is found (``nvidia-cuda-nvcc-cu12``, which the extra brings, or on ``PATH``), each
PTX is also assembled for sm_80 and must not spill registers.

It runs in a subprocess without ``NUMBA_ENABLE_CUDASIM``: the simulator replaces ``compile_ptx``."""
from __future__ import annotations

import pytest

from helpers import last_json_line, run_python

INSTALL = 'pip install "numba-cuda[cu12]"'

SCRIPT = r'''
import json, sys
sys.path[:0] = ["tests", "benchmarks"]
try:
    from numba import cuda
    from numba.cuda.cudadrv import nvvm
    nvvm.NVVM()
except Exception as error:  # no numba.cuda, or no NVVM
    print(json.dumps({"skip": f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"}))
    raise SystemExit
from cuda_programs import elementwise_and_reduction_calls, fused_programs, optimized_graph
from jitgrad.backends.numba_cuda.codegen import generate
from jitgrad.backends.numba_cuda.compiler import kernels_of
from jitgrad.backends.numba_cuda.eager import one_node_graph
import glob, os, shutil, subprocess, tempfile


def find_ptxas():
    try:
        import nvidia.cuda_nvcc
        found = [p for d in nvidia.cuda_nvcc.__path__ for p in glob.glob(os.path.join(d, "bin", "ptxas"))]
    except ImportError:
        found = []
    return found[0] if found else shutil.which("ptxas")


def spills(ptxas, ptx):
    """ptxas's report lines for a PTX that spills registers (or does not assemble)."""
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
    done = subprocess.run([ptxas, "-arch=sm_80", "-v", f.name, "-o", os.devnull], capture_output=True, text=True)
    os.unlink(f.name)
    report = (done.stdout + done.stderr).splitlines()
    if done.returncode:
        return report[-3:]
    return [line.strip() for line in report if "spill" in line and not line.strip().endswith(
        "0 bytes spill stores, 0 bytes spill loads")]


ptxas = find_ptxas()

graphs, seen = [], set()
for label, op, args, attrs, _ in elementwise_and_reduction_calls():
    key = (op.name, tuple(str(getattr(a, "dtype", type(a).__name__)) for a in args))
    if key not in seen:
        seen.add(key)
        graphs.append((label, one_node_graph(op, args, attrs)[0]))
graphs += [(name, optimized_graph(program, arrays)) for name, program, arrays in fused_programs()]
compiled, assembled, failures, done = 0, 0, [], set()
for label, graph in graphs:
    for name, pyfunc, types in kernels_of(generate(graph)):
        key = (pyfunc.__code__, types)
        if key in done:
            continue
        done.add(key)
        try:
            ptx, _ = cuda.compile_ptx(pyfunc, types, cc=(8, 0))
            compiled += 1
        except Exception as error:
            failures.append(f"{label}: {name}: {type(error).__name__}: {str(error).splitlines()[0]}")
            continue
        if ptxas:
            failures += [f"{label}: {name}: ptxas: {line}" for line in spills(ptxas, ptx)]
            assembled += 1
print(json.dumps({"compiled": compiled, "assembled": assembled, "failures": failures}))
'''


def test_every_generated_kernel_compiles_to_ptx_for_sm_80():
    result = last_json_line(run_python(SCRIPT, env={"NUMBA_ENABLE_CUDASIM": "0"}, timeout=900))
    if "skip" in result:
        pytest.skip(f"numba-cuda with NVVM not installed: {INSTALL} ({result['skip']})")
    assert result["failures"] == []
    assert result["compiled"] > 50
    assert result["assembled"] in (0, result["compiled"])
