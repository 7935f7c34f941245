"""``BackwardCalls``: a second trace takes a backward call's results from the first trace instead of
running it, where that is exactly as strict as running it.

``jitgrad.compile`` traces a function twice so that a value no guard sees (``random.random()``, the
time, a counter) shows as a difference between the two graphs; the second trace is checked against
the first node by node (``checked_graph``). In a backward call such a value can only come from user
code (hooks, ``retain_grad``, a custom ``Function``'s backward, saved-tensor hooks); registry
derivatives are pure functions of saved values and attributes, which the second trace's forward has
already matched. A tracer watches every outermost backward call (``engine.watching``). In the first
trace it describes the call's graph (``autograd.describe_pure_backward``: every node a registry op's
with no hook, or a leaf with only the tracer's own hooks; each labelled by the node of the op that
made it or of the leaf, and its ``.grad``), runs it, and records what it made: the graph's nodes from
the call (none may be a placeholder), their names and constants, the nodes and values of its results
(``autograd.grad``'s gradients, the ``.grad`` it set on leaves that had none) and which nodes it freed.
In the second trace, the k-th call whose description is the first trace's k-th, made where the
checked graph stands at the same node, is not run: the checked graph moves past those nodes
(``CheckedGraph.skip``), the results are new tensors bound to the first trace's nodes, holding copies
of its values (the same values: the same derivatives of the same values), and the same nodes are
freed. Any other call runs as before. The backward of W4 over 500 steps was about half of the second
trace (docs/compile.md, "What a first call costs").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..autograd import engine
from ..autograd.graph import Edge
from ..autograd.pure_backward import PureBackward, describe_pure_backward
from ..device import copy_array
from ..device import usage as devices
from ..tensor import Tensor
from .node import Node, Opcode
from .user_lines import user_line

if TYPE_CHECKING:
    from .tracer import Tracer



@dataclass
class _Result:
    """A tensor a backward call left to the function: its node, the node its array was known by (the
    tracer's ``_by_array``, None if none) and a copy of its value; or, with no node, the same tensor
    as the ``first``-th result (an identity kept)."""

    node: Node | None
    array_node: Node | None
    value: np.ndarray | None
    first: int


@dataclass
class RecordedCall:
    """A backward call of the first trace that the second may take the results of (module docstring)."""

    key: tuple
    start: int                       # the graph's nodes other than placeholders before the call
    placeholders: int
    made: list[Node]                 # the nodes the call made, in order
    names: dict[str, int]            # the graph's names after the call
    results: list[_Result | None]    # what ``engine.execute`` returned
    grads: list[tuple[int, _Result]]  # (leaf number in the description, its new ``.grad``)
    freed: list[int]                 # nodes whose saved values the call freed


class BackwardCalls:
    """A tracer's watcher of backward calls: records them in a first trace (``recorded``), or, given
    a first trace's records (``reference``), takes their results in a second."""

    def __init__(self, tracer: "Tracer", reference: list[RecordedCall | None] | None = None) -> None:
        self.tracer = tracer
        self.reference = reference
        self.recorded: list[RecordedCall | None] = []
        self._calls = 0
        self.own_hooks: set[int] = set()  # the tracer's hooks on leaves (``Tracer._watch_grad``)

    def __call__(self, roots: Sequence[Edge], grads: Sequence[Tensor], keep_graph: bool, create_graph: bool,
                 accumulate_grad: bool, outputs: Sequence[Edge] | None) -> list:
        number, self._calls = self._calls, self._calls + 1

        def run() -> list:
            return engine.execute(roots, grads, keep_graph, create_graph, accumulate_grad, outputs, watched=False)

        if self.reference is None:
            self.recorded.append(None)  # filled in once the call is recorded: calls are numbered as made
        if create_graph or devices.active:
            return run()
        tracer = self.tracer
        described = describe_pure_backward(
            roots, grads, outputs, (keep_graph, accumulate_grad, outputs is None, len(roots), len(grads)),
            tracer.grad_fn_node, tracer.bound_node, frozenset(self.own_hooks), tracer.tensor_types)
        if self.reference is None:
            return run() if described is None else self._record(number, described, grads, run)
        recorded = self.reference[number] if number < len(self.reference) else None
        if recorded is None or described is None or described.key != recorded.key \
                or not tracer.graph.skip(recorded.start, recorded.placeholders, recorded.made, recorded.names):
            return run()
        return self._take(recorded, described)

    def _record(self, number: int, described: PureBackward, grads: Sequence[Tensor], run: Any) -> list:
        tracer, graph = self.tracer, self.tracer.graph
        placeholders = len(graph.placeholders)
        start = len(graph) - placeholders
        leaves = [described.nodes[i].variable for i in described.leaves]
        before = [leaf._grad for leaf in leaves]
        freed_before = set(described.freed())
        draws = tracer.draws.count if tracer.draws is not None else 0
        if tracer.record_lines:  # no user code runs inside: each op's innermost user frame is this one
            tracer.backward_line = user_line()
        try:
            result = run()
        finally:
            tracer.backward_line = None
        made = list(graph.nodes[placeholders + start:])
        kept: list[Any] = []
        if len(graph.placeholders) != placeholders or (tracer.draws.count if tracer.draws is not None else 0) != draws \
                or any(node.op is not Opcode.CALL_FUNCTION and node.op is not Opcode.GET_ATTR for node in made):
            return result
        made_set = set(made)
        results = [self._kept(t, made_set, grads, kept) for t in result]
        new_grads = []
        for position, leaf, old in zip(described.leaves, leaves, before):
            if leaf._grad is old:
                continue
            new_grads.append((position, self._kept(leaf._grad, made_set, grads, kept) if old is None else None))
        if any(r is False for r in results) or any(r is None or r is False for _, r in new_grads):
            return result
        freed = [i for i in described.freed() if i not in freed_before]
        self.recorded[number] = RecordedCall(described.key, start, placeholders, made, dict(graph._names),
                                             results, new_grads, freed)
        return result

    def _kept(self, tensor: Tensor | None, made: set[Node], seeds: Sequence[Tensor], kept: list) -> Any:
        """A result as ``_Result``, None for None, False where a second trace could not stand for it
        by a new tensor: it is a seed, a view or requires grad, or its node is not one the call made."""
        if tensor is None:
            return None
        for first, earlier in enumerate(kept):
            if earlier is tensor:
                return _Result(None, None, None, first)
        node = self.tracer.bound_node(tensor)
        if node is None or node not in made or tensor._view is not None or tensor._requires_grad \
                or any(tensor is seed for seed in seeds) or type(tensor._data) is not np.ndarray:
            return False
        kept.append(tensor)
        return _Result(node, self.tracer.array_node(tensor), copy_array(tensor._data), len(kept) - 1)

    def _take(self, recorded: RecordedCall, described: PureBackward) -> list:
        made: list[Tensor] = []
        results = [None if r is None else self._made(r, made) for r in recorded.results]
        for position, result in recorded.grads:
            described.nodes[position].variable._grad = self._made(result, made)
        for position in recorded.freed:
            described.nodes[position].release_variables()
        return results

    def _made(self, result: _Result, made: list[Tensor]) -> Tensor:
        if result.node is None:
            return made[result.first]
        tensor = self.tracer.stand_in(result.node, result.array_node, copy_array(result.value))
        made.append(tensor)
        return tensor


__all__ = ["BackwardCalls", "RecordedCall"]
