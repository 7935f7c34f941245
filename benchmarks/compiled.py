"""Compiled-mode benchmark: jitgrad's @compile against torch.compile, JAX jit, PyTorch and jitgrad
eager, HIPS autograd, hand-written numpy and (W1) a hand-fused numba kernel; plus compile times.

    python benchmarks/compiled.py                     # full run, tables on stdout (~6 min on 2 cores)
    python benchmarks/compiled.py --quick             # smoke run: small W3, few rounds, no compile times
    python benchmarks/compiled.py --markdown docs/benchmarks.md   # also rewrite that file's section
    python benchmarks/compiled.py --device cuda       # on a GPU: jitgrad compiled vs PyTorch CUDA, torch.compile

Per-step times are measured as in eager.py: every library verified against the numpy reference, then
timed in interleaved rounds in this one process. Compile times are measured in fresh processes, one
per library and workload: the first call (trace and compile) with an empty jitgrad disk cache, and for
jitgrad a second process on the warm cache. It exits 1 only when a library computes a wrong result,
never because a goal is missed.
"""
from __future__ import annotations

import time

_STARTED = time.perf_counter()  # the child modes report time from here: imports included

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling modules, when run as a script

# The child modes time a process's life from its start: they import only what jitgrad's second process
# needs, so the parent's modules (``libraries``, with importlib.metadata; subprocess; tempfile: 30-50 ms
# together) are imported where the parent uses them, not counted against the library measured.
COMPILE_TIMED = ("jitgrad_compiled", "jax", "torch_compile")
# second processes per workload and library: one process's wall moves by a quarter on a shared machine,
# so the report gives the median one (and the range)
SECOND_PROCESSES = 5


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small W3, few rounds, no compile times")
    p.add_argument("--markdown", metavar="PATH", help="write the results as Markdown into PATH, replacing "
                   "this script's generated section if the file already has one")
    p.add_argument("--rounds", type=int, help="interleaved rounds per workload (default 15, quick 4)")
    p.add_argument("--batch-ms", type=float, help="target length of one library's batch in a round, in ms "
                   "(default 50, quick 20)")
    p.add_argument("--only", nargs="+", metavar="W", help="run only these workloads, e.g. --only W1 W4")
    p.add_argument("--no-compile-times", action="store_true", help="skip the first-call and second-process "
                   "measurements (they take a few minutes)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cuda: jitgrad compiled and eager "
                   "on the GPU against PyTorch's CUDA eager and torch.compile, numpy on the CPU as the reference "
                   "(benchmarks/cuda_workloads.py; needs a GPU; no compile times)")
    p.add_argument("--first-call", nargs=2, metavar=("W", "LIB"), help=argparse.SUPPRESS)
    p.add_argument("--batches", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.rounds = args.rounds or (4 if args.quick else 15)
    args.batch_ms = args.batch_ms or (20.0 if args.quick else 50.0)
    args.baseline = "numpy"
    return args


# ---- child processes ---------------------------------------------------------------------------------------
def first_call(workload_key: str, lib: str) -> dict[str, float]:
    """(child) Build one library's step and time its first call; inputs are made before the clock."""
    import compiled_workloads
    workload = compiled_workloads.BY_KEY[workload_key]
    before_inputs = time.perf_counter()
    inputs = workload.make_inputs(False)
    making_inputs = time.perf_counter() - before_inputs
    if lib == "jax":
        import libraries
        libraries.probe((libraries.BY_KEY["jax"],))   # float64 on, as in the timed run; torch imported first
        import jax
        # JAX's own persistent cache, beside jitgrad's: its second process is the anchor of ours
        jax.config.update("jax_compilation_cache_dir", os.path.join(os.environ["JITGRAD_CACHE_DIR"], "jax"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    start = time.perf_counter()
    workload.builders[lib](inputs)()
    end = time.perf_counter()
    return {"first_call": end - start, "from_start": end - _STARTED - making_inputs}


def batch_sizes() -> dict[str, object]:
    """(child) W2 compiled at each batch size in turn: kernels compiled (by numba or by the LLVM
    generator), traces and recompiles."""
    import compiled_workloads
    import workloads
    from jitgrad.backends.llvm_cpu import compiled_graph as llvm_kernels
    from jitgrad.backends.numba_cpu import compiler
    kernels, seconds = [], []
    inputs = workloads.w2_inputs(False)
    for batch in compiled_workloads.BATCHES:
        rows = {**inputs, "x": _rows(inputs["x"], batch), "onehot": _rows(inputs["onehot"], batch)}
        start = time.perf_counter()
        compiled_workloads.BY_KEY["W2"].builders["jitgrad_compiled"](rows)()
        seconds.append(time.perf_counter() - start)
        kernels.append(len(compiler._KERNELS) + len(llvm_kernels.KERNELS))
    return {"batches": list(compiled_workloads.BATCHES), "kernels": kernels, "seconds": seconds}


def _rows(array, count: int):
    import numpy as np
    return np.resize(array, (count, array.shape[1]))


def run_child(flags: list[str], cache_dir: str) -> dict:
    """A child's report, with ``wall``: the child process's whole life, interpreter start and exit included."""
    import subprocess
    env = {**os.environ, "JITGRAD_CACHE_DIR": cache_dir}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, os.path.abspath(__file__), *flags], env=env, capture_output=True,
                          text=True, timeout=900)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "wall": wall}


def median_run(runs: list[dict]) -> dict:
    """The run of median wall time among ``runs`` (a failed one, if any failed), with every wall under
    ``walls``."""
    failed = [r for r in runs if "error" in r]
    if failed:
        return failed[0]
    ordered = sorted(runs, key=lambda r: r["wall"])
    return {**ordered[len(ordered) // 2], "walls": [r["wall"] for r in ordered]}


# ---- the parent --------------------------------------------------------------------------------------------
def compile_times(workload_keys: list[str], available: list[str]) -> dict:
    """First calls in fresh processes (empty caches each), a second process of jitgrad and of JAX on the
    cache its first one left, and the W2 batch-size experiment."""
    import tempfile

    import libraries
    results: dict = {"first": {}, "second": {}, "jax_second": {}}
    for key in workload_keys:
        for lib in COMPILE_TIMED:
            if lib in available:
                with tempfile.TemporaryDirectory() as cache:
                    results["first"][key, lib] = run_child(["--first-call", key, lib], cache)
                    if lib in ("jitgrad_compiled", "jax"):
                        results["second" if lib == "jitgrad_compiled" else "jax_second"][key] = \
                            median_run([run_child(["--first-call", key, lib], cache) for _ in range(SECOND_PROCESSES)])
                print(f"  {key} {libraries.label(lib)}: {results['first'][key, lib]}", flush=True)
    with tempfile.TemporaryDirectory() as cache:
        results["batches"] = run_child(["--batches"], cache)
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.first_call or args.batches:
        print(json.dumps(first_call(*args.first_call) if args.first_call else batch_sizes()))
        return 0
    import tempfile

    import libraries
    os.environ.setdefault("JITGRAD_CACHE_DIR", tempfile.mkdtemp(prefix="jitgrad-bench-"))
    if args.device == "cuda":
        import cuda_workloads
        return cuda_workloads.run(args, cuda_workloads.COMPILED_COLUMNS, "compiled.py")
    import compiled_report
    import compiled_workloads
    import environment
    import report
    from eager import run_workload
    available, skipped, env = environment.announce(libraries.LIBRARIES + libraries.COMPILED_LIBRARIES)
    settings = (f"{'quick' if args.quick else 'full'} run, {args.rounds} interleaved rounds of "
                f"~{args.batch_ms:g} ms per library, median reported; threads: library defaults")
    print(settings, "\n")

    wanted = {w.upper() for w in args.only} if args.only else None
    results = []
    for workload in compiled_workloads.WORKLOADS:
        if wanted is not None and workload.key not in wanted:
            continue
        libs = [k for k in available if k in workload.builders]
        result = run_workload(workload, libs, args)
        print(compiled_report.text_workload(result, args.baseline), "\n", flush=True)
        results.append(result)
    timings = None
    if not (args.quick or args.no_compile_times):
        print("compile times (fresh processes):", flush=True)
        timings = compile_times([r.workload.key for r in results], available)
    print(compiled_report.text_summary(results, timings))

    if args.markdown:
        section = compiled_report.markdown_section(results, timings, args.baseline, env, settings, skipped)
        compiled_report.write(args.markdown, section)
        print(f"\nwrote {args.markdown}")
    return report.exit_status(results)


if __name__ == "__main__":
    sys.exit(main())
