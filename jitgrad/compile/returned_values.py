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
  by ``InputAlias``).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..autograd.saved_tensor import FREED
from ..tensor import Tensor


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


__all__ = ["graph_outlives_the_call", "share_memory"]
