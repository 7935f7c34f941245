"""Output templates: a compiled graph returns a flat tuple of arrays; a template rebuilds the value
the function returned around them (tuples, lists, dicts, named tuples, and the Python values that
were constants of the trace).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..fx.graph import Graph
from ..fx.node import Node, iter_leaves
from ..tensor import Tensor


@dataclass(frozen=True)
class Slot:
    """Position ``index`` in the flat tuple a lowered graph returns."""
    index: int


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


class TupleOf(tuple):
    """A tuple of a subclass in a template (``max(dim)``'s ``(values, indices)``, a named tuple): the
    IR holds plain tuples, so the type is put back here and the result rebuilt as ``kind(*items)``."""

    def __new__(cls, kind: type, items: tuple) -> "TupleOf":
        template = super().__new__(cls, items)
        template.kind = kind
        return template


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


def template_filler(template: Any) -> Callable[[Sequence[Any], Callable[[int, Any], Any]], Any]:
    """A function ``fill(values, wrap)``: the template with slot ``i`` replaced by ``wrap(i, values[i])``.

    Written once per template as one Python expression (``(wrap(0, values[0]), [wrap(1, values[1])])``):
    every call of a compiled function rebuilds its result, and walking the template on each call cost
    2 us for W4's three outputs, a third of what a call spends in Python."""
    constants: list[Any] = []

    def constant(value: Any) -> str:
        constants.append(value)
        return f"c{len(constants) - 1}"

    def expression(part: Any) -> str:
        kind = type(part)
        if kind is Slot:
            return f"wrap({part.index}, values[{part.index}])"
        if kind is tuple:
            return "(" + "".join(f"{expression(v)}, " for v in part) + ")"
        if kind is list:
            return "[" + ", ".join(expression(v) for v in part) + "]"
        if kind is TupleOf:
            return f"{constant(part.kind)}(" + ", ".join(expression(v) for v in part) + ")"
        if kind is dict:
            return "{" + ", ".join(f"{constant(k)}: {expression(v)}" for k, v in part.items()) + "}"
        return constant(part)
    source = f"lambda values, wrap: {expression(template)}"
    return eval(source, {f"c{i}": value for i, value in enumerate(constants)})  # noqa: S307 - our own source


def flatten_output(graph: Graph) -> Any:
    """Makes the graph return a flat tuple of its output nodes; returns the template to rebuild the value."""
    leaves: list[Node] = []
    template = make_template(graph.output_node.args[0], leaves)
    graph.output_node.args = (tuple(leaves),)
    return template


def slots(template: Any) -> list[int]:
    """The slot indices of a template, in the order ``tensor_leaves`` walks the value it stands for."""
    return [slot.index for slot in iter_leaves(template, Slot)]


def tensor_leaves(value: Any) -> list[Tensor]:
    return list(iter_leaves(value, Tensor))


__all__ = ["Slot", "TupleOf", "flatten_output", "make_template", "slots", "template_filler", "tensor_leaves",
           "tuple_types", "with_tuple_types"]
