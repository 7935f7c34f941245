"""``Loop``: the call target of a loop in the IR, a body graph run a number of times with carried values.

A trace unrolls Python loops: an RNN over 500 time steps records its step 500 times, and a kernel
generated from that graph grows (and compiles) with the number of steps. ``roll_loops`` finds such
repeats and puts one ``loop`` node in their place, whose target holds the body once.

A loop node reads three tuples, ``loop(carries, sliced, invariants)``, and its body graph takes one
placeholder per value, in that order: the carried values (their initial values; each iteration gets
what the previous one returned), one row of each sliced array per iteration (row ``start + step * j``
at iteration ``j``, ``step`` being 1 or -1) and the values every iteration reads unchanged. The body
returns a flat tuple: the next value of each carry, then the values kept from every iteration. The
loop's value is a tuple too, read with ``tuple_item``: the final value of each carry, then each kept
value stacked along a new first dimension, the value of iteration ``j`` at row ``j`` (at row
``count - 1 - j`` for a ``reverse`` loop: a backward walks time steps from the last, and its rows then
stand in time order). This is JAX's ``scan`` with a row offset; like ``tuple_item`` it is one of the
two call targets that are not registry ops, so that backends which know nothing of loops say so
(``lower`` is None) and a graph holding one falls back to the interpreter.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    from .graph import Graph


@dataclass(eq=False)
class Loop:
    """What a ``loop`` node runs: ``body`` ``count`` times. ``slices`` holds ``(start, step)`` for each
    sliced array; ``carries`` is how many of the body's leading placeholders (and outputs) are carried."""

    body: "Graph"
    count: int
    carries: int
    slices: tuple[tuple[int, int], ...]
    reverse: bool = False

    name = "loop"       # what listings and error messages call it
    lower = None        # no registry lowering: a backend that lowers loops handles this target itself
    kind = None         # opaque to fusion: a statement of its own
    view = False

    @property
    def kept(self) -> int:
        """How many values the body keeps from every iteration (stacked in the loop's value)."""
        return len(self.body.output_node.args[0]) - self.carries

    def row(self, iteration: int) -> int:
        """The row of the stacked values that iteration ``iteration`` (counted in the order it runs)
        writes."""
        return self.count - 1 - iteration if self.reverse else iteration

    def __call__(self, carries: tuple, sliced: tuple, invariants: tuple) -> tuple:
        """The loop run on tensors by ``fx.Interpreter``, its body through the interpreter too."""
        from .interpreter import Interpreter
        runner = Interpreter(self.body)
        return run_loop(lambda *values: runner.run(*values), self, carries, sliced, invariants)

    def __repr__(self) -> str:
        return (f"<loop: {self.count} iterations, {self.carries} carried, slices {list(self.slices)}"
                f"{', reverse' if self.reverse else ''}>")


def run_loop(body: Callable[..., Sequence[Any]], loop: Loop, carries: tuple, sliced: tuple,
             invariants: tuple) -> tuple:
    """The loop's value computed with eager ops, ``body`` computing one iteration from its placeholders'
    values: how the interpreter and the Python source that ``GraphModule`` prints run a loop."""
    from ..ops.registry import REGISTRY
    getitem, stack = REGISTRY["getitem"], REGISTRY["stack"]
    carried = list(carries)
    kept: list[list[Any]] = [[None] * loop.count for _ in range(loop.kept)]
    for j in range(loop.count):
        rows = [getitem(base, index=(start + step * j,)) for base, (start, step) in zip(sliced, loop.slices)]
        out = list(body(*carried, *rows, *invariants))
        carried = out[:loop.carries]
        for values, value in zip(kept, out[loop.carries:]):
            values[loop.row(j)] = value
    return (*carried, *(stack(tuple(values), dim=0) for values in kept))


__all__ = ["Loop", "run_loop"]
