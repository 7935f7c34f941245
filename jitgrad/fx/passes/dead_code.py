"""``eliminate_dead_code``: removes every node that no output needs.

Registry ops are pure, so a value nobody reads can go. In a graph captured with ``backward()`` this
is PyTorch's ExecInfo done statically: the backward nodes that only lead to gradients nobody asked for
(an input that does not require grad, an output that was dropped) disappear. Placeholders stay: they
are the function's signature.
"""
from __future__ import annotations

from operator import attrgetter

from ..graph import Graph
from ..node import Opcode

_NAME = attrgetter("name")


def eliminate_dead_code(graph: Graph) -> Graph:
    record = graph.record_pass("eliminate_dead_code")
    dead: set = set()
    call, constant = Opcode.CALL_FUNCTION, Opcode.GET_ATTR
    for node in reversed(graph.nodes):  # readers first: a node whose readers all go, goes too
        if (node.op is call or node.op is constant) and dead.issuperset(node.users):
            dead.add(node)
    order = list(filter(dead.__contains__, graph.nodes))
    record.changes.extend(map("removed ".__add__, map(_NAME, reversed(order))))  # in C: thousands, in a long trace
    graph.erase_nodes(order)  # at once: one walk of the node list
    return graph
