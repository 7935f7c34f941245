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

# How a formula parameter is found at backward time (see ``save_plan``).
_GRAD, _GRADS, _SAVED, _UNPACK, _UNPACK_ALL = range(5)


def node_class(name: str) -> type["OpBackward"]:
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        cls = _NODE_CLASSES[name] = type(name, (OpBackward,), {"__slots__": ()})
    return cls


def save_plan(op: "OpDef", needs_grad: tuple[bool, ...]) -> tuple[tuple[str, str], ...]:
    """What to save when the inputs flagged in ``needs_grad`` want gradients: pairs of formula parameter
    and its source (``result``, ``results``, ``attr``, ``input`` or ``shape``). Only the formulas of those
    inputs are read, so nothing else is kept alive."""
    names = op.inputs * len(needs_grad) if op.variadic else op.inputs
    params: dict[str, str] = {}
    for name, needed in zip(names, needs_grad):
        for param in op.reads.get(name, ()) if needed else ():
            if param in ("grad", "grads") or param in params:
                continue
            if param in ("result", "results"):
                params[param] = param
            elif param in op.inputs:
                params[param] = "input"
            elif param.endswith("_shape") and param[:-6] in op.inputs:
                params[param] = "shape"
            else:
                params[param] = "attr"
    return tuple(params.items())


class OpBackward(Node):
    __slots__ = ("op", "_saved")

    def __init__(self, op: "OpDef", edges: tuple[Edge | None, ...], outputs: tuple[Tensor, ...]) -> None:
        super().__init__(edges)
        self.op = op
        self._input_metadata = [InputMetadata(o._data.shape, o._data.dtype) for o in outputs]
        self._saved: dict[str, Any] = {}

    def save(self, inputs: tuple, attrs: dict, outputs: tuple[Tensor, ...]) -> None:
        """Keeps what the formulas of the inputs that need a gradient read, and nothing else."""
        op = self.op
        needs_grad = tuple(e is not None for e in self._next_edges)
        plan = op.save_plans.get(needs_grad)
        if plan is None:
            plan = op.save_plans[needs_grad] = save_plan(op, needs_grad)
        saved = self._saved
        for param, source in plan:
            if source == "result":
                saved[param] = SavedTensor(outputs[0], 0)
            elif source == "results":
                saved[param] = tuple(SavedTensor(o, nr if o._data.dtype.kind == "f" else None)
                                     for nr, o in enumerate(outputs))
            elif source == "attr":
                if param not in attrs:
                    raise TypeError(f"op {op.name}: a derivative formula reads {param!r}, which is neither "
                                    "an input, an attribute of this call, grad(s) nor result(s)")
                saved[param] = attrs[param]
            elif op.variadic:
                saved[param] = (tuple(SavedTensor(t) for t in inputs) if source == "input"
                                else tuple(np.shape(_data(t)) for t in inputs))
            else:
                value = inputs[op.inputs.index(param if source == "input" else param[:-6])]
                if source == "shape":
                    saved[param] = np.shape(_data(value))
                else:
                    saved[param] = SavedTensor(value) if isinstance(value, Tensor) else value

    def _arguments(self, params: tuple[str, ...], grads: list) -> list:
        args = []
        for param in params:
            if param == "grad":
                grad = grads[0]
                args.append(grad if grad is not None else self._zeros(0))
            elif param == "grads":
                args.append(tuple(g if g is not None else self._zeros(i) for i, g in enumerate(grads)))
            else:
                value = self._saved[param]
                if isinstance(value, SavedTensor):
                    value = value.unpack(self)
                elif type(value) is tuple and value and isinstance(value[0], SavedTensor):
                    value = tuple(v.unpack(self) for v in value)
                args.append(value)
        return args

    def _zeros(self, index: int) -> Tensor:
        meta = self._input_metadata[index]
        return Tensor._make(np.zeros(meta.shape, meta.dtype))

    def apply(self, grads: list, needed: Sequence[bool] | None) -> list:
        op = self.op
        edges = self._next_edges
        if needed is None:
            needed = [e is not None for e in edges]
        if op.variadic:
            if not any(needed) or all(g is None for g in grads):
                return [None] * len(edges)
            name = op.inputs[0]
            values = op.derivatives[name](*self._arguments(op.reads[name], grads))
            return [g if need else None for g, need in zip(values, needed)]
        result: list = [None] * len(edges)
        if len(grads) == 1 and grads[0] is None or all(g is None for g in grads):
            return result
        reads, derivatives = op.reads, op.derivatives
        for i, name in enumerate(op.inputs):
            if needed[i] and name in reads:
                result[i] = derivatives[name](*self._arguments(reads[name], grads))
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
