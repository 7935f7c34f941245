"""``simplify_algebra``: rewrites that make a value cheaper without changing it.

``x * 1``, ``x / 1``, ``x + 0``, ``x - 0`` (the backward adds zero gradients for outputs nobody used;
the constant may be expanded or reshaped, as a whole step's gradient of its loss is),
a reshape of a reshape, a transpose undone by the same transpose, a permute of a permute, reshapes,
permutes and expands that keep the shape, and a stack of every row of an array, in order (an unrolled
loop's ``x[t]`` put back together, see ``batch_matrix_products``); a cross-entropy's gradient,
``log_softmax_backward`` of ``nll_loss_backward``, as the one op ``cross_entropy_backward`` (the same
arithmetic on each element, without the one-hot array between them). A rewrite to an existing value
happens only when that value already has the node's shape and dtype (``int_tensor * 1.0`` is a float:
it stays). Nodes left unread are removed by ``eliminate_dead_code``.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...ops.registry import REGISTRY
from ..graph import Graph
from ..node import Node, Opcode, is_call
from ..node_meta import call_meta


# Ops whose result holds only their input's values: a constant seen through them is still full of its value.
_SAME_VALUE_OPS = (REGISTRY["expand"], REGISTRY["reshape"])
_CALL = Opcode.CALL_FUNCTION


def _equals(graph: Graph, value: Any, scalar: float) -> bool:
    """Whether ``value`` is the Python number ``scalar`` or a constant tensor full of it, also seen
    through an ``expand`` or a ``reshape`` (a whole step's backward starts from the loss's gradient, a
    constant one expanded to the shape of what it multiplies: ``x * expand(1)`` is ``x``)."""
    while isinstance(value, Node) and value.target in _SAME_VALUE_OPS:
        value = value.args[0]
    if isinstance(value, Node):
        return value.op is Opcode.GET_ATTR and bool(np.all(graph.constants[value.target]._data == scalar))
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == scalar


def same_value_type(node: Node, other: Any) -> bool:
    """Whether ``other`` is a node whose value has ``node``'s shape and dtype: a tensor, not a Python
    number's node (``loss * scale``'s gradient ``1 * scale`` is a 0-d tensor, ``scale`` a number that a
    reshape cannot take)."""
    return isinstance(other, Node) and other.meta.get("shape") == node.meta["shape"] \
        and other.meta.get("dtype") == node.meta["dtype"] and not other.meta.get("python_number")


def _identity(left: float | None, right: float | None) -> Callable[[Graph, Node], Node | None]:
    """``op(x, e) == x`` for the identity element ``e`` on the given side(s)."""
    def rule(graph: Graph, node: Node) -> Node | None:
        a, b = node.args
        if type(a) is Node and type(b) is Node and a.op is _CALL and b.op is _CALL \
                and a.target not in _SAME_VALUE_OPS and b.target not in _SAME_VALUE_OPS:
            return None  # two computed values (most of a long trace's arithmetic): neither is a constant
        if right is not None and _equals(graph, b, right) and same_value_type(node, a):
            return a
        if left is not None and _equals(graph, a, left) and same_value_type(node, b):
            return b
        return None
    return rule


def _wrap(dims: tuple[int, ...], ndim: int) -> tuple[int, ...]:
    return tuple(d % ndim for d in dims) if ndim else dims


def _reshape(graph: Graph, node: Node) -> Node | None:
    (source,) = node.args
    if source.op is Opcode.CALL_FUNCTION and source.target is node.target:
        node.args = source.args  # reshape(reshape(x)) reads x directly
        source = node.args[0]
    return source if same_value_type(node, source) else None


def _transpose(graph: Graph, node: Node) -> Node | None:
    (source,) = node.args
    if source.op is not Opcode.CALL_FUNCTION or source.target is not node.target:
        return None
    ndim = len(node.meta["shape"])
    outer = set(_wrap((node.kwargs["dim0"], node.kwargs["dim1"]), ndim))
    inner = set(_wrap((source.kwargs["dim0"], source.kwargs["dim1"]), ndim))
    return source.args[0] if outer == inner else None


def _permute(graph: Graph, node: Node) -> Node | None:
    (source,) = node.args
    ndim = len(node.meta["shape"])
    dims = _wrap(tuple(node.kwargs["dims"]), ndim)
    if source.op is Opcode.CALL_FUNCTION and source.target is node.target:
        inner = _wrap(tuple(source.kwargs["dims"]), ndim)
        node.args, node.kwargs = source.args, {**node.kwargs, "dims": tuple(inner[d] for d in dims)}
        source, dims = node.args[0], node.kwargs["dims"]
    return source if dims == tuple(range(ndim)) and same_value_type(node, source) else None


def row_of(value: Any) -> tuple[Node, int] | None:
    """``(x, i)`` when ``value`` is ``x[i]`` for one integer ``i`` (counted from the start)."""
    if not is_call(value, "getitem"):
        return None
    index = value.kwargs["index"]
    if len(index) != 1 or not isinstance(index[0], (int, np.integer)) or isinstance(index[0], bool):
        return None
    source = value.args[0]
    return source, int(index[0]) % source.meta["shape"][0]


def _stack(graph: Graph, node: Node) -> Node | None:
    """``stack([x[0], x[1], ..., x[n - 1]])`` of every row of ``x`` in order is ``x``."""
    values = node.args[0]
    rows = [row_of(v) for v in values]
    if node.kwargs["dim"] != 0 or rows[0] is None:
        return None
    source = rows[0][0]
    whole = source.meta["shape"][0] == len(values) and all(r == (source, i) for i, r in enumerate(rows))
    return source if whole and same_value_type(node, source) else None


def _log_softmax_backward(graph: Graph, node: Node) -> Node | None:
    """``log_softmax_backward(nll_loss_backward(g, target), y, dim=1)``, a cross-entropy's gradient, is
    ``cross_entropy_backward(g, target, y)``: one op that writes each row's gradient from its target,
    where the two would write the one-hot gradient, then read it back to sum its rows. Only where every
    value has the result's dtype (the fused kernel computes in it)."""
    dense, output = node.args
    if not is_call(dense, "nll_loss_backward") or node.kwargs["dim"] % 2 != 1 or len(node.meta["shape"]) != 2:
        return None
    grad, target = dense.args
    if not (isinstance(grad, Node) and grad.meta.get("dtype") == output.meta["dtype"] == node.meta["dtype"]
            and dense.meta["dtype"] == node.meta["dtype"] and dense.meta["shape"] == node.meta["shape"]):
        return None
    fused = REGISTRY["cross_entropy_backward"]
    kwargs = {k: dense.kwargs[k] for k in ("reduction", "ignore_index") if k in dense.kwargs}
    phase = {k: node.meta[k] for k in ("phase", "no_grad") if k in node.meta}
    return graph.call_function(fused, (grad, target, output), kwargs,
                               {**call_meta(fused, (grad, target, output), kwargs), **phase}, before=node)


def _same_shape(graph: Graph, node: Node) -> Node | None:
    (source,) = node.args
    return source if same_value_type(node, source) else None


RULES: dict[str, Callable[[Graph, Node], Node | None]] = {
    "mul": _identity(1.0, 1.0),
    "div": _identity(None, 1.0),
    "add": _identity(0.0, 0.0),
    "sub": _identity(None, 0.0),
    "reshape": _reshape,
    "transpose": _transpose,
    "permute": _permute,
    "expand": _same_shape,
    "stack": _stack,
    "log_softmax_backward": _log_softmax_backward,
}


def simplify_algebra(graph: Graph) -> Graph:
    record = graph.record_pass("simplify_algebra")
    by_op = {REGISTRY[name]: rule for name, rule in RULES.items()}  # a node's rule found by its target
    for node in graph.nodes:
        rule = by_op.get(node.target)
        if rule is None:
            continue
        before = (node._args, node._kwargs)  # the fields themselves (this folder's own): no property call
        replacement = rule(graph, node)
        if replacement is not None:
            graph.replace_node(node, replacement)
            record.changes.append(f"{node.name} -> {replacement.name}")
        elif (node._args, node._kwargs) != before:
            record.changes.append(f"{node.name} now reads {node.args[0].name}")
    return graph
