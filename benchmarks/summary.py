"""The whole comparison as data: jitgrad against each peer as a ratio of times, and the results file.

A ratio compares jitgrad with one peer in the same mode: jitgrad eager with PyTorch eager and HIPS
autograd, jitgrad compiled with ``torch.compile`` (both compiling the loss, ``backward()`` outside) and
with JAX (whose ``jit`` covers the whole step, as jitgrad's compiled step does), and jitgrad compiled
(the whole step) with PyTorch eager, the choice a PyTorch user faces. Every ratio is jitgrad's median step time over the peer's, both from the same
interleaved rounds (timing.py), so below 1 means jitgrad is faster.

The results file, ``benchmarks/results/<date>.json`` (``SCHEMA`` below): the machine, library versions
and settings, then per workload the time of every column and the ratios. A workload jitgrad cannot run
yet is listed with ``skipped`` and the reason, so a reader sees it was not forgotten.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import libraries
from report import WorkloadResult

SCHEMA = 1
REFERENCE = "numpy"


@dataclass(frozen=True)
class Pair:
    """jitgrad's column (the first of ``jitgrad`` a workload has) against ``peer``'s."""

    name: str
    jitgrad: tuple[str, ...]
    peer: str


# Every workload has jitgrad's whole compiled step (``jitgrad_compiled``: for W5 and W6, Adam's update
# included) and its compiled loss (``jitgrad_loss``); a pair uses the first of them that was measured.
COMPILED = ("jitgrad_compiled", "jitgrad_loss")
PAIRS = (
    Pair("jitgrad eager / PyTorch eager", ("jitgrad",), "torch"),
    Pair("jitgrad eager / HIPS autograd", ("jitgrad",), "autograd"),
    Pair("jitgrad compiled / PyTorch eager", COMPILED, "torch"),
    Pair("jitgrad compiled / torch.compile", ("jitgrad_loss",), "torch_compile"),
    Pair("jitgrad compiled / JAX jit", COMPILED, "jax"),
)


def ratios(result: WorkloadResult) -> list[dict]:
    """Every pair both of whose columns were measured, with the columns it used."""
    measured = result.measurements
    found = []
    for pair in PAIRS:
        ours = next((key for key in pair.jitgrad if key in measured), None)
        if ours is not None and pair.peer in measured:
            found.append({"name": pair.name, "jitgrad": ours, "peer": pair.peer,
                          "ratio": measured[ours].median / measured[pair.peer].median})
    return found


def workload_entry(result: WorkloadResult) -> dict:
    measured = result.measurements
    reference = measured.get(REFERENCE)
    times = {key: {"label": libraries.label(key), "median_s": m.median, "spread": m.spread,
                   "steps_per_round": m.reps, "rounds": m.rounds,
                   "vs_numpy": None if reference is None else m.median / reference.median}
             for key, m in measured.items()}
    return {"key": result.workload.key, "title": result.workload.title, "description": result.description,
            "times": times, "ratios": ratios(result),
            "errors": {p.library: p.message for p in result.problems}}


def skipped_entry(workload, description: str, reason: str) -> dict:
    return {"key": workload.key, "title": workload.title, "description": description, "skipped": reason}


def document(entries: list[dict], environment: list[tuple[str, str]], settings: dict,
             skipped_libraries: dict[str, str], load: dict[str, list[float]]) -> dict:
    """The results file's content. ``environment`` is environment.describe()'s rows: the installed
    distributions among them become ``versions``, the rest ``machine``; ``load`` is the load average at the
    start and the end of the run (what else the machine was doing)."""
    dists = {lib.dist for lib in libraries.BY_KEY.values()}
    machine = {name: value for name, value in environment if name not in dists and name != "date"}
    machine["load average (1, 5, 15 min)"] = load
    return {"schema": SCHEMA, "date": dict(environment)["date"], "machine": machine,
            "versions": {name: value for name, value in environment if name in dists},
            "settings": settings,
            "skipped_libraries": {libraries.label(k): why for k, why in skipped_libraries.items()},
            "pairs": [{"name": p.name, "jitgrad": list(p.jitgrad), "peer": p.peer} for p in PAIRS],
            "workloads": entries}


def write(path: str, doc: dict) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")


def text_ratios(doc: dict) -> list[tuple[str, ...]]:
    """(workload, pair, ratio) rows for the console; skipped workloads say why."""
    rows = []
    for entry in doc["workloads"]:
        name = f"{entry['key']} {entry['title']}"
        if "skipped" in entry:
            rows.append((name, f"skipped: {entry['skipped']}", "-"))
        for r in entry.get("ratios", []):
            rows.append((name, r["name"], f"{r['ratio']:.2f}x"))
    return rows
