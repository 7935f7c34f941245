"""``plan_memory``: when each intermediate is alive, and which buffer holds it.

A value is live from the node that computes it to its last reader; the graph's outputs live to the
end. Walking the graph in order, a node takes a dead buffer of exactly its size and dtype if there is
one, else a new buffer; the buffers of values whose last reader it is die after it (a node never writes
over its own input). Placeholders and constants belong to the caller and the graph, not to the plan; a
``tuple_item`` reads part of its multi-output op's buffer.

Reported: ``unplanned_bytes`` (every intermediate in its own buffer), ``planned_bytes`` (the buffers
of the plan) and ``peak_live_bytes`` (the most bytes alive at once: what any plan needs at least).
``meta["buffer"]`` and ``meta["live"]`` (first and last position) show the plan on each node.
"""
from __future__ import annotations

import math

import numpy as np

from ..graph import Graph
from ..node import Node, Opcode, tuple_item


def value_bytes(node: Node) -> int:
    """The bytes of the value(s) a node computes."""
    shape, dtype = node.meta["shape"], node.meta["dtype"]
    if isinstance(dtype, tuple):
        return sum(math.prod(s) * np.dtype(d).itemsize for s, d in zip(shape, dtype))
    return math.prod(shape) * np.dtype(dtype).itemsize


def _owner(node: Node) -> Node:
    return node.args[0] if node.target is tuple_item else node


def plan_memory(graph: Graph) -> Graph:
    record = graph.record_pass("plan_memory")
    nodes = graph.nodes
    owners = [n for n in nodes if n.op is Opcode.CALL_FUNCTION and n.target is not tuple_item]
    last_use: dict[Node, int] = {}
    for position, node in enumerate(nodes):
        for used in node.all_input_nodes:
            if used.op is Opcode.CALL_FUNCTION:
                owner = _owner(used)
                last_use[owner] = len(nodes) if node.op is Opcode.OUTPUT else max(last_use.get(owner, 0), position)
    free: dict[tuple, list[str]] = {}
    sizes: dict[str, int] = {}
    live_bytes = peak = 0
    dying: dict[int, list[Node]] = {}
    for position, node in enumerate(nodes):
        if node in owners:
            key = (value_bytes(node), str(node.meta["dtype"]))
            pool = free.get(key)
            buffer = pool.pop() if pool else f"buf{len(sizes)}"
            sizes.setdefault(buffer, key[0])
            node.meta["buffer"] = buffer
            end = last_use.get(node, position)
            node.meta["live"] = (position, end)
            dying.setdefault(end, []).append(node)
            live_bytes += key[0]
            peak = max(peak, live_bytes)
        for dead in dying.pop(position, []):
            free.setdefault((value_bytes(dead), str(dead.meta["dtype"])), []).append(dead.meta["buffer"])
            live_bytes -= value_bytes(dead)
        if node.target is tuple_item:
            node.meta["buffer"] = f"{node.args[0].meta['buffer']}[{node.args[1]}]"
    record.stats = {"unplanned_bytes": sum(value_bytes(n) for n in owners),
                    "planned_bytes": sum(sizes.values()), "peak_live_bytes": peak, "buffers": len(sizes)}
    taken: set[str] = set()
    for node in owners:
        if node.meta["buffer"] in taken:
            record.changes.append(f"{node.name} reuses {node.meta['buffer']}")
        taken.add(node.meta["buffer"])
    return graph
