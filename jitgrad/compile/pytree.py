"""Arguments as trees: lists, tuples, named tuples and dicts hold leaves (tensors, numbers, objects).

A compiled function takes its tensors wherever the call puts them (``step(params, batch)`` with
``params`` a list and ``batch`` a dict), as JAX's pytrees do. ``flatten`` turns the call's arguments
into leaves and a *spec*, a hashable description of the nesting (container types, lengths, dict keys
in order, and their types where they are not all strings), which a guard compares: the same spec means
the i-th leaf stands where it stood when the function was traced. A spec is a nested tuple so that comparing and hashing it is one C-level call.
"""
from __future__ import annotations

from typing import Any, Iterator

LEAF = None


def _is_named_tuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def flatten_into(value: Any, leaves: list[Any]) -> Any:
    """Appends ``value``'s leaves to ``leaves`` and returns its spec. Containers are matched by exact
    type (a subclass of dict or list is a leaf: its contents may not be all there is to it), except
    named tuples, whose class goes into the spec."""
    kind = type(value)
    if kind is list or kind is tuple:
        return (kind, tuple(flatten_into(v, leaves) for v in value))
    if kind is dict:
        spec = (dict, tuple(value), tuple(flatten_into(v, leaves) for v in value.values()))
        if all(type(k) is str for k in value):
            return spec
        # keys equal as dict keys but not to the code: ``1``, ``1.0`` and ``True``, ``0.0`` and ``-0.0``
        # (until 2026-11-28 a call with one ran the program traced with the other)
        return (*spec, tuple((type(k), repr(k)) for k in value))
    if _is_named_tuple(value):
        return (kind, tuple(flatten_into(v, leaves) for v in value))
    leaves.append(value)
    return LEAF


def flatten(args: tuple, kwargs: dict) -> tuple[list[Any], Any]:
    """The call's leaves (positional arguments first, then keyword arguments in the order given) and
    its spec. The common call, every argument a leaf and no keywords, takes one pass."""
    if not kwargs:
        for a in args:
            if type(a) is list or type(a) is dict or isinstance(a, tuple):
                break
        else:
            return list(args), len(args)
    leaves: list[Any] = []
    spec = ("call", flatten_into(args, leaves), flatten_into(kwargs, leaves))
    return leaves, spec


def replace_leaves(args: tuple, kwargs: dict, replacements: dict[int, Any]) -> tuple[tuple, dict]:
    """The call with leaf ``i`` (in ``flatten`` order) replaced by ``replacements[i]``. Only the
    containers on the way to a replaced leaf are new; every other is the caller's own object, so that
    a change the function makes to it is still a change to the caller's."""
    counter = iter(range(1 << 62))

    def rebuild(value: Any) -> Any:
        kind = type(value)
        if kind is list or kind is tuple or _is_named_tuple(value):
            items = [rebuild(v) for v in value]
            if all(a is b for a, b in zip(items, value)):
                return value
            return items if kind is list else (kind(*items) if _is_named_tuple(value) else tuple(items))
        if kind is dict:
            items = {k: rebuild(v) for k, v in value.items()}
            return value if all(items[k] is value[k] for k in value) else items
        index = next(counter)
        return replacements.get(index, value)
    return tuple(rebuild(a) for a in args), {k: rebuild(v) for k, v in kwargs.items()}


def leaf_paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    """The path of each leaf of ``value`` (``("item", i)`` or ``("key", k)`` steps), in ``flatten`` order."""
    kind = type(value)
    if kind is list or kind is tuple or _is_named_tuple(value):
        for i, v in enumerate(value):
            yield from leaf_paths(v, (*path, ("item", i)))
    elif kind is dict:
        for k, v in value.items():
            yield from leaf_paths(v, (*path, ("key", k)))
    else:
        yield path


def call_leaf_paths(args: tuple, kwargs: dict) -> list[tuple]:
    """The path of each leaf of a call, rooted at ``("arg", i)`` or ``("kwarg", name)``."""
    paths = []
    for i, a in enumerate(args):
        paths += [(("arg", i), *p) for p in leaf_paths(a)]
    for k, v in kwargs.items():
        paths += [(("kwarg", k), *p) for p in leaf_paths(v)]
    return paths


def describe_spec(spec: Any) -> str:
    """A short account of a spec for the recompile log: ``(tensor, list of 2, dict['x', 'y'])``."""
    if spec is LEAF:
        return "leaf"
    if isinstance(spec, int):
        return f"{spec} arguments, none a container"
    if spec[0] == "call":
        keywords = describe_spec(spec[2])
        return describe_spec(spec[1]) + ("" if keywords == "dict[]" else f" and keywords {keywords}")
    kind, children = spec[0], spec[-1]
    if kind is dict:
        return "dict[" + ", ".join(repr(k) for k in spec[1]) + "]"
    return f"{kind.__name__}(" + ", ".join(describe_spec(c) for c in children) + ")"


__all__ = ["LEAF", "call_leaf_paths", "describe_spec", "flatten", "flatten_into", "leaf_paths", "replace_leaves"]
