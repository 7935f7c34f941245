"""Which stretches of a graph's node list repeat, for ``roll_loops``: each node's signature (what the
k-th node of every iteration of a loop must share: op, attributes, shapes, dtypes, grad mode; a row
read ``x[t]`` matches any other row read of the same array) and the candidate runs of repeated
signatures, found without checking every rotation of a long run.
"""
from __future__ import annotations

import math
from typing import Any, Hashable

import numpy as np

from ...ops.registry import REGISTRY
from ..loop import Loop
from ..node import Node, Opcode, iter_nodes


def _structure(value: Any) -> Hashable:
    """A hashable stand-in for an argument, with every node the same: what two steps must share. The
    common kinds are told by their exact type first (the pass asks for every node of a long trace)."""
    kind = type(value)
    if kind is Node:
        return "node"
    if kind is tuple:
        return ("tuple", tuple([_structure(v) for v in value]))
    if kind is dict:
        return ("dict", tuple([(k, _structure(v)) for k, v in value.items()]))
    if kind is int or kind is str or kind is bool:
        return (kind.__name__, value)
    return _other_structure(value)


_NODES_STRUCTURES: dict[int, Hashable] = {}  # number of arguments -> their structure when all are nodes


def _arguments_structure(node: Node) -> Hashable:
    """``_structure(node.args)``, found without a walk when the arguments are distinct nodes and are
    what the node reads (most calls: its inputs are then its arguments themselves)."""
    args = node._args  # the fields themselves (this folder's own): a property per node costs here
    if node._inputs != args:
        for value in args:
            if type(value) is not Node:
                return _structure(args)
    structure = _NODES_STRUCTURES.get(len(args))
    if structure is None:
        structure = _NODES_STRUCTURES[len(args)] = ("tuple", ("node",) * len(args))
    return structure


_NO_KWARGS = _structure({})


def _other_structure(value: Any) -> Hashable:
    if isinstance(value, Node):
        return "node"
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_structure(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _structure(v)) for k, v in value.items()))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if isinstance(value, float):  # 1 and 1.0 promote differently; 0.0 and -0.0 differ
        return ("float", value, math.copysign(1.0, value))
    return (type(value).__name__, value)


GETITEM = REGISTRY["getitem"]


def row_read(node: Node) -> int | None:
    """``t`` when ``node`` is ``x[t]`` (``getitem`` of one non-negative int), else None."""
    if node.target is not GETITEM:
        return None
    kwargs = node.kwargs
    if len(kwargs) != 1 or "index" not in kwargs:
        return None
    index = kwargs["index"]
    if isinstance(index, tuple) and len(index) == 1 and type(index[0]) is int and index[0] >= 0:
        return index[0]
    return None


_DTYPE_STRS: dict[np.dtype, str] = {}


_DTYPE_TYPES: set[type] = set()  # the classes of the dtypes in ``_DTYPE_STRS``: asked before a lookup


def _dtype_str(dtype: np.dtype) -> str:
    """``dtype.str``, which numpy builds anew at each call, kept for each of the few dtypes seen."""
    text = _DTYPE_STRS.get(dtype)
    if text is None:
        text = _DTYPE_STRS[dtype] = dtype.str
        _DTYPE_TYPES.add(type(dtype))
    return text


def reads_arguments(node: Node) -> bool:
    """Whether the nodes ``node`` reads, in order, repeats included, are its arguments themselves: they
    are all nodes and no keyword argument holds any (most calls). A question of the arguments' structure,
    so nodes of one signature answer alike."""
    args, kwargs = node.args, node.kwargs
    if not kwargs and node.input_nodes == args:  # distinct nodes, and nothing else
        return True
    return all(type(value) is Node for value in args) and \
        not any(isinstance(value, (Node, tuple, list, dict)) for value in kwargs.values())


def input_leaves(node: Node) -> list[Node]:
    """The nodes ``node`` reads, in order, repeats included, found without a walk when they are its
    arguments (``reads_arguments``)."""
    if reads_arguments(node):
        return list(node.args)
    return list(iter_nodes((node.args, node.kwargs)))


def _signature(node: Node) -> Hashable:
    target = node.target
    if node.op is not Opcode.CALL_FUNCTION or isinstance(target, Loop):
        return ("unique", id(node))
    get = node.meta.get
    dtype = get("dtype")
    text = _DTYPE_STRS.get(dtype) if type(dtype) in _DTYPE_TYPES else None  # a dtype seen before
    if text is not None:
        dtype = text
    elif type(dtype) is tuple:
        dtype = tuple(_dtype_str(d) for d in dtype)
    elif isinstance(dtype, np.dtype):
        dtype = _dtype_str(dtype)
    meta = (get("shape"), dtype, get("phase"), get("no_grad"), get("python_number"))
    kwargs = node.kwargs
    row = row_read(node) if target is GETITEM else None  # a row read's one keyword argument is its row
    return (id(target), _arguments_structure(node), _structure(kwargs) if kwargs and row is None else _NO_KWARGS,
            meta, row is None)


class Signatures:
    """Each node's signature as a small int, the same for equal signatures. Kept from one search to
    the next (rolling a loop rewires its readers, which leaves their signatures as they were), and
    compared as ints: a search hashes every node's signature and compares stretches of hundreds of
    them, where a signature is a nested tuple whose hash Python does not keep."""

    def __init__(self) -> None:
        self._of: dict[Node, int] = {}         # holds the nodes, so an ``id`` in a signature stays unique
        self._numbers: dict[Hashable, int] = {}

    def of(self, nodes: list[Node]) -> list[int]:
        known, numbers = self._of, self._numbers
        found = list(map(known.get, nodes))  # in C: a search after the first finds most nodes numbered
        for i, number in enumerate(found):
            if number is None:
                node = nodes[i]
                found[i] = known[node] = numbers.setdefault(_signature(node), len(numbers))
        return found


def candidates(nodes: list[Node], first: int, rejected: dict[int, tuple[int, int]], least: int,
                known: Signatures, shifted: dict[tuple[int, int], tuple[int, int]]):
    """(start, period, count) of each stretch of repeated signatures, from position ``first`` on. A
    stretch of one period starting inside the span of one rejected before (``rejected``: period ->
    span) is not offered again: checking every rotation of a long run would make the pass quadratic
    in the graph's length. Nor is one that only shifts a rejected stretch by whole periods
    (``shifted``: (period, start modulo the period) -> span), whose iterations would be read as that
    stretch's were, while its other rotations are still offered."""
    signatures = known.of(nodes)
    following: dict[int, int] = {}
    next_same = [0] * len(nodes)
    for i in range(len(nodes) - 1, first - 1, -1):  # no stretch starts before ``first``
        next_same[i] = following.get(signatures[i], -1)
        following[signatures[i]] = i
    # (period, start modulo the period) -> (start, count) of the last stretch counted: a stretch
    # starting k periods into it repeats count - k times (the signatures repeat with that period up
    # to the same place), which counting again at every start would find at quadratic cost
    counted: dict[tuple[int, int], tuple[int, int]] = {}
    i = first
    while i < len(nodes):
        period = next_same[i] - i
        low, high = rejected.get(period, (0, 0))
        if next_same[i] < 0 or period > (len(nodes) - i) // least or low <= i < high:
            i += 1
            continue
        low, high = shifted.get((period, i % period), (0, 0))
        if low <= i < high:
            i += 1
            continue
        start, count = counted.get((period, i % period), (0, 0))
        if start <= i < start + count * period:
            count -= (i - start) // period
        else:
            count = 1
            while i + (count + 1) * period <= len(nodes) and \
                    signatures[i + count * period:i + (count + 1) * period] == signatures[i:i + period]:
                count += 1
            counted[(period, i % period)] = (i, count)
        if count >= least:
            yield i, period, count
        i += 1


__all__ = ["GETITEM", "Signatures", "candidates", "input_leaves", "reads_arguments", "row_read"]
