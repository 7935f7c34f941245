"""``PassManager``: runs a list of passes, timing each, counting nodes, linting after each (or, for a
compile that a user waits for, once at the end: ``lint=False``).

With ``JITGRAD_LOG=graph`` in the environment (a comma-separated list) the graph is printed to stderr
before and after every pass, the way to see what a pipeline does to one program.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from ..graph import Graph
from .batch_products import batch_matrix_products
from .common_subexpressions import eliminate_common_subexpressions
from .constant_folding import fold_constants
from .convolution_columns import share_convolution_columns
from .dead_code import eliminate_dead_code
from .fusion import group_fusions
from .memory import plan_memory
from .rematerialize import rematerialize
from .roll_loops import roll_loops
from .simplify import simplify_algebra
from .topological_sort import topological_sort

Pass = Callable[[Graph], Graph]

DEFAULT_PIPELINE: tuple[Pass, ...] = (
    topological_sort, fold_constants, batch_matrix_products, share_convolution_columns, simplify_algebra,
    eliminate_common_subexpressions, eliminate_dead_code, group_fusions, rematerialize, plan_memory,
)

# For a backend that lowers ``loop`` nodes: loops rolled once the graph is simplified and before
# fusion, which then works inside each loop's body.
LOOP_PIPELINE: tuple[Pass, ...] = (*DEFAULT_PIPELINE[:DEFAULT_PIPELINE.index(eliminate_dead_code) + 1], roll_loops,
                                   *DEFAULT_PIPELINE[DEFAULT_PIPELINE.index(eliminate_dead_code) + 1:])

# The pipelines by name: a backend names its own (``Backend.pipeline`` in jitgrad.compile), so that
# choosing a backend imports no pass; the passes are imported when a graph is lowered.
PIPELINES: dict[str, tuple[Pass, ...]] = {"default": DEFAULT_PIPELINE, "loops": LOOP_PIPELINE}


@dataclass
class PassRun:
    name: str
    nodes_before: int
    nodes_after: int
    seconds: float
    changes: int


def _log_run(run: PassRun) -> None:
    """Each pass's run on the ``jitgrad.fx`` logger, at INFO. ``logging`` is imported here, at the first
    pass of a process, not with jitgrad: a warm process runs no pass (3 ms of its start)."""
    import logging

    logging.getLogger("jitgrad.fx").info("%s: %d -> %d nodes, %d changes, %.2f ms", run.name, run.nodes_before,
                                         run.nodes_after, run.changes, run.seconds * 1e3)


def _logs_graph() -> bool:
    return "graph" in os.environ.get("JITGRAD_LOG", "").split(",")


class PassManager:
    """``PassManager(passes).run(graph)``; ``runs`` holds one ``PassRun`` per pass of the last run.

    ``lint``: check the graph after every pass, which names the pass that broke it. Without it the
    graph is checked once, after the last pass: ``jitgrad.compile`` does so unless
    ``JITGRAD_LINT_PASSES=1`` (the test suite sets it), since linting after each of W4's passes was half
    of their time, and the passes' share of a first call grows with the program."""

    def __init__(self, passes: Sequence[Pass] = DEFAULT_PIPELINE, lint: bool = True) -> None:
        self.passes = list(passes)
        self.lint = lint
        self.runs: list[PassRun] = []

    def run(self, graph: Graph) -> Graph:
        self.runs = []
        show = _logs_graph()
        for graph_pass in self.passes:
            name = graph_pass.__name__
            if show:
                print(f"--- before {name} ---\n{graph}", file=sys.stderr)
            before, start = len(graph), time.perf_counter()
            graph = graph_pass(graph)
            seconds = time.perf_counter() - start
            if self.lint:
                graph.lint()
            changes = len(graph.history[-1].changes) if graph.history else 0
            self.runs.append(PassRun(name, before, len(graph), seconds, changes))
            _log_run(self.runs[-1])
            if show:
                print(f"--- after {name} ---\n{graph}", file=sys.stderr)
        if not self.lint:
            graph.lint()
        return graph

    def report(self) -> str:
        """A line per pass: nodes before and after, changes, time."""
        return "\n".join(f"{r.name:<34} {r.nodes_before:>5} -> {r.nodes_after:<5} {r.changes:>4} changes "
                         f"{r.seconds * 1e3:8.2f} ms" for r in self.runs)
