"""Turning measurements into the console table and the Markdown section of docs/benchmarks.md.

The Markdown is written between two marker comments so that re-running the benchmark replaces only
the generated section of an existing file and keeps the hand-written commentary around it.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

import libraries
from timing import Measurement
from verify import Problem
from workloads import Goal, Workload

BEGIN = "<!-- BEGIN GENERATED: python benchmarks/eager.py --markdown docs/benchmarks.md -->"
END = "<!-- END GENERATED -->"


@dataclass
class WorkloadResult:
    workload: Workload
    description: str
    measurements: dict[str, Measurement]
    problems: list[Problem] = field(default_factory=list)


def format_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


def ratio(result: WorkloadResult, lib: str, baseline: str) -> float | None:
    m = result.measurements
    if lib not in m or baseline not in m:
        return None
    return m[lib].median / m[baseline].median


def ratio_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def goal_text(goal: Goal) -> str:
    return f"{libraries.label(goal.library)} <= {goal.max_ratio:g}x {libraries.label(goal.baseline)}"


def goal_status(result: WorkloadResult) -> tuple[float | None, str]:
    """The goal's measured ratio and ``met`` / ``NOT MET`` / ``not measured`` / ``no goal``."""
    goal = result.workload.goal
    if goal is None:
        return None, "no goal"
    value = ratio(result, goal.library, goal.baseline)
    if value is None:
        return None, "not measured"
    return value, "met" if value <= goal.max_ratio else "NOT MET"


def measurement_rows(result: WorkloadResult, baseline: str) -> list[list[str]]:
    rows = []
    for key, m in result.measurements.items():
        rows.append([libraries.label(key), format_time(m.median), f"±{m.spread * 50:.0f}%",
                     ratio_text(ratio(result, key, baseline)), str(m.reps)])
    return rows


def measurement_headers(baseline: str) -> list[str]:
    return ["library", "median / step", "spread", f"vs {libraries.label(baseline)}", "steps / round"]


def _summary_rows(results: list[WorkloadResult]) -> list[list[str]]:
    rows = []
    for r in results:
        goal = r.workload.goal
        value, status = goal_status(r)
        rows.append([f"{r.workload.key} {r.workload.title}", "none set" if goal is None else goal_text(goal),
                     ratio_text(value) if goal else "-",
                     ratio_text(ratio(r, "jitgrad", "numpy")), ratio_text(ratio(r, "jitgrad", "torch")),
                     status])
    return rows


_SUMMARY_HEADERS = ["workload", "goal", "measured", "jitgrad / numpy", "jitgrad / PyTorch", "status"]


def text_table(headers: list[str], rows: list[list[str]], left: int = 1, indent: str = "  ") -> str:
    """A plain-text table; the first ``left`` columns are text (left-aligned), the rest numbers."""
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        return indent + "  ".join(c.ljust(w) if i < left else c.rjust(w)
                                  for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(row) for row in rows])


def markdown_table(headers: list[str], rows: list[list[str]], left: int = 1) -> str:
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join(["---"] * left + ["---:"] * (len(headers) - left)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def text_workload(result: WorkloadResult, baseline: str, reference: str = "numpy") -> str:
    w = result.workload
    parts = [f"{w.key} {w.title}: {result.description}"]
    for p in result.problems:
        parts.append(f"  ERROR: {libraries.label(p.library)} failed verification against "
                     f"{'the numpy reference' if reference == 'numpy' else libraries.label(reference)} "
                     f"and is not timed: {p.message}")
    if result.measurements:
        parts.append(text_table(measurement_headers(baseline), measurement_rows(result, baseline)))
    if w.goal is not None:
        value, status = goal_status(result)
        parts.append(f"  goal: {goal_text(w.goal)}; measured {ratio_text(value)} -> {status}")
    return "\n".join(parts)


def text_summary(results: list[WorkloadResult]) -> str:
    return "Goals\n" + text_table(_SUMMARY_HEADERS, _summary_rows(results), left=2)


def markdown_run(environment: list[tuple[str, str]], settings: str, skipped: dict[str, str]) -> list[str]:
    """The "Run" part of a generated section: machine, versions, settings, skipped libraries."""
    out = ["### Run", ""]
    out += [f"- **{name}**: {value}" for name, value in environment]
    out.append(f"- **settings**: {settings}")
    out += [f"- **skipped {libraries.label(key)}**: {reason}" for key, reason in skipped.items()]
    return out + [""]


def markdown_workloads(results: list[WorkloadResult], baseline: str, suffix: str = "") -> list[str]:
    """The "Per workload" part of a generated section: one table per workload, and its errors."""
    out = ["### Per workload", "",
           f"Median time per warm step; *spread* is half the interquartile range over rounds, relative "
           f"to the median; ratios are against {libraries.label(baseline)}.", ""]
    for r in results:
        w = r.workload
        out += [f"#### {w.key} {w.title}{suffix}", "", r.description, ""]
        for p in r.problems:
            out += [f"**ERROR**: {libraries.label(p.library)} failed verification against the numpy "
                    f"reference and was not timed: `{p.message.splitlines()[0]}`", ""]
        if r.measurements:
            out += [markdown_table(measurement_headers(baseline), measurement_rows(r, baseline)), ""]
    return out


def markdown_section(results: list[WorkloadResult], baseline: str, environment: list[tuple[str, str]],
                     settings: str, skipped: dict[str, str]) -> str:
    """The generated part of docs/benchmarks.md, markers included."""
    out = [BEGIN, "", *markdown_run(environment, settings, skipped)]
    out += ["### Goals", "", markdown_table(_SUMMARY_HEADERS, _summary_rows(results), left=2), ""]
    out += markdown_workloads(results, baseline)
    out.append(END)
    return "\n".join(out) + "\n"


def exit_status(results: list[WorkloadResult]) -> int:
    """1, with a message, when a library disagreed with the reference; else 0. A missed goal is 0."""
    if any(r.problems for r in results):
        print("\nERROR: some libraries disagree with the numpy reference; see the messages above.",
              file=sys.stderr)
        return 1
    return 0


_NEW_FILE_HEAD = """# Eager-mode benchmarks

Generated by `python benchmarks/eager.py --markdown docs/benchmarks.md`; re-running that command
replaces the section between the marker comments below and keeps the rest of this file.

"""


def write_markdown(path: str, section: str, begin: str = BEGIN) -> None:
    """Replace the generated section that starts with ``begin`` in ``path``, or create the file around
    it. A file without the markers gets the section appended, so hand-written text (and the other
    script's section) is never lost."""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        start = text.find(begin)
        end = text.find(END, start)
        if start != -1 and end > start:
            text = text[:start] + section.rstrip("\n") + text[end + len(END):]
        else:
            text = text.rstrip("\n") + "\n\n" + section
    else:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        text = _NEW_FILE_HEAD + section
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
