"""``eliminate_common_subexpressions``: one node per distinct computation.

Two calls of the same op on the same inputs with equal attributes compute the same value (ops are
pure), and two constants with equal dtype, shape and bytes are the same constant. A backward often
recomputes what the forward has (``x.exp()`` again for ``exp``'s gradient) or repeats itself across
gradient slots; this pass makes them share one node.
"""
from __future__ import annotations

import math
from typing import Any, Hashable

import numpy as np

from ..graph import Graph
from ..node import Node, Opcode


def _key(value: Any) -> Hashable:
    """A hashable stand-in for an argument: nodes by identity, arrays by content. The common kinds are
    told by their exact type first (the pass asks for every argument of a long trace)."""
    kind = type(value)
    if kind is Node:
        return ("node", id(value))
    if kind is tuple:
        return ("tuple", tuple([_key(v) for v in value]))
    if kind is dict:
        return ("dict", tuple([(k, _key(v)) for k, v in value.items()]))
    if kind is int or kind is str or kind is bool:
        return (kind.__name__, value)
    return _other_key(value)


def _other_key(value: Any) -> Hashable:
    if isinstance(value, Node):
        return ("node", id(value))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple([_key(v) for v in value]))
    if isinstance(value, dict):
        return ("dict", tuple((k, _key(v)) for k, v in value.items()))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if isinstance(value, float):  # keeps 1 and 1.0 apart (they promote differently), and 0.0 and -0.0
        return ("float", value, math.copysign(1.0, value))
    return (type(value).__name__, value)


def eliminate_common_subexpressions(graph: Graph) -> Graph:
    record = graph.record_pass("eliminate_common_subexpressions")
    seen: dict[Hashable, Node] = {}
    duplicates: list[Node] = []
    for node in graph.nodes:
        if node.op is Opcode.GET_ATTR:
            key: Hashable = ("constant", _key(graph.constants[node.target]._data))
        elif node.op is Opcode.CALL_FUNCTION:
            key = (id(node.target), _key(node.args), _key(node.kwargs), node.meta.get("no_grad", False))
        else:
            continue
        first = seen.setdefault(key, node)
        if first is not node:
            node.replace_all_uses_with(first)
            duplicates.append(node)
            record.changes.append(f"{node.name} -> {first.name}")
    graph.erase_nodes(duplicates)  # at once: erasing one by one walks the node list each time
    return graph
