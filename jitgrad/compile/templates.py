"""Output templates: a compiled graph returns a flat tuple of arrays; a template rebuilds the value
the function returned around them (tuples, lists, dicts, named tuples, and the Python values that
were constants of the trace).

Made here from a traced graph's output; what a call rebuilds its result with (``Slot``, ``TupleOf``,
``template_filler``) is in ``result_template.py``, which a warm process imports without this module
and ``jitgrad.fx``.
"""
from __future__ import annotations

from typing import Any

from ..fx.graph import Graph
from ..fx.node import Node, Opcode, iter_leaves
from ..tensor import Tensor
from .result_template import GradAlias, InputAlias, LeafSlot, Slot, TupleOf


def make_template(value: Any, leaves: list[Node]) -> Any:
    """``value`` with each node replaced by a ``Slot`` and appended to ``leaves``."""
    if isinstance(value, Node):
        leaves.append(value)
        return Slot(len(leaves) - 1)
    if isinstance(value, tuple):
        return tuple(make_template(v, leaves) for v in value)
    if isinstance(value, list):
        return [make_template(v, leaves) for v in value]
    if isinstance(value, dict):
        return {k: make_template(v, leaves) for k, v in value.items()}
    return value


def tuple_types(value: Any) -> Any:
    """Where ``value`` (a traced function's result) holds tuples of a subclass: ``(kind, items)`` for
    a tuple, a list or dict of the same for lists and dicts, None where there are none."""
    if isinstance(value, (tuple, list)):
        items = [tuple_types(v) for v in value]
        if isinstance(value, tuple) and type(value) is not tuple:
            return (type(value), items)
        return items if any(i is not None for i in items) else None
    if isinstance(value, dict):
        items = {k: tuple_types(v) for k, v in value.items()}
        return items if any(i is not None for i in items.values()) else None
    return None


def with_tuple_types(template: Any, types: Any) -> Any:
    """``template`` with the tuple subclasses ``tuple_types`` found put back."""
    if types is None:
        return template
    if isinstance(types, tuple):
        kind, items = types
        return TupleOf(kind, tuple(with_tuple_types(t, i) for t, i in zip(template, items)))
    if isinstance(types, dict):
        return {k: with_tuple_types(t, types.get(k)) for k, t in template.items()}
    rebuilt = [with_tuple_types(t, i) for t, i in zip(template, types)]
    return tuple(rebuilt) if isinstance(template, tuple) else rebuilt


def flatten_output(graph: Graph) -> Any:
    """Makes the graph return a flat tuple of its output nodes; returns the template to rebuild the value."""
    leaves: list[Node] = []
    template = make_template(graph.output_node.args[0], leaves)
    graph.output_node.args = (tuple(leaves),)
    return template


def _view_of(node: Node) -> tuple[Node, tuple] | None:
    """The node ``node`` is a view op of, and the op as ``(op, args, kwargs)``; None if it is none."""
    if node.op is Opcode.CALL_FUNCTION and getattr(node.target, "view", False) \
            and node.args and isinstance(node.args[0], Node) \
            and not any(isinstance(v, Node) for v in iter_leaves((node.args[1:], node.kwargs), Node)):
        return node.args[0], (node.target, tuple(node.args[1:]), dict(node.kwargs))
    return None


def viewed_node(node: Node) -> tuple[Node, list[tuple]]:
    """The node ``node`` is a chain of view ops of (itself when none), and the chain's ops, first first."""
    views = []
    while (step := _view_of(node)) is not None:
        node = step[0]
        views.append(step[1])
    return node, views[::-1]


def _grad_viewed(node: Node, new_grads: dict[Node, int]) -> tuple[int, list[tuple]] | None:
    """The input whose new ``.grad`` ``node`` is, or is a chain of view ops of, and the chain's ops
    (first first): the walk stops at the first node that is a ``.grad``, which may itself be a view
    (a weight's gradient is a transpose)."""
    views = []
    while node not in new_grads:
        step = _view_of(node)
        if step is None:
            return None
        node = step[0]
        views.append(step[1])
    return new_grads[node], views[::-1]


def alias_inputs(result: Any, graph: Graph, input_names: list[str], writes: dict, grads: dict, returned: list,
                 returned_grad: list, requires_grad: list) -> Any:
    """The result template of a flattened step graph with each output that is an input, or a chain of
    view ops of one (of its value after the step's in-place writes too), as an ``InputAlias``, and each
    that is the new ``.grad`` of an input, or a chain of view ops of it, as a ``GradAlias``: eager mode
    returns memory shared with the input or the ``.grad``. ``returned``, ``returned_grad`` (the input
    whose ``.grad`` the leaf is) and ``requires_grad`` (False, or the class of a leaf that requires
    grad, or True) are per tensor leaf of the result, as ``Captured`` has them. An output that
    requires grad is the input itself, a ``LeafSlot`` for a leaf, or keeps its slot."""
    outputs = graph.output_node.args[0]
    inputs = {name: i for i, name in enumerate(input_names)}
    written = {outputs[slot.index]: index for index, slot in writes.items()}
    new_grads = {outputs[slot.index]: index for index, slot in grads.items() if slot is not None}
    position = iter(range(len(returned)))

    def visit(part: Any) -> Any:
        kind = type(part)
        if kind is Slot:
            k = next(position)
            if requires_grad[k] is True or (requires_grad[k] is not False and returned[k] is not None):
                # ``return w``: the parameter itself, as eagerly; a computed result keeps its slot
                return part if returned[k] is None else InputAlias(returned[k], (), same=True)
            base, views = viewed_node(outputs[part.index])
            index = inputs.get(base.name) if base.op is Opcode.PLACEHOLDER else written.get(base)
            alias = None if index is None else InputAlias(index, tuple(views), same=not views and returned[k] == index)
            if requires_grad[k] is not False:   # a leaf made inside: over the input's memory if a view of it
                return LeafSlot(part.index, requires_grad[k], alias)
            if alias is not None:
                return alias
            grad = _grad_viewed(outputs[part.index], new_grads)
            if grad is not None:
                index, views = grad
                return GradAlias(index, tuple(views), same=not views and returned_grad[k] == index)
            return part
        if kind is tuple or kind is list:
            return kind(visit(v) for v in part)
        if kind is dict:
            return {key: visit(v) for key, v in part.items()}
        return part
    return visit(result)


def slots(template: Any) -> list[int]:
    """The slot indices of a template, in the order ``tensor_leaves`` walks the value it stands for."""
    return [slot.index for slot in iter_leaves(template, Slot)]


def tensor_leaves(value: Any) -> list[Tensor]:
    return list(iter_leaves(value, Tensor))


def mark_inference(result: Any, arguments: list) -> None:
    """Under ``inference_mode`` every tensor an eager op makes is an inference tensor but a view of a
    normal one; so is every tensor a compiled call returns but the arguments it returns themselves and
    its views of them (``InputAlias``: eager view ops, which decided already)."""
    given = {id(a) for a in arguments}
    roots = {id(a._view[0] if a._view is not None else a) for a in arguments}
    for tensor in tensor_leaves(result):
        if id(tensor) not in given and (tensor._view is None or id(tensor._view[0]) not in roots):
            tensor._is_inference = True


__all__ = ["alias_inputs", "flatten_output", "make_template", "mark_inference", "slots", "tensor_leaves", "tuple_types",
           "viewed_node", "with_tuple_types"]
