"""A call node's ``shape`` and ``dtype``, from its op's shape and dtype rule (``OpDef.meta``) applied to
the metadata of the nodes it reads: torch.fx's ``ShapeProp``, from rules rather than by running data.

The tracer gives every node it records this metadata (and checks it against the value the real op
returned); passes that insert nodes ask for it rather than writing shapes by hand; ``Graph.lint``
checks that every call node still has it, so a pass that rewires a node into another value fails.
"""
from __future__ import annotations

import math
from typing import Any, Hashable

import numpy as np

from .. import dtypes
from ..ops.meta_rules import TensorMeta, meta_of
from ..ops.registry import OpDef
from .node import Node, Opcode, map_nodes, tuple_item


def _operand(node: Node) -> Any:
    """A rule's view of a node: its ``TensorMeta``; a Python number (``fx.numbers``) stands in as a
    number of its type, which is all that promotion reads of it."""
    if node.meta.get("python_number"):
        return 0.0 if np.dtype(node.meta["dtype"]).kind == "f" else 0
    return TensorMeta(node.meta["shape"], node.meta["dtype"])


def call_meta(target: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """``{"shape", "dtype"}`` of a call of ``target`` (a registry op or ``tuple_item``) on ``args`` and
    ``kwargs`` (nodes and plain values); tuples of them for an op with several outputs."""
    if target is tuple_item:
        source, index = args
        return {"shape": source.meta["shape"][index], "dtype": source.meta["dtype"][index]}
    operands = [meta_of(a) for a in map_nodes(args, _operand)]
    out = target.meta(*operands, **kwargs)
    if isinstance(out, tuple) and not isinstance(out, TensorMeta):
        return {"shape": tuple(tuple(o.shape) for o in out), "dtype": tuple(np.dtype(o.dtype) for o in out)}
    return {"shape": tuple(out.shape), "dtype": np.dtype(out.dtype)}


class NoKey(Exception):
    """An argument ``argument_key`` cannot stand for by a hashable value of its own."""


# Plain values a rule may read that stand for themselves in a key, with their type (1, 1.0 and True
# promote differently).
_KEYED_AS_THEMSELVES = frozenset({int, bool, str, type(None), type(Ellipsis), np.dtype})


def argument_key(value: Any) -> Hashable:
    """A hashable key equal for two arguments that a rule, or a derivative formula
    (``derivative_templates``), cannot treat apart: a node by its metadata, a plain value with its
    type; ``NoKey`` for anything else."""
    kind = type(value)
    if kind is Node:  # what ``_operand`` gives the rule of it
        meta = value.meta
        return (Node, meta["shape"], meta["dtype"], bool(meta.get("python_number")))
    if kind is tuple or kind is list:
        return (kind, tuple(map(argument_key, value)))
    if kind in _KEYED_AS_THEMSELVES:
        return (kind, value)
    if kind is float:  # 0.0 and -0.0 apart, as nothing promises a rule treats them alike
        return (float, value, math.copysign(1.0, value))
    if kind is slice:
        return (slice, argument_key(value.start), argument_key(value.stop), argument_key(value.step))
    raise NoKey


def call_meta_key(target: Any, args: tuple, kwargs: dict) -> Hashable | None:
    """A key equal for two calls to which ``call_meta`` gives the same answer (it reads the same
    metadata, attributes and default dtype), or None where an argument has none. The tracer asks
    the rule once per key: an unrolled loop repeats each call of its body at every step."""
    try:
        parts = []
        for arg in args:  # ``argument_key`` of each, a node's (nearly every argument) spelled here: asked per op
            if type(arg) is Node:
                meta = arg.meta
                parts.append((Node, meta["shape"], meta["dtype"], bool(meta.get("python_number"))))
            else:
                parts.append(argument_key(arg))
        key = (target, tuple(parts), tuple([(k, argument_key(v)) for k, v in kwargs.items()]) if kwargs else (),
               dtypes.get_default_dtype())
        hash(key)
    except (NoKey, KeyError, TypeError):
        return None
    return key


def meta_disagreement(node: Node) -> str | None:
    """What is wrong with a call node's metadata (its op's rule gives other values), or None."""
    if node.op is not Opcode.CALL_FUNCTION or not (node.target is tuple_item or isinstance(node.target, OpDef)):
        return None  # a number op (fx.numbers) computes its value in Python: its metadata is that value's
    expected = call_meta(node.target, node.args, node.kwargs)
    actual = {"shape": node.meta.get("shape"), "dtype": node.meta.get("dtype")}
    return None if expected == actual else f"has {actual}, but its op's rule gives {expected}"


__all__ = ["NoKey", "argument_key", "call_meta", "call_meta_key", "meta_disagreement"]
