"""The workload suite: jitgrad eager and compiled against PyTorch, torch.compile and JAX on K1-K15.

    python benchmarks/suite.py                 # full sizes, 10 interleaved rounds (several minutes on 2 cores)
    python benchmarks/suite.py --quick         # small sizes, 4 rounds
    python benchmarks/suite.py --only K2 K3 --libraries jitgrad_compiled torch jax
    python benchmarks/suite.py --markdown docs/benchmarks.md   # also rewrite the suite's section there

The workloads (suite_workloads.py) are the compiler measured beyond W1-W4: slices, softmax and
reductions over wide rows, batched and transposed matmuls, gathers, cumsum, broadcasting, conv2d, many
small parameters. Each column is verified against PyTorch eager in float64 before it is timed, then the
columns of a workload are timed side by side in interleaved rounds (timing.py), as the other scripts
do. Writes ``benchmarks/results/suite-<date>.json`` (summary.py's format) and, with matplotlib, its
chart; a quick run or one of some workloads writes ``suite-<date>-quick-K2-K3.json`` and so on. Exits 1 if a column computed a wrong result, never because it was slow.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling modules, when run as a script

import libraries  # noqa: E402 - imports nothing heavy, so --threads applies before numpy and torch load

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = ("jitgrad", "jitgrad_compiled", "jitgrad_loss", "torch", "torch_compile", "jax")
BEGIN = "<!-- BEGIN GENERATED: python benchmarks/suite.py --markdown docs/benchmarks.md -->"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python benchmarks/suite.py", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes, 4 rounds of ~20 ms")
    p.add_argument("--only", nargs="+", metavar="K", type=str.upper, help="run only these workloads, e.g. --only K1 K3")
    p.add_argument("--libraries", nargs="+", choices=COLUMNS, metavar="COLUMN",
                   help=f"run only these columns (the float64 reference always runs): {', '.join(COLUMNS)}")
    p.add_argument("--rounds", type=int, help="interleaved rounds per workload (default 10, quick 4)")
    p.add_argument("--batch-ms", type=float, help="target length of one column's batch in a round, in ms "
                   "(default 40, quick 20)")
    p.add_argument("--threads", type=int, metavar="N", help="cap every library's thread pools at N")
    p.add_argument("--out-dir", default=os.path.join(HERE, "results"), help="where the JSON and the PNG go")
    p.add_argument("--markdown", metavar="PATH", help="write the table as Markdown into PATH, replacing this "
                   "script's generated section if the file has one")
    args = p.parse_args(argv)
    args.rounds = args.rounds or (4 if args.quick else 10)
    args.batch_ms = args.batch_ms or (20.0 if args.quick else 40.0)
    return args


def run_workload(workload, columns: list[str], args: argparse.Namespace):
    """Build every column, verify each against the float64 reference, time the ones that agree."""
    import timing
    import verify
    from report import WorkloadResult
    from suite_workloads import REFERENCE
    inputs = workload.make_inputs(args.quick)
    steps, problems = {}, []
    for key in [*columns, REFERENCE]:
        try:
            steps[key] = workload.builders[key](inputs)
        except Exception as exc:
            problems.append(verify.Problem(key, f"setup raised {type(exc).__name__}: {exc}"))
    if REFERENCE in steps:
        problems += verify.check(workload, steps, inputs, reference=REFERENCE)
    else:
        problems += [verify.Problem(key, "not verified: the reference could not run") for key in columns]
    for problem in problems:
        steps.pop(problem.library, None)
    steps.pop(REFERENCE, None)
    measurements = timing.measure(steps, rounds=args.rounds, batch_seconds=args.batch_ms / 1e3)
    return WorkloadResult(workload, workload.describe(args.quick), measurements, problems)


def goal_rows(results: list) -> list[list[str]]:
    """One row per goal of suite_workloads.GOALS and workload it applies to: the ratio and met / NOT MET."""
    from report import ratio, ratio_text
    from suite_workloads import GOALS
    rows = []
    for key, ours, peer, limit in GOALS:
        for result in results:
            if key not in ("*", result.workload.key):
                continue
            value = ratio(result, ours, peer)
            status = "not measured" if value is None else ("met" if value <= limit else "NOT MET")
            rows.append([result.workload.key, f"{libraries.label(ours)} <= {limit:g}x {libraries.label(peer)}",
                         ratio_text(value), status])
    return rows


def ratio_rows(results: list) -> list[list[str]]:
    """The suite's table: per workload the compiled step's time and its ratio to each peer."""
    from report import format_time, ratio, ratio_text
    rows = []
    for r in results:
        m = r.measurements
        step = m.get("jitgrad_compiled")
        rows.append([f"{r.workload.key} {r.workload.title}", format_time(step.median) if step else "-",
                     ratio_text(ratio(r, "jitgrad_compiled", "torch")), ratio_text(ratio(r, "jitgrad_compiled", "jax")),
                     ratio_text(ratio(r, "jitgrad_loss", "torch_compile")),
                     ratio_text(ratio(r, "jitgrad_compiled", "jitgrad")), ratio_text(ratio(r, "jitgrad", "torch"))])
    return rows


RATIO_HEADERS = ["workload", "compiled step", "step / PyTorch", "step / JAX", "loss / torch.compile",
                 "step / jitgrad eager", "eager / PyTorch"]
GOAL_HEADERS = ["workload", "goal", "measured", "status"]


def markdown_section(results: list, env: list[tuple[str, str]], settings: str, skipped: dict[str, str],
                     load: dict) -> str:
    import report
    out = [BEGIN, "", *report.markdown_run(env, settings, skipped)]
    if load:
        out.insert(-1, f"- **load average (1, 5, 15 min)**: start {load['start']}, end {load.get('end')}")
    out += ["### Ratios (below 1: jitgrad faster)", "", report.markdown_table(RATIO_HEADERS, ratio_rows(results)),
            "", "### Goals", "", report.markdown_table(GOAL_HEADERS, goal_rows(results), left=2), "",
            "### Per workload", ""]
    for r in results:
        out += [f"#### {r.workload.key} {r.workload.title}", "", r.description, ""]
        for p in r.problems:
            out += [f"ERROR: {libraries.label(p.library)} failed verification: {p.message.splitlines()[0]}", ""]
        out += [report.markdown_table(report.measurement_headers("torch"), report.measurement_rows(r, "torch")), ""]
    out.append(report.END)
    return "\n".join(out) + "\n"


def run_name(args: argparse.Namespace, day: datetime.date) -> str:
    """The results' file name: ``suite-<date>`` for a full run; a quick run or one of some workloads is
    named for what it ran, so that it never replaces the day's full run that docs/benchmarks.md charts."""
    parts = [f"suite-{day.isoformat()}", *(["quick"] if args.quick else []), *(args.only or [])]
    return "-".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        from eager import limit_threads
        limit_threads(args.threads)
    import chart
    import environment
    import report
    import suite_workloads
    import summary
    load = {"start": [round(v, 2) for v in os.getloadavg()]} if hasattr(os, "getloadavg") else {}
    columns = [key for key in COLUMNS if args.libraries is None or key in args.libraries]
    probed = dict.fromkeys(["jitgrad", "numpy", *columns, suite_workloads.REFERENCE])
    available, skipped, env = environment.announce(tuple(libraries.BY_KEY[key] for key in probed))
    columns = [key for key in columns if key in available]
    if args.threads and "torch" in available:
        import torch
        torch.set_num_threads(args.threads)
    settings = (f"{'quick' if args.quick else 'full'} run, {args.rounds} interleaved rounds of ~{args.batch_ms:g} ms "
                f"per column, median reported; threads: {args.threads or 'library defaults'}")
    print(settings, "\n")
    results, entries = [], []
    for workload in suite_workloads.WORKLOADS:
        if args.only and workload.key not in args.only:
            continue
        result = run_workload(workload, columns, args)
        print(report.text_workload(result, "torch" if "torch" in columns else columns[0], suite_workloads.REFERENCE),
              "\n", flush=True)
        results.append(result)
        entries.append(summary.workload_entry(result))
    if load:
        load["end"] = [round(v, 2) for v in os.getloadavg()]
    print("jitgrad / peer (below 1: jitgrad faster)")
    print(report.text_table(RATIO_HEADERS, ratio_rows(results)))
    print("\nGoals (issue 17)")
    print(report.text_table(GOAL_HEADERS, goal_rows(results), left=2))

    doc = summary.document(entries, env, {"mode": "quick" if args.quick else "full", "rounds": args.rounds,
                                          "batch_ms": args.batch_ms, "threads": args.threads or "library defaults",
                                          "command": " ".join(["python benchmarks/suite.py", *(argv or sys.argv[1:])])},
                           skipped, load)
    stem = os.path.join(args.out_dir, run_name(args, datetime.date.today()))
    summary.write(stem + ".json", doc)
    print(f"\nwrote {stem}.json")
    if chart.available():
        chart.draw(doc, stem + ".png")
        print(f"wrote {stem}.png")
    if args.markdown:
        report.write_markdown(args.markdown, markdown_section(results, env, settings, skipped, load), begin=BEGIN)
        print(f"wrote {args.markdown}")
    if any(r.problems for r in results):
        print("\nERROR: some columns disagree with the float64 PyTorch reference; see the messages above.",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
