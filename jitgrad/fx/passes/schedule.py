"""The order a graph runs in once fused: units, each fusion group one of them, in dependency order.

A fusion group runs as one loop over all its members at once, so it is one step of the program, which
may come after nodes that sit between its members in the graph: ``group_fusions`` marks groups without
moving nodes. ``order_units`` puts the graph in the order the units run (each group's members side by
side, every other op call a unit of its own, each unit taken as soon as what it reads is computed,
in graph order otherwise), so that a position in the graph is a step of the run: the memory plan
counts lifetimes in them and a backend emits the units as the graph lists them (``units``).
"""
from __future__ import annotations

import heapq

from ..graph import Graph, GraphError
from ..node import Node, Opcode


def _group(node: Node) -> str | None:
    """The fusion group whose loop computes ``node``, if any."""
    return node.meta.get("fusion_group") if node.kind.in_loop else None


def units(graph: Graph) -> list[list[Node]]:
    """The op calls of ``graph`` in its order, as units: each run of members of one fusion group
    side by side, and every other call alone (after ``order_units``, each group is one run)."""
    found: list[list[Node]] = []
    previous = None
    for node in graph.nodes:
        group = _group(node) if node.op is Opcode.CALL_FUNCTION else None
        if node.op is Opcode.CALL_FUNCTION and (group is None or group != previous):
            found.append([node])
        elif node.op is Opcode.CALL_FUNCTION:
            found[-1].append(node)
        previous = group
    return found


def order_units(graph: Graph) -> bool:
    """Reorders ``graph`` into the order its units run (Kahn's algorithm over units, taking the ready
    unit that appears first in the graph, so a graph already in that order stays as it is); returns
    whether a node moved."""
    nodes = graph.nodes
    steps: list[list[Node]] = []
    unit_of: dict[Node, int] = {}
    by_group: dict[str, int] = {}
    for node in nodes:
        if node.op is Opcode.PLACEHOLDER or node.op is Opcode.OUTPUT:
            continue
        group = _group(node)
        if group is not None and group in by_group:
            unit_of[node] = by_group[group]
            steps[unit_of[node]].append(node)
            continue
        if group is not None:
            by_group[group] = len(steps)
        unit_of[node] = len(steps)
        steps.append([node])
    waiting = [0] * len(steps)
    readers: list[set[int]] = [set() for _ in steps]
    for i, members in enumerate(steps):
        needs = {unit_of[used] for node in members for used in node.all_input_nodes if used in unit_of} - {i}
        waiting[i] = len(needs)
        for j in needs:
            readers[j].add(i)
    ready = [i for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order: list[Node] = [n for n in nodes if n.op is Opcode.PLACEHOLDER]
    done = 0
    while ready:
        i = heapq.heappop(ready)
        order += steps[i]
        done += 1
        for j in readers[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, j)
    if done != len(steps):
        stuck = [n.name for i, count in enumerate(waiting) if count for n in steps[i]]
        raise GraphError(f"fusion groups read one another in a cycle: {', '.join(stuck)}")
    order.append(graph.output_node)
    if order == list(nodes):
        return False
    graph.reorder(order)
    return True


__all__ = ["order_units", "units"]
