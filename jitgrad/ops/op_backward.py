"""The backward node of a registry op: runs the op's derivative formulas on what it saved.

One subclass per PyTorch node name (``MulBackward0``...), made on first use, so that
``type(y.grad_fn).__name__`` and the repr read as in PyTorch. It lives with the registry, not in
autograd: it reads an ``OpDef``'s formulas and save plans, while the engine needs only the ``Node``
interface it implements.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..autograd.graph import Edge, Node
from ..autograd.saved_tensor import SavedNumber, SavedTensor
from ..device import zeros_on
from ..tensor import Tensor
from . import staged_backward

if TYPE_CHECKING:
    from .registry import OpDef

_NODE_CLASSES: dict[str, type["OpBackward"]] = {}

# Where a saved formula parameter comes from (see ``save_plan``).
_RESULT, _RESULTS, _INPUT, _SHAPE, _ATTR = range(5)


def node_class(name: str) -> type["OpBackward"]:
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        cls = _NODE_CLASSES[name] = type(name, (OpBackward,), {"__slots__": ()})
    return cls


class SavePlan:
    """What nodes of one op whose inputs flagged in ``needs_grad`` want gradients save: ``entries``
    holds, for each parameter their formulas read, its source (``_RESULT``... above) and the input's
    index; nothing else is kept alive. ``stages`` are the staged replays of those formulas over arrays
    (``staged_backward``), shared by every such node; ``unstaged`` counts the nodes whose formulas
    could not be staged."""

    __slots__ = ("entries", "stages", "unstaged")

    def __init__(self, entries: tuple[tuple[str, int, int], ...]) -> None:
        self.entries = entries
        self.stages: list = []
        self.unstaged = 0


def save_plan(op: "OpDef", needs_grad: tuple[bool, ...]) -> SavePlan:
    """The ``SavePlan`` of ``op``'s nodes when the inputs flagged in ``needs_grad`` want gradients."""
    names = op.inputs * len(needs_grad) if op.variadic else op.inputs
    plan: dict[str, tuple[str, int, int]] = {}
    for name, needed in zip(names, needs_grad):
        for param in op.reads.get(name, ()) if needed else ():
            if param in ("grad", "grads") or param in plan:
                continue
            if param == "result":
                plan[param] = (param, _RESULT, 0)
            elif param == "results":
                plan[param] = (param, _RESULTS, 0)
            elif param in op.inputs:
                plan[param] = (param, _INPUT, op.inputs.index(param))
            elif param.endswith("_shape") and param[:-6] in op.inputs:
                plan[param] = (param, _SHAPE, op.inputs.index(param[:-6]))
            else:
                plan[param] = (param, _ATTR, 0)
    return SavePlan(tuple(plan.values()))


class OpBackward(Node):
    __slots__ = ("op", "_saved", "_plan")

    def __init__(self, op: "OpDef", edges: tuple[Edge | None, ...]) -> None:
        """A node with no inputs yet: recording it (``graph.set_history``) gives it one per output."""
        Node.__init__(self, edges)
        self.op = op
        self._saved: dict[str, Any] = {}

    def save(self, inputs: tuple, attrs: dict, outputs: tuple[Tensor, ...],
             needs_grad: tuple[bool, ...]) -> None:
        """Keeps what the formulas of the inputs that need a gradient read, and nothing else."""
        op = self.op
        plan = op.save_plans.get(needs_grad)
        if plan is None:
            plan = op.save_plans[needs_grad] = save_plan(op, needs_grad)
        self._plan = plan
        saved = self._saved
        for param, source, index in plan.entries:
            if source == _INPUT:
                if op.variadic:
                    saved[param] = tuple(SavedTensor(t) for t in inputs)
                else:
                    value = inputs[index]
                    saved[param] = SavedTensor(value) if isinstance(value, Tensor) else SavedNumber(value)
            elif source == _RESULT:
                saved[param] = SavedTensor(outputs[0], 0)
            elif source == _ATTR:
                if param not in attrs:
                    raise TypeError(f"op {op.name}: a derivative formula reads {param!r}, which is neither "
                                    "an input, an attribute of this call, grad(s) nor result(s)")
                saved[param] = attrs[param]
            elif source == _SHAPE:
                saved[param] = (tuple(np.shape(_data(t)) for t in inputs) if op.variadic
                                else np.shape(_data(inputs[index])))
            else:
                saved[param] = tuple(SavedTensor(o, nr if o._data.dtype.kind == "f" else None)
                                     for nr, o in enumerate(outputs))

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
                if isinstance(value, (SavedTensor, SavedNumber)):
                    value = value.unpack(self)
                elif type(value) is tuple and value and isinstance(value[0], SavedTensor):
                    value = tuple(v.unpack(self) for v in value)
                args.append(value)
        return args

    def _zeros(self, index: int) -> Tensor:
        meta = self.input_metadata(index)
        return Tensor._make(zeros_on(meta.shape, meta.dtype, meta.device))

    def apply(self, grads: list, needed: Sequence[bool] | None) -> list:
        op = self.op
        edges = self.next_edges
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

    apply_arrays = staged_backward.apply_arrays  # its formulas, staged (one call less per node)

    def release_variables(self) -> None:
        for value in self._saved.values():
            if isinstance(value, (SavedTensor, SavedNumber)):
                value.release()
            elif type(value) is tuple:
                for v in value:
                    if isinstance(v, SavedTensor):
                        v.release()


def _data(value: Any) -> Any:
    return value._data if isinstance(value, Tensor) else value
