"""What a compiled whole step cannot return as eagerly, and so leaves to eager mode.

A step program returns fresh tensors without autograd history, written from its kernel's outputs.
That is what eager mode gives wherever no one can tell the difference; two cases can tell it:

- a returned tensor whose graph a backward outside could still run through. A backward inside the
  step (without ``retain_graph``) frees what the graph's nodes saved, and a second backward through
  them raises in eager mode as it would compiled; but a graph made with ``create_graph=True``, kept
  with ``retain_graph=True``, or of nodes that saved nothing, still runs eagerly, and compiled its
  gradient would be dropped without a word;
- returned tensors that share memory (``y`` and ``y[0]``, ``y.detach()``): eagerly a write into one
  shows in the other, compiled they are separate copies (results that view an *input* are handled
  by ``InputAlias``);
- an object other than a tuple, list, dict or named tuple holding tensors (a dataclass of outputs):
  a compiled call would return the one the trace made (``check_returned_objects``).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..autograd.saved_tensor import FREED
from ..fx.node import iter_leaves
from ..tensor import Tensor
from .unsupported import Unsupported


def graph_outlives_the_call(tensor: Tensor) -> bool:
    """Whether a backward from ``tensor`` outside the function would run eagerly: it has a graph and
    no node of it has freed what it saved."""
    fn = tensor._grad_fn   # not the property: a borrowed input's refuses to answer (fx.traced_tensor)
    if fn is None:
        return False
    seen: set[int] = set()
    stack: list[Any] = [fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if getattr(node, "saved_values", None) is FREED:
            return False
        stack.extend(next_node for next_node, _ in node.next_functions)
    return True


def share_memory(values: Sequence[Tensor], inputs: Sequence[Tensor]) -> bool:
    """Whether two of ``values`` (returned tensors, not views of ``inputs``) share memory."""
    input_arrays = [t._data for t in inputs if isinstance(t._data, np.ndarray)]
    arrays = [v._data for v in values if isinstance(v._data, np.ndarray)
              and not any(np.may_share_memory(v._data, a) for a in input_arrays)]
    return any(np.may_share_memory(a, b) for i, a in enumerate(arrays) for b in arrays[i + 1:])


def _holds_tensors(value: Any, depth: int = 0) -> bool:
    """Whether an object (its attributes, a dataclass's fields, the items of containers in them) holds
    a tensor, a few levels down."""
    if isinstance(value, Tensor):
        return True
    if depth > 3:
        return False
    if isinstance(value, dict):
        return any(_holds_tensors(v, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_tensors(v, depth + 1) for v in value)
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict) and not isinstance(value, type):
        return any(_holds_tensors(v, depth + 1) for v in attributes.values())
    return any(_holds_tensors(getattr(value, name, None), depth + 1) for name in getattr(type(value), "__slots__", ())
               if isinstance(name, str))


def check_returned_objects(result: Any) -> None:
    """A result is returned as the structure of tuples, lists, dicts and named tuples the trace made,
    its tensors new at each call; any other object in it is returned as it is, the one made while
    tracing. One holding tensors (a dataclass of outputs) would give every call the trace's values:
    until 2026-11-28 it did, silently."""
    for leaf in iter_leaves(result):
        if not isinstance(leaf, Tensor) and type(leaf) not in (int, float, bool, complex, str, bytes, type(None)) \
                and _holds_tensors(leaf):
            raise Unsupported(f"the function returns a {type(leaf).__name__} holding tensors, which a compiled call "
                              "would return as the object made while tracing; return its tensors in a tuple, list, "
                              "dict or named tuple")


__all__ = ["check_returned_objects", "graph_outlives_the_call", "share_memory"]
