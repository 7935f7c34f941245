"""How a node prints: one line, ``%name: dtype[shape] = opcode target(args, kwargs)  # pass notes``.

One printer for every listing of the IR, so that a line of ``print(graph)``, the comment above its
statement in ``GraphModule.code`` and the comment above its code in a generated kernel read alike and
can be searched for one another. What differs between them is passed in: a kernel, which serves every
size and Python number its structure allows, prints sizes as its own variables (``size``) and leaves
values out (``leaf``); listings of one traced graph print them as they are.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .node import Node, Opcode, format_meta

# Text for a plain value inside args or kwargs, or None for the default (``repr``).
Leaf = Callable[[Any], "str | None"]


def format_arg(value: Any, leaf: Leaf | None = None) -> str:
    """An argument as the listing shows it: nodes as ``%name``, arrays by dtype and shape, and any other
    plain value as ``leaf`` spells it (``repr`` when it gives None)."""
    if isinstance(value, Node):
        return f"%{value.name}"
    if isinstance(value, tuple):
        inner = ", ".join(format_arg(v, leaf) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(format_arg(v, leaf) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {format_arg(v, leaf)}" for k, v in value.items()) + "}"
    if isinstance(value, slice):
        return f"slice({', '.join(format_arg(v, leaf) for v in (value.start, value.stop, value.step))})"
    text = leaf(value) if leaf is not None else None
    if text is not None:
        return text
    if isinstance(value, np.ndarray):
        return f"array({value.dtype}{list(value.shape)})"
    if isinstance(value, np.dtype):
        return str(value)
    return repr(value)


def _call(op: Opcode, target: Any, args: tuple, kwargs: dict, leaf: Leaf | None) -> str:
    """``opcode target`` and, for a call, its ``(args, kwargs)`` (an argument that is a node, the
    common case, spelled here: a listing of a long trace prints thousands)."""
    if op is not Opcode.CALL_FUNCTION:
        return f"{op.value} {target!s}"
    parts = [f"%{a.name}" if type(a) is Node else format_arg(a, leaf) for a in args]
    if kwargs:
        parts += [f"{k}={format_arg(v, leaf)}" for k, v in kwargs.items()]
    return f"call_function {target.name}({', '.join(parts)})"


def format_node(node: Node, *, size: Callable[[int], str] = str, leaf: Leaf | None = None,
                notes: bool = True) -> str:
    """The node's line: ``%name: dtype[shape] = opcode target(args)``, with each size as ``size``
    spells it, and after ``  # `` the metadata passes added (``fusion_group``, ``buffer``...) unless
    ``notes`` is False. The output node prints as ``return value``."""
    return format_fields(node.name, node.op, node.target, node.args, node.kwargs, node.meta, size=size, leaf=leaf,
                         notes=notes)


def format_fields(name: str, op: Opcode, target: Any, args: tuple, kwargs: dict, meta: dict[str, Any], *,
                  size: Callable[[int], str] = str, leaf: Leaf | None = None, notes: bool = True) -> str:
    """``format_node`` of a node with these fields: the line of a node as it was when a listing kept
    them (``graph.Listing``), whatever passes did to the node since."""
    if op is Opcode.OUTPUT:
        return f"return {format_arg(args[0], leaf)}"
    line = f"%{name}: {format_meta(meta, size)} = {_call(op, target, args, kwargs, leaf)}"
    if notes:
        extra = [f"{k}={v}" for k, v in meta.items() if k != "shape" and k != "dtype"]
        if extra:
            return line + "  # " + ", ".join(extra)
    return line


# Plain values whose equality (between two of one type) means the same ``repr``: a float does not qualify
# (``0.0 == -0.0``, ``nan != nan``), nor an object whose ``__eq__`` may not follow its text.
_EQUAL_MEANS_SAME_TEXT = frozenset({int, bool, str, type(None)})


def args_alike(a: Any, b: Any) -> bool:
    """Whether ``format_arg(a) == format_arg(b)`` is certain, found without formatting either."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind in _EQUAL_MEANS_SAME_TEXT:
        return a == b
    if kind is Node:
        return a.name == b.name
    if kind is tuple or kind is list:
        return len(a) == len(b) and all(map(args_alike, a, b))
    if kind is dict:
        return list(map(str, a)) == list(map(str, b)) and all(map(args_alike, a.values(), b.values()))
    return format_arg(a) == format_arg(b)


def meta_alike(a: Any, b: Any) -> bool:
    """Whether one metadata value prints alike in two nodes (``format_meta`` and the notes format it)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if type(a) in _EQUAL_MEANS_SAME_TEXT:
        return a == b
    if type(a) is tuple:
        return len(a) == len(b) and all(map(meta_alike, a, b))
    return f"{a}" == f"{b}"


__all__ = ["Leaf", "args_alike", "format_arg", "format_fields", "format_node", "meta_alike"]
