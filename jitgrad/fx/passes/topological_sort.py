"""``topological_sort``: puts the nodes in an order where every value is defined before it is read.

Stable: nodes already in a valid order stay where they are, and among nodes that are ready the one
that came first goes first, so a sorted graph prints as it did. A cycle cannot be ordered; the error
names the nodes on it.
"""
from __future__ import annotations

import heapq

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


def _in_order(nodes: tuple[Node, ...], position: dict[Node, int]) -> bool:
    """Whether every node comes after the nodes it reads and the output is last, where the stable
    order keeps every node in place."""
    last, output, at = len(nodes) - 1, Opcode.OUTPUT, position.get
    for i, node in enumerate(nodes):
        if node.op is output and i != last:
            return False
        for source in node.all_input_nodes:
            if at(source, -1) >= i:
                return False
    return True


def topological_order(graph: Graph) -> list[Node]:
    """The graph's nodes in the stable order described above (a pass that inserts a node before
    values it reads puts the graph in order with ``graph.reorder(topological_order(graph))``)."""
    nodes = graph.nodes
    position = {n: i for i, n in enumerate(nodes)}
    if _in_order(nodes, position):  # a fresh trace is: the order is then the graph's own
        return list(nodes)
    # The nodes in their order, each taken once ready (every input taken); a node passed over
    # because it was not ready waits, counting the inputs it still needs, and once it has them goes
    # into a heap (of positions, which are unique) that goes first, all of it before the scan: so
    # the ready node that came first always goes first, as above. Only the nodes passed over are
    # counted for: a long graph with a few nodes out of place pays for those.
    taken: set[Node] = set()
    needs: dict[Node, int] = {}  # a node passed over -> how many of its inputs are not taken yet
    order: list[Node] = []
    late: list[int] = []
    output_op = Opcode.OUTPUT
    scan, count = 0, len(nodes)
    while True:
        if late:
            node = nodes[heapq.heappop(late)]
        elif scan < count:
            node, scan = nodes[scan], scan + 1
            if node.op is output_op:
                continue
            inputs = node.all_input_nodes
            if not taken.issuperset(inputs):
                missing = len([m for m in inputs if m not in taken and m in position])  # others: not in the graph
                if missing:
                    needs[node] = missing
                    continue
        else:
            break
        order.append(node)
        taken.add(node)
        for user in node.users:
            left = needs.get(user)
            if left is not None:
                if left == 1:
                    del needs[user]
                    heapq.heappush(late, position[user])
                else:
                    needs[user] = left - 1
    output = [n for n in nodes if n.op is Opcode.OUTPUT]
    remaining = set(nodes) - set(order) - set(output)
    if remaining:
        cycle = _find_cycle(remaining)
        names = " -> ".join(n.name for n in reversed(cycle))
        raise GraphError(f"the graph has a cycle: {names} -> {cycle[-1].name}")
    return order + output


def topological_sort(graph: Graph) -> Graph:
    record = graph.record_pass("topological_sort")
    nodes = graph.nodes
    order = topological_order(graph)
    record.changes = [f"moved {n.name}" for i, n in enumerate(order) if nodes[i] is not n]
    if record.changes:  # a fresh trace is in order already: nothing to check and put back
        graph.reorder(order)
    return graph
