"""What an op entry's ``lower=`` holds, by the op's ``kind``, in no backend's terms:

- an elementwise op: a function of the inputs' scalar values (positionally, as ``scalar.Expr``s) and of
  the attributes it names, returning the output's value as a scalar expression (``jitgrad.ops.scalar``):
  ``lower=lambda self, other: self * other``;
- a reduction: a ``Reduction``, the fold's identity, its combine and what it does before and after;
- any other op: an ``Intrinsic``, a named operation every backend implements in its own code (``gemm``,
  ``softmax``, ``concatenate``...), told by the node's inputs and attributes.

Backends read these through ``element_expression`` and the ``Reduction`` methods, which call the
entry's functions with the values and names they declare, as derivative formulas are called.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

from .scalar import Expr, expr


@lru_cache(maxsize=None)
def _parameters(fn: Callable[..., Any]) -> tuple[str, ...]:
    return tuple(inspect.signature(fn).parameters)


def _call(fn: Callable[..., Expr], positional: Sequence[Any], names: Mapping[str, Any]) -> Expr:
    """``fn`` of ``positional`` and, by keyword, those of ``names`` its later parameters name."""
    wanted = _parameters(fn)[len(positional):]
    return expr(fn(*positional, **{n: names[n] for n in wanted if n in names}))


def element_expression(lowering: Callable[..., Expr], inputs: Sequence[Expr], attrs: Mapping[str, Any]) -> Expr:
    """An elementwise op's output value: its lowering applied to its inputs' values and attributes."""
    return _call(lowering, inputs, attrs)


@dataclass(frozen=True)
class Reduction:
    """A fold of each element into an accumulator: ``acc = combine(acc, map(element))`` from
    ``identity``, then ``finish(acc)``. ``combine`` also joins two partial results (rows folded apart,
    running values of a long row), so it must be associative, as ``+``, ``*`` and max are. ``map``
    may read ``first``, the finished result of a first pass (the ``first`` reduction: a variance's
    mean), and ``finish`` may read ``count``, the number of elements folded, and ``first``; both may
    read the node's attributes by name (``correction``)."""

    identity: Any
    combine: Callable[[Expr, Expr], Expr]
    map: Callable[..., Expr] | None = None
    finish: Callable[..., Expr] | None = None
    first: "Reduction | None" = None

    def initial(self) -> Expr:
        return expr(self.identity)

    def update(self, acc: Expr, element: Expr, names: Mapping[str, Any]) -> Expr:
        """The accumulator after folding ``element`` into ``acc``."""
        return expr(self.combine(acc, self.mapped(element, names)))

    def mapped(self, element: Expr, names: Mapping[str, Any]) -> Expr:
        """What ``element`` contributes before it is combined (``map``, or the element itself): a
        backend may compute it apart from the fold, in a loop of its own that vectorizes."""
        return element if self.map is None else expr(_call(self.map, (element,), names))

    def joined(self, acc: Expr, partial: Expr) -> Expr:
        """Two partial results as one."""
        return expr(self.combine(acc, partial))

    def finished(self, acc: Expr, names: Mapping[str, Any]) -> Expr:
        return acc if self.finish is None else _call(self.finish, (acc,), names)


@dataclass(frozen=True)
class Intrinsic:
    """An operation each backend implements itself (a matrix product, a softmax over rows, a copy into
    part of an array), named with ``params`` that choose a variant (``argmax`` with its values)."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


def intrinsic(name: str, **params: Any) -> Intrinsic:
    return Intrinsic(name, params)


__all__ = ["Intrinsic", "Reduction", "element_expression", "intrinsic"]
