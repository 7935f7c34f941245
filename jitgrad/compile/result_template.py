"""A program's result template at run time: each call rebuilds the value the function returned
around the flat tuple its lowered graph returns.

A template is the returned value with a ``Slot`` for each output array (a ``LeafSlot`` for a leaf
that requires grad), an ``InputAlias`` for each output that is an input or a view of one, a
``GradAlias`` for each that is an input's new ``.grad`` or a view of it, and a ``TupleOf`` for each
tuple of a subclass;
``templates.py`` makes one from a traced graph, the warm-start index reads one back from disk.
Nothing here imports ``jitgrad.fx``: a warm process rebuilds results without it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence


@dataclass(frozen=True)
class Slot:
    """Position ``index`` in the flat tuple a lowered graph returns."""
    index: int


@dataclass(frozen=True)
class LeafSlot:
    """Position ``index``, for a result that is a leaf requiring grad, made inside the function
    (``w.detach().requires_grad_()``, ``nn.Parameter(...)``): a call returns one too, of the class the
    trace returned, as eager mode does (until 2026-11-28 a plain tensor that did not require grad,
    so a later backward through it raised, or left it out silently). Over the memory of an input
    where it is a detached view of one (``alias``), as eagerly, else over the kernel's array."""
    index: int
    kind: type
    alias: InputAlias | None = None

    def made(self, tensor: Any, inputs: Sequence[Any]) -> Any:
        data = tensor._data if self.alias is None else self.alias.of(inputs)._data
        return self.kind._make(data, True)


class TupleOf(tuple):
    """A tuple of a subclass in a template (``max(dim)``'s ``(values, indices)``, a named tuple): the
    IR holds plain tuples, so the type is put back here and the result rebuilt as ``kind(*items)``."""

    def __new__(cls, kind: type, items: tuple) -> "TupleOf":
        template = super().__new__(cls, items)
        template.kind = kind
        return template


class InputAlias:
    """A result the function returned as one of its inputs, or as a view of one (``x.t()``, ``w[0]``,
    ``x.detach()``): eager mode returns memory shared with the input, so a call makes the same views
    of the input, after its in-place writes, rather than handing out the kernel's copy. ``same``: the
    input object itself; ``views``: ``(op, args, kwargs)`` run on it in turn under ``no_grad``."""

    def __init__(self, index: int, views: tuple, same: bool) -> None:
        self.index, self.views, self.same = index, views, same

    def of(self, inputs: Sequence[Any]) -> Any:
        return self._viewed(inputs[self.index])

    def _viewed(self, value: Any) -> Any:
        from ..autograd.grad_mode import no_grad
        from ..tensor import Tensor
        if self.same:
            return value
        if not self.views:   # ``x.detach()``, ``x.data``: a new tensor over the input's memory
            return Tensor._make(value._data)
        with no_grad():
            for op, args, kwargs in self.views:
                value = op(value, *args, **kwargs)
        return value


class GradAlias(InputAlias):
    """A result the function returned as the ``.grad`` input ``index`` has after the step (``return
    loss, w.grad``), or as a view of it: eager mode returns that tensor itself, so that scaling it in
    place (an all-reduce, a clip outside) changes what the next ``opt.step()`` reads. A call returns
    the ``.grad`` as the step left it (the tensor it was written into, or the new one), not the
    kernel's copy."""

    def of(self, inputs: Sequence[Any]) -> Any:
        return self._viewed(inputs[self.index]._grad)


def template_filler(template: Any) -> Callable[[Sequence[Any], Callable[[int, Any], Any]], Any]:
    """A function ``fill(values, wrap, inputs=None)``: the template with slot ``i`` replaced by
    ``wrap(i, values[i])`` and each ``InputAlias`` by its view of ``inputs``.

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
        if kind is LeafSlot:
            return f"{constant(part)}.made(wrap({part.index}, values[{part.index}]), inputs)"
        if kind is InputAlias or kind is GradAlias:
            return f"{constant(part)}.of(inputs)"
        if kind is tuple:
            return "(" + "".join(f"{expression(v)}, " for v in part) + ")"
        if kind is list:
            return "[" + ", ".join(expression(v) for v in part) + "]"
        if kind is TupleOf:
            return f"{constant(part.kind)}(" + ", ".join(expression(v) for v in part) + ")"
        if kind is dict:
            return "{" + ", ".join(f"{constant(k)}: {expression(v)}" for k, v in part.items()) + "}"
        return constant(part)
    source = f"lambda values, wrap, inputs=None: {expression(template)}"
    return eval(source, {f"c{i}": value for i, value in enumerate(constants)})  # noqa: S307 - our own source


__all__ = ["GradAlias", "InputAlias", "LeafSlot", "Slot", "TupleOf", "template_filler"]
