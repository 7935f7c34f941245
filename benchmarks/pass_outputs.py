"""The graph after every pass, for W1, W2 and W4 at 8, 50 and 500 steps: what a change meant to make the
passes faster, not different, must leave as it was.

    python benchmarks/pass_outputs.py before.txt          # on one checkout (PYTHONPATH at its root)
    python benchmarks/pass_outputs.py after.txt           # on the other
    cmp before.txt after.txt

Each workload's whole-step form is compiled once, in this process, with an empty disk cache of its own
(so that the passes run), and ``PassManager.run`` is wrapped so that each pass's result is printed as
``str(graph)`` under a header naming the workload and the pass. About ten seconds.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Callable, TextIO

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling modules, when run as a script

W4_STEP_COUNTS = (8, 50, 500)


def _recording(out: TextIO, label: Callable[[], str]) -> None:
    """Wraps ``PassManager.run`` so that it writes the graph after each pass to ``out``."""
    from jitgrad.fx.passes.manager import PassManager
    original = PassManager.run

    def run(manager, graph):
        passes = manager.passes

        def written(graph_pass):
            def each(graph):
                graph = graph_pass(graph)
                out.write(f"=== {label()} / {graph_pass.__name__}\n{graph}\n")
                return graph
            each.__name__ = graph_pass.__name__
            return each
        manager.passes = [written(graph_pass) for graph_pass in passes]
        try:
            return original(manager, graph)
        finally:
            manager.passes = passes
    PassManager.run = run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the file the graphs are written to")
    args = parser.parse_args(argv)
    os.environ["JITGRAD_CACHE_DIR"] = tempfile.mkdtemp()  # an empty disk cache: the passes run
    import compiled_workloads
    import workloads
    current = ["W1"]
    with open(args.out, "w") as out:
        _recording(out, lambda: current[0])
        for key in ("W1", "W2"):
            current[0] = key
            inputs = getattr(workloads, f"{key.lower()}_inputs")(True)
            compiled_workloads.BY_KEY[key].builders["jitgrad_compiled"](inputs)()
        for steps in W4_STEP_COUNTS:
            workloads.W4_STEPS = compiled_workloads.W4_STEPS = steps  # w4_inputs and w4_loss read them
            current[0] = f"W4 over {steps} steps"
            compiled_workloads.BY_KEY["W4"].builders["jitgrad_compiled"](workloads.w4_inputs(False))()
    return 0


if __name__ == "__main__":
    sys.exit(main())
