"""Eager-mode benchmark: jitgrad against PyTorch, JAX, HIPS autograd and hand-written numpy.

    python benchmarks/eager.py                     # full run, table on stdout (~1-2 min on 2 cores)
    python benchmarks/eager.py --quick             # smoke run: small W3, fewer rounds
    python benchmarks/eager.py --markdown docs/benchmarks.md   # also rewrite that file's table
    python benchmarks/eager.py --device cuda       # jitgrad eager on a GPU vs PyTorch CUDA (needs a GPU)

Each workload runs in this one process against every importable library: first all results are
checked against the hand-written numpy reference, then the libraries are timed in interleaved
rounds (see timing.py). This is a measurement script, not a test; it exits 1 only when a library
computes a wrong result, never because a speed goal is missed.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling modules, when run as a script

import libraries  # noqa: E402 - imports nothing heavy; numpy and friends load after --threads is applied


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    keys = [lib.key for lib in libraries.LIBRARIES]
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small W3 (512x512) and few rounds, for smoke runs")
    p.add_argument("--markdown", metavar="PATH", help="write the results as Markdown into PATH, replacing "
                   "the generated section if the file already has one")
    p.add_argument("--baseline", default="numpy", choices=keys, help="library the ratio column divides by")
    p.add_argument("--rounds", type=int, help="interleaved rounds per workload (default 20, quick 5)")
    p.add_argument("--batch-ms", type=float, help="target length of one library's batch in a round, "
                   "in ms (default 60, quick 20)")
    p.add_argument("--only", nargs="+", metavar="W", help="run only these workloads, e.g. --only W1 W4")
    p.add_argument("--libraries", nargs="+", choices=keys, help="compare only these libraries")
    p.add_argument("--threads", type=int, metavar="N", help="cap every library's thread pools at N "
                   "(default: leave each library's own default)")
    p.add_argument("--cpu-time", action="store_true", help="time with the process's CPU time, not the wall "
                   "clock: on a loaded machine, waiting for a core counts for no library (use with --threads 1)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cuda: jitgrad eager on the GPU "
                   "against PyTorch's CUDA eager, numpy on the CPU as the reference (benchmarks/cuda_workloads.py; "
                   "needs a GPU)")
    args = p.parse_args(argv)
    args.rounds = args.rounds or (5 if args.quick else 20)
    args.batch_ms = args.batch_ms or (20.0 if args.quick else 60.0)
    return args


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


def limit_threads(n: int) -> None:
    """Cap the thread pools before numpy, torch or JAX load (they read these variables once, at import).

    Every library here runs its own pool in this one process. On a machine with few cores, one pool's
    workers still spinning after their call can stall another library's parallel op, so a capped run
    is a useful cross-check of the default one.
    """
    for name in THREAD_VARIABLES:
        os.environ[name] = str(n)
    if n == 1:
        flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flags).strip()


def run_workload(workload, libs: list[str], args: argparse.Namespace):
    """Verify, then time, one workload. Libraries that fail verification are reported and not timed."""
    import timing
    import verify
    from report import WorkloadResult
    inputs = workload.make_inputs(args.quick)
    steps, problems = {}, []
    for lib in libs:
        try:
            steps[lib] = workload.builders[lib](inputs)
        except Exception as exc:
            problems.append(verify.Problem(lib, f"setup raised {type(exc).__name__}: {exc}"))
    problems += verify.check(workload, steps, inputs)
    for p in problems:
        steps.pop(p.library, None)
    measurements = timing.measure(steps, rounds=args.rounds, batch_seconds=args.batch_ms / 1e3,
                                  cpu_time=getattr(args, "cpu_time", False))  # run.py's, suite.py's... have none
    return WorkloadResult(workload, workload.describe(args.quick), measurements, problems)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        limit_threads(args.threads)
    if args.device == "cuda":
        import cuda_workloads
        return cuda_workloads.run(args, cuda_workloads.EAGER_COLUMNS, "eager.py")
    import environment
    import report
    from workloads import WORKLOADS
    available, skipped, env = environment.announce(libraries.LIBRARIES)
    if args.threads and "torch" in available:
        import torch
        torch.set_num_threads(args.threads)
    libs = [k for k in available if args.libraries is None or k in args.libraries or k == "numpy"]
    settings = (f"{'quick' if args.quick else 'full'} run, {args.rounds} interleaved rounds of "
                f"~{args.batch_ms:g} ms per library, median reported; threads: "
                + (f"capped at {args.threads}" if args.threads else "library defaults")
                + ("; process CPU time" if args.cpu_time else ""))
    print(settings, "\n")

    wanted = {w.upper() for w in args.only} if args.only else None
    results = []
    for workload in WORKLOADS:
        if wanted is not None and workload.key not in wanted:
            continue
        result = run_workload(workload, libs, args)
        print(report.text_workload(result, args.baseline), "\n", flush=True)
        results.append(result)
    print(report.text_summary(results))

    if args.markdown:
        section = report.markdown_section(results, args.baseline, env, settings, skipped)
        report.write_markdown(args.markdown, section)
        print(f"\nwrote {args.markdown}")
    return report.exit_status(results)


if __name__ == "__main__":
    sys.exit(main())
