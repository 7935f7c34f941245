"""A call node's ``shape`` and ``dtype``, from its op's shape and dtype rule (``OpDef.meta``) applied to
the metadata of the nodes it reads: torch.fx's ``ShapeProp``, from rules rather than by running data.

The tracer gives every node it records this metadata (and checks it against the value the real op
returned); passes that insert nodes ask for it rather than writing shapes by hand; ``Graph.lint``
checks that every call node still has it, so a pass that rewires a node into another value fails.
"""
from __future__ import annotations

from typing import Any

import numpy as np

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


def meta_disagreement(node: Node) -> str | None:
    """What is wrong with a call node's metadata (its op's rule gives other values), or None."""
    if node.op is not Opcode.CALL_FUNCTION or not (node.target is tuple_item or isinstance(node.target, OpDef)):
        return None  # a number op (fx.numbers) computes its value in Python: its metadata is that value's
    expected = call_meta(node.target, node.args, node.kwargs)
    actual = {"shape": node.meta.get("shape"), "dtype": node.meta.get("dtype")}
    return None if expected == actual else f"has {actual}, but its op's rule gives {expected}"


__all__ = ["call_meta", "meta_disagreement"]
