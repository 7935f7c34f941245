"""``partition_joint``: splits a joint graph (``trace_joint``) into a forward and a backward graph.

The forward graph takes the primals and returns ``(result, saved)``; the backward graph takes the
saved values, then the tangents, then the Python-number inputs (``fx.numbers``), and returns the
gradients. What to save: every forward value the
backward reads, except that a cheap elementwise value is recomputed in the backward from its own inputs
when saving those instead costs no more bytes (inputs already saved are free), repeated until nothing
changes. ``exp(x)`` read by the backward, with ``x`` saved anyway, is recomputed rather than saved.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..graph import Graph
from ..joint import is_backward, saved_values
from ..node import Node, NodeKind, Opcode, iter_nodes, map_nodes
from .dead_code import eliminate_dead_code
from .memory import value_bytes


@dataclass
class Partition:
    forward: Graph
    backward: Graph
    saved: list[str]
    recomputed: list[str] = field(default_factory=list)
    numbers: list[str] = field(default_factory=list)  # Python-number inputs the backward reads as well
    saved_bytes_before: int = 0
    saved_bytes_after: int = 0


def _choose_saved(graph: Graph, needed: list[Node]) -> tuple[list[Node], list[Node]]:
    """The values to save and those to recompute (in graph order), from the values the backward reads."""
    position = graph.position()
    saved, recomputed = set(needed), set()
    changed = True
    while changed:
        changed = False
        for node in sorted(saved, key=position.__getitem__, reverse=True):
            if node.kind is not NodeKind.ELEMENTWISE:
                continue
            extra = [i for i in node.all_input_nodes if i.op is not Opcode.GET_ATTR and i not in saved
                     and not _is_number(i)]
            if sum(value_bytes(i) for i in extra) <= value_bytes(node):
                saved.remove(node)
                saved.update(extra)
                recomputed.add(node)
                changed = True
    ordered = sorted(saved, key=position.__getitem__), sorted(recomputed, key=position.__getitem__)
    return ordered


def _is_number(node: Node) -> bool:
    """A Python-number input (``fx.numbers``, after ``hoist_numbers``): the runtime hands it to the
    backward too, so it is never saved through the forward."""
    return node.op is Opcode.PLACEHOLDER and bool(node.meta.get("python_number"))


def _copy(target: Graph, node: Node, remap: dict[Node, Node]) -> Node:
    """Copies ``node`` into ``target``; constants it reads are copied on first use."""
    for used in node.all_input_nodes:
        if used not in remap and used.op is Opcode.GET_ATTR:
            remap[used] = target.node_copy(used, remap)
    remap[node] = target.node_copy(node, remap)
    return remap[node]


def partition_joint(graph: Graph) -> Partition:
    """``graph`` is a joint graph whose output is ``(result, gradients)``; it is left unchanged."""
    record = graph.record_pass("partition_joint")
    result, grads = graph.output_node.args[0]
    needed = [n for n in saved_values(graph) if not _is_number(n)]
    needed += [n for n in iter_nodes(grads) if not is_backward(n) and n.op is not Opcode.GET_ATTR
               and n not in needed and not _is_number(n)]
    saved, recomputed = _choose_saved(graph, needed)

    forward, forward_map = Graph(), {}
    for node in graph.nodes:
        if not is_backward(node) and node.op is not Opcode.OUTPUT:
            _copy(forward, node, forward_map)
    forward.output((map_nodes(result, forward_map.__getitem__), tuple(forward_map[n] for n in saved)))
    eliminate_dead_code(forward)

    backward, backward_map = Graph(), {}
    for node in saved:
        backward_map[node] = backward.placeholder(node.name, node.meta)
    for node in graph.placeholders:
        if is_backward(node):
            _copy(backward, node, backward_map)
    for node in graph.placeholders:
        if _is_number(node):
            _copy(backward, node, backward_map)
    for node in recomputed:
        _copy(backward, node, backward_map)
    for node in graph.nodes:
        if is_backward(node) and node.op is not Opcode.PLACEHOLDER and node not in backward_map:
            _copy(backward, node, backward_map)
    backward.output(map_nodes(grads, backward_map.__getitem__))
    eliminate_dead_code(backward)

    numbers = [p.name for p in backward.placeholders if _is_number(p)]
    partition = Partition(forward, backward, [n.name for n in saved], [n.name for n in recomputed], numbers,
                          sum(value_bytes(n) for n in needed), sum(value_bytes(n) for n in saved))
    record.changes = [f"recompute {name}" for name in partition.recomputed]
    record.stats = {"saved_bytes_before": partition.saved_bytes_before,
                    "saved_bytes_after": partition.saved_bytes_after}
    return partition
