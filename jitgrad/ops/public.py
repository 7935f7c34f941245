"""Which ops users reach, and how: the one declaration that ``jitgrad``, ``jitgrad.ops`` and ``Tensor`` read.

An op is public as a ``"function"`` (``jitgrad.exp`` and ``jitgrad.ops.exp``), as a ``"method"``
(``Tensor.exp``), or both, as PyTorch's ``native_functions.yaml`` says with ``variants``. An op users
call directly says so in its entry (``defop(..., public=("function", "method"))``); an op reached through
a wrapper that normalises its arguments (``dim``, ``*shape``) says so on the wrapper
(``@public("function", "method")``), and so does an in-place method. ``jitgrad/ops/__init__.py``,
``jitgrad/__init__.py`` and ``jitgrad/ops/methods.py`` export and attach what is declared here, so a new
op is made public where it is defined, and nowhere else.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

VARIANTS = ("function", "method")


class Public(NamedTuple):
    """A public op: the callable users get, and as what (a subset of ``VARIANTS``)."""

    value: Callable[..., Any]
    variants: tuple[str, ...]


PUBLIC: dict[str, Public] = {}  # by public name, in the order the ops were declared


def declare_public(name: str, value: Callable[..., Any], variants: tuple[str, ...]) -> None:
    """Makes ``value`` public as ``name`` in each of ``variants``."""
    if not variants or not set(variants) <= set(VARIANTS):
        raise ValueError(f"{name}: public takes one or both of {VARIANTS}, not {variants!r}")
    if name in PUBLIC:
        raise ValueError(f"{name} is declared public twice")
    PUBLIC[name] = Public(value, tuple(variants))


def public(*variants: str) -> Callable[[F], F]:
    """Declares the function it decorates public under its own name (``@public("function", "method")``)."""
    def declare(fn: F) -> F:
        declare_public(fn.__name__, fn, variants)
        return fn
    return declare


def public_names(variant: str) -> dict[str, Callable[..., Any]]:
    """Every op public as ``variant`` (``"function"`` or ``"method"``), by name."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    return {name: entry.value for name, entry in PUBLIC.items() if variant in entry.variants}
