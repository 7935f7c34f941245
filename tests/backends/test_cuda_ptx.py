"""Every kernel the CUDA backend generates compiles to real GPU code: ``numba.cuda.compile_ptx`` (NVVM,
which ``pip install "numba-cuda[cu12]"`` brings) for compute capability 8.0, with no GPU present. The
kernels are those of every elementwise and reduction call of the op samples (one per op and dtypes:
other shapes change only the unravelling) and of the small fused programs the simulator tests run
(tests/cuda_programs.py), with the library kernels and copies their programs launch.

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

graphs, seen = [], set()
for label, op, args, attrs, _ in elementwise_and_reduction_calls():
    key = (op.name, tuple(str(getattr(a, "dtype", type(a).__name__)) for a in args))
    if key not in seen:
        seen.add(key)
        graphs.append((label, one_node_graph(op, args, attrs)[0]))
graphs += [(name, optimized_graph(program, arrays)) for name, program, arrays in fused_programs()]
compiled, failures, done = 0, [], set()
for label, graph in graphs:
    for name, pyfunc, types in kernels_of(generate(graph)):
        key = (pyfunc.__code__, types)
        if key in done:
            continue
        done.add(key)
        try:
            cuda.compile_ptx(pyfunc, types, cc=(8, 0))
            compiled += 1
        except Exception as error:
            failures.append(f"{label}: {name}: {type(error).__name__}: {str(error).splitlines()[0]}")
print(json.dumps({"compiled": compiled, "failures": failures}))
'''


def test_every_generated_kernel_compiles_to_ptx_for_sm_80():
    result = last_json_line(run_python(SCRIPT, env={"NUMBA_ENABLE_CUDASIM": "0"}, timeout=900))
    if "skip" in result:
        pytest.skip(f"numba-cuda with NVVM not installed: {INSTALL} ({result['skip']})")
    assert result["failures"] == []
    assert result["compiled"] > 50
