"""``plan_memory``: which memory holds each value, and for how long: the plan a backend allocates.

The plan follows the program as it runs once fused. The graph is put in the order its units run
(``schedule.order_units``: a fusion group's loop is one step), and a value is alive from the first
position of the unit that computes it to the last position of the last unit that reads it (a loop
reads its inputs and writes its results throughout), or to the end for what the graph returns; a
buffer is handed on only after the unit where its value dies, so no unit writes over what it reads.

Where a value lives:

- a value computed inside a fusion group's loop and read only there (``relu`` in
  ``relu(x @ w).mean()``) is a scalar of the loop: no memory;
- a view (``node.kind``: reshape, transpose, basic indexing, a split's pieces, an element of a
  multi-output value) is its base's memory: ``meta["view_of"]`` names the value it reads, whose
  memory stays alive as long as the view is read;
- a multi-output op that is not a view (max/min over a dimension) makes its own arrays;
- an output that is a value of its own, not read through an earlier output, is computed straight
  into the output's memory, buffer ``out<k>`` for the k-th output (flattened depth-first), which is
  shared with nothing: the caller owns what a call returns. Every other output (a view, an argument,
  a value returned twice) is copied into its ``out<k>`` at the end;
- every other value (an opaque op's result, a reduction's, an elementwise value read outside its
  loop) takes a dead buffer of exactly its size and dtype if there is one, else a new ``buf<n>``.

``meta["buffer"]`` and ``meta["live"]`` (first and last position) show the plan on each value with
memory of its own. Reported: ``unplanned_bytes`` (every op's result in memory of its own, with no
plan), ``planned_bytes`` and ``buffers`` (the plan's buffers, outputs included: what a backend
allocates) and ``peak_live_bytes`` (the most bytes alive at once: what any plan needs at least).
"""
from __future__ import annotations

import math

import numpy as np

from ..graph import Graph
from ..node import Node, NodeKind, Opcode, iter_nodes, tuple_item
from .schedule import order_units, units

_PLAN_KEYS = ("buffer", "live", "view_of")


def value_bytes(node: Node) -> int:
    """The bytes of the value(s) a node computes."""
    shape, dtype = node.meta["shape"], node.meta["dtype"]
    if isinstance(dtype, tuple):
        return sum(math.prod(s) * np.dtype(d).itemsize for s, d in zip(shape, dtype))
    return math.prod(shape) * np.dtype(dtype).itemsize


def is_planned(graph: Graph) -> bool:
    """Whether ``plan_memory`` was the last pass to run on ``graph``, so its plan holds."""
    return bool(graph.history) and graph.history[-1].name == "plan_memory"


def output_buffer(index: int) -> str:
    """The buffer of the ``index``-th output (flattened depth-first): the memory the caller gets."""
    return f"out{index}"


def _spans(graph: Graph) -> dict[Node, tuple[int, int]]:
    """For each op call, the first and last position of its unit: the steps its loop runs over."""
    position = graph.position()
    return {node: (position[members[0]], position[members[-1]]) for members in units(graph) for node in members}


def _views(graph: Graph) -> dict[Node, Node]:
    """For each view, the value whose memory it reads (through views of views); marks ``view_of``."""
    base: dict[Node, Node] = {}
    for node in graph.nodes:
        if node.op is Opcode.CALL_FUNCTION and node.kind is NodeKind.VIEW:
            source = node.args[0]
            base[node] = base.get(source, source)
            node.meta["view_of"] = base[node].name
    return base


def _stores(node: Node, spans: dict[Node, tuple[int, int]], outputs: set[Node]) -> bool:
    """Whether a value that is not a view needs memory of its own (see the module docstring)."""
    if isinstance(node.meta["dtype"], tuple):
        return False
    if node.kind is not NodeKind.ELEMENTWISE or node in outputs:
        return True
    return any(u.op is not Opcode.OUTPUT and spans[u] != spans[node] for u in node.users)


def _in_place(outputs: list[Node], base: dict[Node, Node], spans: dict[Node, tuple[int, int]]) -> dict[Node, int]:
    """The outputs computed straight into their own memory, by index: values of their own (not views,
    arguments or multi-output values) that no earlier output reads, itself or through a view."""
    in_place: dict[Node, int] = {}
    claimed: set[Node] = set()
    for k, node in enumerate(outputs):
        root = base.get(node, node)
        if root is node and node in spans and node not in claimed and not isinstance(node.meta["dtype"], tuple):
            in_place[node] = k
        claimed.add(root)
    return in_place


def _last_reads(spans: dict[Node, tuple[int, int]], base: dict[Node, Node], outputs: list[Node],
                end_of_graph: int) -> dict[Node, int]:
    """For each value with readers, the last position of the last unit reading it or a view of it;
    ``end_of_graph`` for what is returned."""
    end: dict[Node, int] = {}
    for node, (_, last) in spans.items():
        for used in node.all_input_nodes:
            root = base.get(used, used)
            end[root] = max(end.get(root, -1), last)
    for node in outputs:
        end[base.get(node, node)] = end_of_graph
    return end


def plan_memory(graph: Graph) -> Graph:
    record = graph.record_pass("plan_memory")
    if order_units(graph):
        record.changes.append("the members of each fusion group put side by side, in the order the units run")
    nodes = graph.nodes
    for node in nodes:
        for key in _PLAN_KEYS:
            node.meta.pop(key, None)
    spans = _spans(graph)
    outputs = list(iter_nodes(graph.output_node.args[0]))
    base = _views(graph)
    stored = [n for n in spans if n not in base and _stores(n, spans, set(outputs))]
    end = _last_reads(spans, base, outputs, len(nodes))
    in_place = _in_place(outputs, base, spans)
    sizes = {output_buffer(k): value_bytes(node) for k, node in enumerate(outputs)}
    free: dict[tuple[int, str], list[str]] = {}  # dead buffers by bytes and dtype
    dying: dict[int, list[Node]] = {}            # values by the position after which they are dead
    live_bytes = peak = 0
    for node in stored:
        first, last = spans[node]
        for position in sorted(p for p in dying if p < first):
            for dead in dying.pop(position):
                free.setdefault((value_bytes(dead), str(dead.meta["dtype"])), []).append(dead.meta["buffer"])
                live_bytes -= value_bytes(dead)
        key = (value_bytes(node), str(node.meta["dtype"]))
        if node in in_place:
            buffer = output_buffer(in_place[node])
        elif free.get(key):
            buffer = free[key].pop()
            record.changes.append(f"{node.name} reuses {buffer}")
        else:
            buffer = f"buf{len(sizes) - len(outputs)}"  # sizes holds the outputs' buffers first
            sizes[buffer] = key[0]
        node.meta["buffer"] = buffer
        node.meta["live"] = (first, max(end.get(node, last), last))
        dying.setdefault(node.meta["live"][1], []).append(node)
        live_bytes += key[0]
        peak = max(peak, live_bytes)
    copied = sum(value_bytes(n) for k, n in enumerate(outputs) if n.meta.get("buffer") != output_buffer(k))
    at_end = sum(value_bytes(n) for n in stored if n.meta["live"][1] == len(nodes))
    record.stats = {"unplanned_bytes": sum(value_bytes(n) for n in spans if n.target is not tuple_item),
                    "planned_bytes": sum(sizes.values()), "peak_live_bytes": max(peak, at_end + copied),
                    "buffers": len(sizes)}
    return graph


__all__ = ["is_planned", "output_buffer", "plan_memory", "value_bytes"]
