"""Every kernel the CUDA backend generates compiles to real GPU code: PTX from NVVM (which ``pip install
"numba-cuda[cu12]"`` brings) for compute capabilities 8.0 and 9.0, with no GPU present. The kernels
are those of every op sample's calls as one-node graphs (the eager path: one program per op, dtypes and
attributes, since sizes are not in the source), of the small fused programs the simulator tests run,
and of every graph ``@jitgrad.compile`` hands the backend for W1-W4 (tests/cuda_programs.py). The
kernel library's kernels those programs launch are compiled by the library's own PTX tests
(test_cuda_kernels_ptx.py, test_cuda_data_kernels_ptx.py), every entry of their ``KERNELS``.

Each kernel is typed and lowered once and NVVM makes the PTX of both capabilities from it
(tests/ptx_targets.py says how, and why that is ``compile_ptx``'s PTX): the second capability costs
its NVVM run only. The script checks on a sample of the kernels that the PTX is ``compile_ptx``'s for
each capability, up to the kernel's mangled name (which encodes the capability it was lowered at).
Where the toolkit's ``ptxas`` is found (``nvidia-cuda-nvcc-cu12``, which the extra brings, or on
``PATH``), each PTX for sm_80 is assembled and must not spill registers, and so is sm_90's for every
eighth kernel (assembling is a third of the time; spills come from the kernel's registers, which both
capabilities have as many of).

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
from cuda_programs import fused_programs, op_calls, optimized_graph, workload_graphs
from jitgrad.backends.numba_cuda.codegen import generate
from jitgrad.backends.numba_cuda.compiler import kernels_of, without_comments
from jitgrad.backends.numba_cuda.eager import one_node_graph
from ptx_targets import CCS, ptx_of, unnamed
import glob, os, shutil, subprocess, tempfile, time


def find_ptxas():
    try:
        import nvidia.cuda_nvcc
        found = [p for d in nvidia.cuda_nvcc.__path__ for p in glob.glob(os.path.join(d, "bin", "ptxas"))]
    except ImportError:
        found = []
    return found[0] if found else shutil.which("ptxas")


ASSEMBLED_EVERY = {(8, 0): 1, (9, 0): 8}   # ptxas for every kernel's sm_80 PTX, every eighth's sm_90
SAME_AS_COMPILE_PTX_EVERY = 50             # kernels whose PTX is compared with compile_ptx's


def spills(ptxas, ptx, cc):
    """ptxas's report lines for a PTX that spills registers (or does not assemble)."""
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
    # float16 arithmetic calls functions numba-cuda links in at launch (cuda_fp16): such a PTX is
    # assembled as relocatable code (-c), where an external function may stay unresolved.
    relocatable = ["-c"] if ".extern .func" in ptx else []
    done = subprocess.run([ptxas, f"-arch=sm_{cc[0]}{cc[1]}", *relocatable, "-v", f.name, "-o", os.devnull], capture_output=True, text=True)
    os.unlink(f.name)
    report = (done.stdout + done.stderr).splitlines()
    if done.returncode:
        return report[-3:]
    return [line.strip() for line in report if "spill" in line and not line.strip().endswith(
        "0 bytes spill stores, 0 bytes spill loads")]


# The library kernels call device functions (block_reduce), which numba-cuda compiles for the current
# device's compute capability even inside compile_ptx: with no GPU there is none, so they are compiled
# for the capability the kernel is lowered at (as tests/backends/test_cuda_kernels_ptx.py does).
import numba.cuda.dispatcher as dispatcher, types as pytypes
if not cuda.is_available():
    dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=CCS[0])


LIBRARY = "jitgrad.backends.numba_cuda.kernels"
ptxas = find_ptxas()
started = time.perf_counter()
graphs = [(label, one_node_graph(op, args, attrs)[0]) for label, op, args, attrs, _ in op_calls()]
graphs += [(name, optimized_graph(program, arrays)) for name, program, arrays in fused_programs()]
graphs += workload_graphs()
programs, kernels, launched = {}, {}, 0
for label, graph in graphs:  # one generated module per source (sizes are not in it), one kernel per types
    generated = generate(graph)
    if programs.setdefault(without_comments(generated.source), label) != label:
        continue
    for name, pyfunc, types in kernels_of(generated):
        if (pyfunc.__module__ or "").startswith(LIBRARY):  # compiled by the library's own PTX tests, every entry
            continue
        launched += 1
        # Kernels of different programs with the same bytecode, constants, globals and argument types are
        # one computation whose locals are named differently (node names): numba makes the same PTX of
        # them, so one is compiled.
        code = pyfunc.__code__
        kernels.setdefault((code.co_code, code.co_consts, code.co_names, types), (label, name, pyfunc, types))
traced = time.perf_counter() - started
compiled, assembled, compared, failures = 0, 0, 0, []
for k, (label, name, pyfunc, types) in enumerate(kernels.values()):
    try:
        ptxes = ptx_of(pyfunc, types)
    except Exception as error:
        failures.append(f"{label}: {name}: {type(error).__name__}: {str(error).splitlines()[0]}")
        continue
    for cc, ptx in ptxes.items():
        compiled += 1
        if k % SAME_AS_COMPILE_PTX_EVERY == 0:
            compared += 1
            if unnamed(cuda.compile_ptx(pyfunc, types, cc=cc)[0]) != unnamed(ptx):
                failures.append(f"{label}: {name} sm_{cc[0]}{cc[1]}: not the PTX compile_ptx makes")
        if ptxas and k % ASSEMBLED_EVERY[cc] == 0:
            failures += [f"{label}: {name} sm_{cc[0]}{cc[1]}: ptxas: {line}" for line in spills(ptxas, ptx, cc)]
            assembled += 1
print(json.dumps({"graphs": len(graphs), "programs": len(programs), "launched": launched, "kernels": len(kernels),
                  "workload_graphs": sum(label[:1] == "W" and label[1:2].isdigit() for label, _ in graphs),
                  "targets": [f"sm_{a}{b}" for a, b in CCS], "compiled": compiled, "assembled": assembled,
                  "expected_assembled": sum(-(-len(kernels) // every) for every in ASSEMBLED_EVERY.values()),
                  "compared": compared,
                  "failures": failures, "seconds": {"generate": round(traced, 1),
                                                    "compile": round(time.perf_counter() - started - traced, 1)}}))
'''


def test_every_generated_kernel_compiles_to_ptx_for_sm_80_and_sm_90():
    result = last_json_line(run_python(SCRIPT, env={"NUMBA_ENABLE_CUDASIM": "0"}, timeout=900))
    if "skip" in result:
        pytest.skip(f"numba-cuda with NVVM not installed: {INSTALL} ({result['skip']})")
    print(result)  # the counts and seconds, shown by pytest -s
    assert result["failures"] == []
    assert result["workload_graphs"] >= 24  # W1-W4, three forms each, the loss forms' split graphs too
    assert result["programs"] > 300 and result["launched"] > 900  # about 470 programs launching 1000 kernels
    assert result["kernels"] > 300  # about 350 distinct ones
    assert result["compiled"] == result["kernels"] * len(result["targets"])
    assert result["targets"] == ["sm_80", "sm_90"] and result["compared"] >= 2 * 7
    assert result["assembled"] in (0, result["expected_assembled"])
