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
    """A hashable stand-in for an argument: nodes by identity (a node stands for itself: it compares
    by identity, and no other stand-in is a node), arrays by content. The common kinds are told by
    their exact type first (the pass asks for every argument of a long trace)."""
    kind = type(value)
    if kind is Node:
        return value
    if kind is tuple:
        return ("tuple", tuple([_key(v) for v in value]))
    if kind is dict:
        return ("dict", tuple([(k, _key(v)) for k, v in value.items()]))
    if kind is int or kind is str or kind is bool:
        return (kind.__name__, value)
    return _other_key(value)


def _other_key(value: Any) -> Hashable:
    if isinstance(value, Node):
        return value
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


def _arguments_key(args: tuple) -> Hashable:
    """``args``'s stand-in: the tuple itself when it holds only nodes (most calls: ``add(a, b)``), which
    no other argument tuple's stand-in (a tagged tuple) can equal."""
    for value in args:
        if type(value) is not Node:
            return _key(args)
    return args


_NO_KWARGS = _key({})


def _call_key(node: Node, args: tuple, kwargs: dict) -> Hashable:
    """What a call must share with another to compute the same value, reading ``args`` and ``kwargs``
    (its own, or as it will read them)."""
    return (id(node.target), _arguments_key(args), _key(kwargs) if kwargs else _NO_KWARGS,
            node.meta.get("no_grad", False))


def eliminate_common_subexpressions(graph: Graph) -> Graph:
    """Each duplicate's readers read the first node instead. A reader is rewritten once, after the walk,
    whatever number of its inputs were duplicates: a ``stack`` of an unrolled loop's 500 steps reads
    500 of them, and rewriting it per duplicate rebuilt its arguments 500 times. While walking, a
    node's key reads its inputs through ``kept`` (a duplicate stands for the node it duplicates), so
    that it is keyed as it will read.

    A call is first told by its op and its arguments' values as they are (equal full keys have equal
    values), and keyed in full only once a second call shares them: a call of a long trace mostly
    reads nodes no other call of its op reads, and its full key (attributes, grad mode, arguments told
    apart by type) is then never needed."""
    record = graph.record_pass("eliminate_common_subexpressions")
    seen: dict[Hashable, Node] = {}
    # (op, arguments, keyword arguments' values) -> the one call so far that reads them, with its
    # arguments as it will read them (equal ones may differ in type: 0.0 and -0.0), not keyed in full
    # yet; None once calls sharing them are keyed in full
    alone: dict[tuple, tuple[Node, tuple, dict] | None] = {}
    kept: dict[Node, Node] = {}  # duplicate -> the node its readers read instead
    duplicates = kept.keys()
    call, constant = Opcode.CALL_FUNCTION, Opcode.GET_ATTR
    for node in graph.nodes:
        op = node.op
        if op is call:
            # the node's fields read directly (this folder's own): a property each costs a tenth of the walk
            args, kwargs = node._args, node._kwargs
            if kept and not duplicates.isdisjoint(node._inputs):
                args, kwargs = node.inputs_replaced(kept)
            short = (id(node.target), args, tuple(kwargs.values()) if kwargs else ())
            try:
                first_reader = alone.get(short, alone)
            except TypeError:  # an argument that is no key of its own (an array): keyed in full
                first_reader = None
            if first_reader is alone:  # the first call of its op on these arguments
                alone[short] = (node, args, kwargs)
                continue
            if first_reader is not None:
                alone[short] = None
                seen.setdefault(_call_key(*first_reader), first_reader[0])
            key: Hashable = _call_key(node, args, kwargs)
        elif op is constant:
            key = ("constant", _key(graph.constants[node.target]._data))
        else:
            continue
        first = seen.setdefault(key, node)
        if first is not node:
            kept[node] = first
            record.changes.append(f"{node.name} -> {first.name}")
    readers = dict.fromkeys(user for duplicate in kept for user in duplicate.users if user not in kept)
    for reader in readers:
        reader.replace_inputs(kept)
    graph.erase_nodes(list(kept))  # at once: erasing one by one walks the node list each time
    return graph
