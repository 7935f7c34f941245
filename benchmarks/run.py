"""The whole comparison in one command: jitgrad eager and compiled against every installed peer.

    python -m benchmarks                 # W1-W6, full rounds (several minutes on 2 cores)
    python -m benchmarks --quick         # about a minute once the compile caches are warm
    python benchmarks/run.py --only W5 --libraries jitgrad torch   # a selection (numpy always runs)

W1-W4 (workloads.py, with compiled_workloads.py's compiled columns) and W5-W6, a training step made of
modules, a loss module and Adam (training_workloads.py), each run on jitgrad eager and compiled,
PyTorch eager, ``torch.compile``, JAX ``jit`` and HIPS autograd where installed, and the hand-written
numpy pass, which is the reference every column is verified against. A workload's columns are timed
side by side in interleaved rounds in this one process, as eager.py and compiled.py do (this reuses
their harness: verify.py, timing.py, libraries.py, environment.py), so their ratios are comparable
even on a noisy machine. Every peer runs as its users would run it at its best: JAX with ``jax_enable_x64``
and torch imported first (libraries.py), PyTorch's fused Adam. jitgrad compiled runs the whole step
(``jitgrad_compiled``: for W5 and W6, Adam's update inside) and the loss alone (``jitgrad_loss``). A
workload whose layer jitgrad lacks is reported as skipped (training_workloads.missing_for_jitgrad).

Writes ``benchmarks/results/<date>.json`` (summary.py says what is in it) and, with matplotlib (the
``bench`` extra), ``<date>.png``, the chart of the ratios (chart.py); another run the same day
replaces them. Compile times are not measured here (compiled.py measures them in fresh processes):
jitgrad's disk cache and PyTorch's are used as they are, so a second run compiles little. Exits 1 if
a library computed a wrong result, never because it was slow.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling modules, when run as a script

import libraries  # noqa: E402 - imports nothing heavy, so --threads applies before numpy and torch load

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = ("jitgrad", "jitgrad_compiled", "jitgrad_loss", "torch", "torch_compile", "jax", "autograd", "numpy")
WORKLOAD_KEYS = ("W1", "W2", "W3", "W4", "W5", "W6")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small W3 (512x512), 4 rounds of ~20 ms: about a minute "
                   "with warm compile caches")
    p.add_argument("--only", nargs="+", metavar="W", choices=WORKLOAD_KEYS, type=str.upper,
                   help="run only these workloads, e.g. --only W1 W5")
    p.add_argument("--libraries", nargs="+", choices=COLUMNS, metavar="COLUMN",
                   help=f"run only these columns (numpy, the reference, always runs): {', '.join(COLUMNS)}")
    p.add_argument("--rounds", type=int, help="interleaved rounds per workload (default 15, quick 4)")
    p.add_argument("--batch-ms", type=float, help="target length of one column's batch in a round, in ms "
                   "(default 50, quick 20)")
    p.add_argument("--threads", type=int, metavar="N", help="cap every library's thread pools at N (see "
                   "benchmarks/README.md; useful on a machine other jobs are using)")
    p.add_argument("--out-dir", default=os.path.join(HERE, "results"), help="where the JSON and the PNG go "
                   "(default benchmarks/results)")
    args = p.parse_args(argv)
    args.rounds = args.rounds or (4 if args.quick else 15)
    args.batch_ms = args.batch_ms or (20.0 if args.quick else 50.0)
    return args


def _workloads(wanted: list[str] | None) -> list:
    import compiled_workloads
    import training_workloads
    chosen = compiled_workloads.WORKLOADS + training_workloads.WORKLOADS
    return [w for w in chosen if wanted is None or w.key in wanted]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        from eager import limit_threads
        limit_threads(args.threads)
    import chart
    import environment
    import report
    import summary
    import training_workloads
    from eager import run_workload

    load = {"start": list(os.getloadavg())} if hasattr(os, "getloadavg") else {}
    columns = [key for key in COLUMNS if args.libraries is None or key in args.libraries or key == "numpy"]
    probed = dict.fromkeys(["jitgrad", *columns])   # announce() requires jitgrad, even when only peers run
    available, skipped, env = environment.announce(tuple(libraries.BY_KEY[key] for key in probed))
    available = [key for key in available if key in columns]
    if args.threads and "torch" in available:
        import torch
        torch.set_num_threads(args.threads)
    settings = {"mode": "quick" if args.quick else "full", "rounds": args.rounds, "batch_ms": args.batch_ms,
                "threads": args.threads or "library defaults", "command": " ".join(["python -m benchmarks",
                                                                                      *(argv or sys.argv[1:])])}
    print(f"{settings['mode']} run, {args.rounds} interleaved rounds of ~{args.batch_ms:g} ms per column\n")

    results, entries = [], []
    for workload in _workloads(args.only):
        description = workload.describe(args.quick)
        missing = training_workloads.missing_for_jitgrad(workload)
        if missing is not None:
            print(f"{workload.key} {workload.title}: skipped: {missing}\n")
            entries.append(summary.skipped_entry(workload, description, missing))
            continue
        result = run_workload(workload, [k for k in available if k in workload.builders], args)
        print(report.text_workload(result, summary.REFERENCE), "\n", flush=True)
        results.append(result)
        entries.append(summary.workload_entry(result))
    if load:
        load["end"] = list(os.getloadavg())

    doc = summary.document(entries, env, settings, skipped, load)
    print("jitgrad / peer (below 1: jitgrad faster)")
    print(report.text_table(["workload", "pair", "ratio"], [list(r) for r in summary.text_ratios(doc)], left=2))
    stem = os.path.join(args.out_dir, datetime.date.today().isoformat())
    summary.write(stem + ".json", doc)
    print(f"\nwrote {stem}.json")
    if chart.available():
        chart.draw(doc, stem + ".png")
        print(f"wrote {stem}.png")
    else:
        print("no chart: matplotlib is not installed (pip install -e '.[bench]')")
    return report.exit_status(results)


if __name__ == "__main__":
    sys.exit(main())
