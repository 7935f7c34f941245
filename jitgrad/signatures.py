"""What a Python function's parameters are called, for the places that name things after them.

The op registry reads, at import, the names each of ~180 derivative and JVP formulas takes (what a
backward saves follows from them); graph mode names a traced function's placeholders after its
parameters, and ``jitgrad.compile`` its guards' labels, which a warm process computes without
importing graph mode. ``inspect.signature`` is the rule; a plain function's code object gives the
same names at a fiftieth of its cost.
"""
from __future__ import annotations

import inspect
from types import FunctionType
from typing import Any, Callable


def parameter_names(fn: Callable[..., Any]) -> tuple[str, ...]:
    """Every parameter name of ``fn``, in ``inspect.signature``'s order: off the code object of a plain
    function without ``*args`` or ``**kwargs`` (where the two orders agree), else by the signature."""
    code = getattr(fn, "__code__", None)
    if type(fn) is not FunctionType or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) \
            or hasattr(fn, "__wrapped__") or hasattr(fn, "__signature__"):
        return tuple(inspect.signature(fn).parameters)
    return code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


def positional_names(fn: Callable[..., Any], count: int) -> list[str]:
    """Names for ``count`` positional arguments: ``fn``'s parameter names where it has them, else
    ``arg<i>``."""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i].name if i < len(params) else f"arg{i}" for i in range(count)]


__all__ = ["parameter_names", "positional_names"]
