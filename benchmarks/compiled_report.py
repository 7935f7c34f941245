"""The compiled benchmark's tables: per-step goals, jitgrad's forms side by side, compile times, and
its Markdown section.

Per-workload tables are the eager benchmark's (report.py); the goals differ (several per workload,
against several baselines), and the forms table and compile times are new, so they are written here.
"""
from __future__ import annotations

import libraries
import report
from compiled_workloads import BATCHES, FIRST_CALL_GOALS, GOALS, SECOND_PROCESS_GOAL_SECONDS
from report import WorkloadResult, format_time, markdown_table, ratio, ratio_text, text_table

BEGIN = "<!-- BEGIN GENERATED: python benchmarks/compiled.py --markdown docs/benchmarks.md -->"

_GOAL_HEADERS = ["workload", "goal", "measured", "status"]
_FORM_HEADERS = ["workload", "step", "loss", "closure", "loss / step", "closure / loss", "JAX", "step / JAX",
                 "loss / JAX", "torch.compile", "loss / torch.compile"]
_COMPILE_HEADERS = ["workload", "jitgrad first call", "JAX first call", "torch.compile first call",
                    "jitgrad / JAX", "goal", "status", "jitgrad 2nd process: wall (from start; call)",
                    "JAX 2nd process: wall (from start; call)"]


def _status(value: float | None, limit: float) -> str:
    return "not measured" if value is None else ("met" if value <= limit else "NOT MET")


def goal_rows(results: list[WorkloadResult]) -> list[list[str]]:
    by_key = {r.workload.key: r for r in results}
    rows = []
    for key, lib, baseline, limit in GOALS:
        if key in by_key:
            value = ratio(by_key[key], lib, baseline)
            rows.append([f"{key} {by_key[key].workload.title}",
                         f"{libraries.label(lib)} <= {limit:g}x {libraries.label(baseline)}",
                         ratio_text(value), _status(value, limit)])
    return rows


def _median_text(result: WorkloadResult, lib: str) -> str:
    m = result.measurements.get(lib)
    return "-" if m is None else format_time(m.median)


def form_rows(results: list[WorkloadResult]) -> list[list[str]]:
    """jitgrad's three compiled forms (step, loss, closure) and the two peers' times, with the ratios
    between them, all from the same interleaved rounds."""
    rows = []
    for r in results:
        times = [_median_text(r, lib) for lib in ("jitgrad_compiled", "jitgrad_loss", "jitgrad_closure")]
        ratios = [ratio(r, "jitgrad_loss", "jitgrad_compiled"), ratio(r, "jitgrad_closure", "jitgrad_loss")]
        rows.append([f"{r.workload.key} {r.workload.title}", *times, *map(ratio_text, ratios),
                     _median_text(r, "jax"), ratio_text(ratio(r, "jitgrad_compiled", "jax")),
                     ratio_text(ratio(r, "jitgrad_loss", "jax")), _median_text(r, "torch_compile"),
                     ratio_text(ratio(r, "jitgrad_loss", "torch_compile"))])
    return rows


_FORMS_NOTE = ("jitgrad @compile in three forms: step = the whole step compiled (`autograd.grad` inside, "
               "returns loss and gradients); loss = the loss compiled, every tensor an argument, then "
               "`loss.backward()`; closure = the loss compiled with the parameters read from the enclosing "
               "scope, then `loss.backward()`. JAX is `jit(value_and_grad)`, torch.compile the loss then "
               "`backward()`.")


def _seconds(entry: dict | None, field: str = "first_call") -> float | None:
    return None if not entry or "error" in entry else entry[field]


def _time_text(entry: dict | None, field: str = "first_call") -> str:
    if entry and "error" in entry:
        return f"failed: {entry['error'][:60]}"
    value = _seconds(entry, field)
    return "-" if value is None else format_time(value)


def _second_text(entry: dict | None) -> str:
    if entry is None:
        return "-"
    if "error" in entry:
        return _time_text(entry)
    return f"{_time_text(entry, 'wall')} ({_time_text(entry, 'from_start')}; {_time_text(entry)})"


def compile_rows(timings: dict) -> list[list[str]]:
    rows = []
    keys = list(dict.fromkeys(key for key, _ in timings["first"]))
    for key in keys:
        first = {lib: timings["first"].get((key, lib)) for lib in ("jitgrad_compiled", "jax", "torch_compile")}
        ours, jax = _seconds(first["jitgrad_compiled"]), _seconds(first["jax"])
        value = ours / jax if ours is not None and jax is not None else None
        limit = FIRST_CALL_GOALS.get(key)
        seconds = [_second_text(timings[kind].get(key)) for kind in ("second", "jax_second")]
        rows.append([key, _time_text(first["jitgrad_compiled"]), _time_text(first["jax"]),
                     _time_text(first["torch_compile"]), ratio_text(value),
                     "-" if limit is None else f"<= {limit:g}x", "-" if limit is None else _status(value, limit),
                     *seconds])
    return rows


def second_process_line(timings: dict) -> str:
    ours, jax = (_seconds(timings[kind].get("W2"), "wall") for kind in ("second", "jax_second"))
    status = _status(ours, SECOND_PROCESS_GOAL_SECONDS)
    anchor = f", JAX's {format_time(jax)}" if jax is not None else ""
    walls = (timings["second"].get("W2") or {}).get("walls")
    spread = f" (median of {len(walls)} processes, {format_time(walls[0])} to {format_time(walls[-1])})" \
        if walls else ""
    return (f"W2's second process on a warm disk cache, process wall time (interpreter start to exit, after "
            f"its first result): {format_time(ours) if ours is not None else '-'}{spread}{anchor} (goal at most "
            f"{SECOND_PROCESS_GOAL_SECONDS:g} s): {status}")


def batches_line(timings: dict) -> str:
    batches = timings.get("batches", {})
    if "error" in batches:
        return f"W2 at batch sizes {BATCHES}: failed: {batches['error']}"
    kernels = batches["kernels"]
    once = all(k == kernels[0] for k in kernels)
    calls = ", ".join(f"{b}: {format_time(s)}" for b, s in zip(batches["batches"], batches["seconds"]))
    return (f"W2 (cross-entropy with mean) compiled at batch {', then '.join(map(str, BATCHES))}: "
            f"kernels in memory after each {kernels} -> "
            f"{'compiled once: met' if once else 'compiled again: NOT MET'} (first call at each size: {calls})")


def text_workload(result: WorkloadResult, baseline: str) -> str:
    return report.text_workload(result, baseline)


def text_summary(results: list[WorkloadResult], timings: dict | None) -> str:
    parts = ["Goals (time per step)", text_table(_GOAL_HEADERS, goal_rows(results), left=2), "",
             "jitgrad's compiled forms side by side (same rounds)",
             text_table(_FORM_HEADERS, form_rows(results), left=1)]
    if timings is not None:
        parts += ["", "Compile (fresh processes, empty disk cache)",
                  text_table(_COMPILE_HEADERS, compile_rows(timings), left=1),
                  "  " + second_process_line(timings), "  " + batches_line(timings)]
    return "\n".join(parts)


def markdown_section(results: list[WorkloadResult], timings: dict | None, baseline: str,
                     environment: list[tuple[str, str]], settings: str, skipped: dict[str, str]) -> str:
    out = [BEGIN, "", *report.markdown_run(environment, settings, skipped)]
    out += ["### Goals: time per step", "", markdown_table(_GOAL_HEADERS, goal_rows(results), left=2), ""]
    out += ["### jitgrad's compiled forms", "", _FORMS_NOTE + " Medians from the same interleaved rounds.", "",
            markdown_table(_FORM_HEADERS, form_rows(results)), ""]
    if timings is not None:
        out += ["### Goals: compiling", "",
                "First call = trace, compile and run once, in a fresh process with an empty jitgrad disk "
                "cache (and an empty JAX persistent cache); the last two columns are a second process on "
                "the cache its first one left (the median by wall of five such processes): the process's "
                "wall time (interpreter start to exit), from the script's start (imports included) to the "
                "first result, and the first call alone.", "",
                markdown_table(_COMPILE_HEADERS, compile_rows(timings)), "",
                f"- {second_process_line(timings)}", f"- {batches_line(timings)}", ""]
    out += report.markdown_workloads(results, baseline, " (compiled run)")
    out.append(report.END)
    return "\n".join(out) + "\n"


def write(path: str, section: str) -> None:
    report.write_markdown(path, section, begin=BEGIN)
