"""Guards: what a call must share with an earlier one to reuse what was compiled for it.

The guard key holds, per argument, a tensor's rank, dtype, which dimensions are 1 (they broadcast) and
requires_grad, or a non-tensor's type and value; and the grad mode and default dtype. Sizes are not in
it: a call with new sizes but the same key retraces the function (cheap, and every shape the function
reads as a Python value is read again) and reuses the lowered kernels when the graph is the same up to
sizes. ``specialization`` adds the exact shapes, which arguments come with a ``.grad``, which have
tensor hooks and which are the same tensor: the key of one traced graph.
"""
from __future__ import annotations

from typing import Any

from ..autograd import grad_mode
from ..dtypes import get_default_dtype
from ..tensor import Tensor
from .capture import Unsupported


def _value_guard(value: Any, where: str) -> Any:
    if isinstance(value, Tensor):
        raise Unsupported(f"{where} holds a tensor inside a container; pass tensors as arguments of "
                          "their own")
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_value_guard(v, where) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _value_guard(v, where)) for k, v in sorted(value.items(), key=repr)))
    try:
        hash(value)
    except TypeError:
        raise Unsupported(f"{where} is a {type(value).__name__}, which cannot be guarded (not hashable)") from None
    return (type(value).__name__, value)


def argument_guard(value: Any, where: str) -> tuple:
    if isinstance(value, Tensor):
        data = value._data
        return ("tensor", data.ndim, data.dtype.str, tuple(s == 1 for s in data.shape), value._requires_grad)
    return ("value", _value_guard(value, where))


def guard_key(names: list[str], args: tuple, kwargs: dict) -> tuple:
    return (grad_mode.is_grad_enabled(), str(get_default_dtype()),
            tuple(argument_guard(a, f"argument '{n}'") for n, a in zip(names, args)),
            tuple((k, argument_guard(v, f"argument '{k}'")) for k, v in sorted(kwargs.items())))


def specialization(args: tuple) -> tuple:
    tensors = [a for a in args if isinstance(a, Tensor)]
    ids = [id(t) for t in tensors]
    return (tuple(t._data.shape for t in tensors), tuple(t._grad is not None for t in tensors),
            tuple(bool(t._hooks) for t in tensors), tuple(ids.index(i) for i in ids))


_PLAIN_VALUES = (int, float, bool, str, type(None))


def fast_key(args: tuple) -> tuple | None:
    """The common call's key, read in one pass: tensors that are distinct objects and plain Python
    values; None for anything else (``guard_key`` and ``specialization`` then decide). Programs are
    also cached by it, so it must tell apart every two calls those two tell apart (it may tell apart
    more): ``tests/compile/test_compile_guards.py`` checks that over varied arguments. A call costs
    this instead of the descriptive keys, which matters for a W1-sized step."""
    parts = []
    seen: set[int] = set()
    for a in args:
        if isinstance(a, Tensor):
            if id(a) in seen:
                return None
            seen.add(id(a))
            data = a._data
            parts.append((data.shape, data.dtype, a._requires_grad, a._grad is None, not a._hooks))
        elif type(a) in _PLAIN_VALUES:
            parts.append((type(a), a))
        else:
            return None
    return (grad_mode.is_grad_enabled(), get_default_dtype(), *parts)


_TENSOR_PARTS = ("rank", "dtype", "dimensions of size 1", "requires_grad")


def _differences(old: tuple, new: tuple) -> int:
    count = int(old[0] != new[0]) + int(old[1] != new[1]) + int(old[3] != new[3])
    if len(old[2]) != len(new[2]):
        return count + len(new[2]) * 4
    for a, b in zip(old[2], new[2]):
        count += sum(x != y for x, y in zip(a, b)) if a[0] == b[0] else 4
    return count


def closest(seen: list[tuple], new: tuple) -> tuple:
    """The guard key seen before that differs least from ``new`` (the one whose guard "failed")."""
    return min(reversed(seen), key=lambda old: _differences(old, new))


def describe_change(names: list[str], old: tuple, new: tuple) -> str:
    """Which guard failed, for which argument: the first difference between two guard keys."""
    if old[0] != new[0]:
        return f"grad mode changed: is_grad_enabled() was {old[0]}, now {new[0]}"
    if old[1] != new[1]:
        return f"the default dtype changed: was {old[1]}, now {new[1]}"
    if len(old[2]) != len(new[2]):
        return f"the number of arguments changed: was {len(old[2])}, now {len(new[2])}"
    for name, a, b in zip(names, old[2], new[2]):
        if a == b:
            continue
        if a[0] != b[0]:
            return f"argument '{name}': was a {'tensor' if a[0] == 'tensor' else 'non-tensor'}, now not"
        if a[0] == "tensor":
            for part, x, y in zip(_TENSOR_PARTS, a[1:], b[1:]):
                if x != y:
                    return f"argument '{name}': {part} was {x}, now {y}"
        return f"argument '{name}': value was {a[1][1]!r}, now {b[1][1]!r}"
    return f"keyword arguments changed: were {dict(old[3])}, now {dict(new[3])}"


def describe_specialization(names: list[str], old: tuple, new: tuple) -> str:
    for name, a, b in zip(names, old[0], new[0]):
        if a != b:
            return f"argument '{name}': shape was {a}, now {b}"
    for name, a, b in zip(names, old[1], new[1]):
        if a != b:
            return f"argument '{name}': .grad was {'set' if a else 'None'}, now {'set' if b else 'None'}"
    for name, a, b in zip(names, old[2], new[2]):
        if a != b:
            return f"argument '{name}': {'had' if a else 'had no'} tensor hooks, now {'has' if b else 'has none'}"
    if old[3] != new[3]:
        return "which arguments are the same tensor changed"
    return "no difference"


__all__ = ["argument_guard", "closest", "describe_change", "describe_specialization", "guard_key", "specialization"]
