"""Arguments and results of the ``jitgrad.func`` transforms as trees of tensors.

``torch.func`` takes and returns tuples, lists and dicts of tensors wherever a tensor may stand (the
parameters of a model as a dict, a function returning a tuple), so every transform flattens what it
differentiates into a list of leaves and builds its answer back in the same shape. Only exact
tuples, lists, dicts and named tuples are containers, as in ``torch.utils._pytree``; anything else is a
leaf.
"""
from __future__ import annotations

from typing import Any, Callable

from ..ops.reductions import ValuesAndIndices

LEAF = None  # the spec of a leaf


def tree_flatten(tree: Any) -> tuple[list[Any], Any]:
    """The leaves of ``tree``, in order, and a spec that ``tree_unflatten`` rebuilds it from."""
    leaves: list[Any] = []
    return leaves, _flatten_into(tree, leaves)


def _flatten_into(tree: Any, leaves: list[Any]) -> Any:
    kind = type(tree)
    if kind is tuple or kind is list or _is_named_tuple(kind):
        return (kind, tuple(_flatten_into(v, leaves) for v in tree))
    if kind is dict:
        return (dict, tuple(tree), tuple(_flatten_into(v, leaves) for v in tree.values()))
    leaves.append(tree)
    return LEAF


def _is_named_tuple(kind: type) -> bool:
    """A ``NamedTuple`` (``linalg.slogdet``'s) or ``max``'s ``(values, indices)`` is a container, as
    PyTorch's named results are in ``torch.utils._pytree``; each is built again from its fields."""
    return kind is ValuesAndIndices or (issubclass(kind, tuple) and hasattr(kind, "_fields"))


def tree_unflatten(leaves: list[Any], spec: Any) -> Any:
    """The tree of ``spec`` with ``leaves`` in its leaves' places."""
    it = iter(leaves)
    return _build(it, spec)


def _build(it: Any, spec: Any) -> Any:
    if spec is LEAF:
        return next(it)
    if spec[0] is dict:
        return {k: _build(it, s) for k, s in zip(spec[1], spec[2])}
    if _is_named_tuple(spec[0]):
        return spec[0](*(_build(it, s) for s in spec[1]))
    return spec[0](_build(it, s) for s in spec[1])


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(v) for v in leaves], spec)


def describe(spec: Any) -> str:
    """A spec as PyTorch's messages write a structure: ``tuple(*, dict(a=*))``."""
    if spec is LEAF:
        return "*"
    if spec[0] is dict:
        return "dict(" + ", ".join(f"{k}={describe(s)}" for k, s in zip(spec[1], spec[2])) + ")"
    return f"{spec[0].__name__}(" + ", ".join(describe(s) for s in spec[1]) + ")"


def leaf_count(spec: Any) -> int:
    """How many leaves a tree of ``spec`` holds."""
    if spec is LEAF:
        return 1
    return sum(leaf_count(s) for s in spec[-1])
