"""The backward node of a registry op: runs the op's derivative formulas on what it saved.

One subclass per PyTorch node name (``MulBackward0``...), made on first use, so that
``type(y.grad_fn).__name__`` and the repr read as in PyTorch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..tensor import Tensor
from .graph import Edge, InputMetadata, Node
from .saved_tensor import SavedTensor

if TYPE_CHECKING:
    from ..ops.registry import OpDef

_NODE_CLASSES: dict[str, type["OpBackward"]] = {}


def node_class(name: str) -> type["OpBackward"]:
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        cls = _NODE_CLASSES[name] = type(name, (OpBackward,), {"__slots__": ()})
    return cls


class OpBackward(Node):
    __slots__ = ("op", "_saved", "_input_names")

    def __init__(self, op: "OpDef", edges: tuple[Edge | None, ...], outputs: tuple[Tensor, ...]) -> None:
        super().__init__(edges)
        self.op = op
        self._input_metadata = [InputMetadata(o._data.shape, o._data.dtype) for o in outputs]
        self._saved: dict[str, Any] = {}
        self._input_names = op.inputs * len(edges) if op.variadic else op.inputs

    def save(self, inputs: tuple, attrs: dict, outputs: tuple[Tensor, ...]) -> None:
        """Keeps what the formulas of the inputs that need a gradient read, and nothing else."""
        op, reads = self.op, set()
        for name, edge in zip(self._input_names, self._next_edges):
            if edge is not None and name in op.reads:
                reads.update(op.reads[name])
        by_name = dict(zip(op.inputs, (inputs,) if op.variadic else inputs))
        saved = self._saved
        for param in reads:
            if param in ("grad", "grads"):
                continue
            if param == "result":
                saved[param] = SavedTensor(outputs[0], 0)
            elif param == "results":
                saved[param] = tuple(SavedTensor(o, nr if o._data.dtype.kind == "f" else None)
                                     for nr, o in enumerate(outputs))
            elif param in attrs:
                saved[param] = attrs[param]
            elif param in by_name:
                value = by_name[param]
                saved[param] = (tuple(SavedTensor(t) for t in value) if op.variadic
                                else SavedTensor(value) if isinstance(value, Tensor) else value)
            elif param.endswith("_shape") and param[:-6] in by_name:
                value = by_name[param[:-6]]
                saved[param] = (tuple(np.shape(_data(t)) for t in value) if op.variadic
                                else np.shape(_data(value)))
            else:
                raise TypeError(f"op {op.name}: a derivative formula reads {param!r}, which is neither "
                                f"an input, an attribute of this call, grad(s) nor result(s)")

    def _lookup(self, param: str, grads: list) -> Any:
        if param == "grad":
            return grads[0] if grads[0] is not None else self._zeros(0)
        if param == "grads":
            return tuple(g if g is not None else self._zeros(i) for i, g in enumerate(grads))
        value = self._saved[param]
        if isinstance(value, SavedTensor):
            return value.unpack(self)
        if type(value) is tuple and value and isinstance(value[0], SavedTensor):
            return tuple(v.unpack(self) for v in value)
        return value

    def _zeros(self, index: int) -> Tensor:
        meta = self._input_metadata[index]
        return Tensor._make(np.zeros(meta.shape, meta.dtype))

    def apply(self, grads: list, needed: Sequence[bool]) -> list:
        result: list = [None] * len(self._next_edges)
        if all(g is None for g in grads) or not any(needed):
            return result
        op = self.op
        if op.variadic:
            name = op.inputs[0]
            values = op.derivatives[name](**{p: self._lookup(p, grads) for p in op.reads[name]})
            return [g if need else None for g, need in zip(values, needed)]
        for i, name in enumerate(self._input_names):
            if needed[i] and name in op.reads:
                formula = op.derivatives[name]
                result[i] = formula(**{p: self._lookup(p, grads) for p in op.reads[name]})
        return result

    def release_variables(self) -> None:
        for value in self._saved.values():
            if isinstance(value, SavedTensor):
                value.release()
            elif type(value) is tuple:
                for v in value:
                    if isinstance(v, SavedTensor):
                        v.release()


def _data(value: Any) -> Any:
    return value._data if isinstance(value, Tensor) else value
