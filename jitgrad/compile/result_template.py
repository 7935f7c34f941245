"""A program's result template at run time: each call rebuilds the value the function returned
around the flat tuple its lowered graph returns.

A template is the returned value with a ``Slot`` for each output array and a ``TupleOf`` for each
tuple of a subclass; ``templates.py`` makes one from a traced graph, the warm-start index reads one
back from disk. Nothing here imports ``jitgrad.fx``: a warm process rebuilds results without it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence


@dataclass(frozen=True)
class Slot:
    """Position ``index`` in the flat tuple a lowered graph returns."""
    index: int


class TupleOf(tuple):
    """A tuple of a subclass in a template (``max(dim)``'s ``(values, indices)``, a named tuple): the
    IR holds plain tuples, so the type is put back here and the result rebuilt as ``kind(*items)``."""

    def __new__(cls, kind: type, items: tuple) -> "TupleOf":
        template = super().__new__(cls, items)
        template.kind = kind
        return template


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


__all__ = ["Slot", "TupleOf", "template_filler"]
