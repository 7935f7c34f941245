"""``topological_sort``: puts the nodes in an order where every value is defined before it is read.

Stable: nodes already in a valid order stay where they are, and among nodes that are ready the one
that came first goes first, so a sorted graph prints as it did. A cycle cannot be ordered; the error
names the nodes on it.
"""
from __future__ import annotations

import heapq
from typing import Sequence

from ..graph import Graph, GraphError
from ..node import Node, Opcode


def _find_cycle(remaining: set[Node]) -> list[Node]:
    """A cycle among ``remaining`` (each of which waits on another of them)."""
    node = next(iter(remaining))
    path: list[Node] = []
    while node not in path:
        path.append(node)
        node = next(n for n in node.all_input_nodes if n in remaining)
    return path[path.index(node):]


def _first_out_of_order(nodes: tuple[Node, ...], position: dict[Node, int]) -> int:
    """The position of the first node that reads itself or a later node, or that is an output before
    the last place; ``len(nodes)`` when there is none. The nodes before it keep their places in the
    stable order: each reads only nodes before it."""
    last, output, at = len(nodes) - 1, Opcode.OUTPUT, position.get
    for i, node in enumerate(nodes):
        if node.op is output and i != last:
            return i
        for source in node._inputs:  # the field itself (this folder's own): a property costs a tenth here
            if at(source, -1) >= i:
                return i
    return len(nodes)


def topological_order(graph: Graph) -> list[Node]:
    """The graph's nodes in the stable order described above (a pass that inserts a node before
    values it reads puts the graph in order with ``graph.reorder(topological_order(graph))``)."""
    return stable_order(graph.nodes)


def stable_order(nodes: Sequence[Node]) -> list[Node]:
    """``nodes`` (a graph's, or a new order of them a pass is about to give it) in the stable order
    described above: a pass reordering its graph puts the new order in order at once."""
    nodes = tuple(nodes)
    position = dict(zip(nodes, range(len(nodes))))  # in C
    scan = _first_out_of_order(nodes, position)
    count = len(nodes)
    if scan == count:  # a fresh trace is in order: the order is then the graph's own
        return list(nodes)
    # The nodes before the first one out of place, as they are; then the rest in their order, each
    # taken once ready (every input taken); a node passed over because it was not ready waits,
    # counting the inputs it still needs, and once it has them goes into a heap (of positions, which
    # are unique) that goes first, all of it before the scan: so the ready node that came first always
    # goes first, as above. Only the nodes passed over are counted for (a taken node's readers are
    # looked at only while some node waits): a long graph with a few nodes out of place pays for those.
    order: list[Node] = list(nodes[:scan])
    taken: set[Node] = set(order)
    needs: dict[Node, int] = {}  # a node passed over -> how many of its inputs are not taken yet
    late: list[int] = []
    outputs: list[Node] = []
    output_op = Opcode.OUTPUT
    heappop, heappush = heapq.heappop, heapq.heappush
    while True:
        if late:
            node = nodes[heappop(late)]
        elif scan < count:
            node, scan = nodes[scan], scan + 1
            if node.op is output_op:
                outputs.append(node)
                continue
            inputs = node._inputs
            if not taken.issuperset(inputs):
                missing = len([m for m in inputs if m not in taken and m in position])  # others: not in the graph
                if missing:
                    needs[node] = missing
                    continue
        else:
            break
        order.append(node)
        taken.add(node)
        if needs:
            for user in node.users:
                left = needs.get(user)
                if left is not None:
                    if left == 1:
                        del needs[user]
                        heappush(late, position[user])
                    else:
                        needs[user] = left - 1
    if len(order) + len(outputs) != count:
        cycle = _find_cycle(set(nodes) - set(order) - set(outputs))
        names = " -> ".join(n.name for n in reversed(cycle))
        raise GraphError(f"the graph has a cycle: {names} -> {cycle[-1].name}")
    return order + outputs


def topological_sort(graph: Graph) -> Graph:
    record = graph.record_pass("topological_sort")
    nodes = graph.nodes
    order = topological_order(graph)
    if order != list(nodes):  # (nodes compare by identity) a fresh trace is in order already: nothing to put back
        record.changes = [f"moved {n.name}" for i, n in enumerate(order) if nodes[i] is not n]
        graph.reorder(order)
    return graph
