"""The backward node of a registry op: runs the op's derivative formulas on what it saved.

One subclass per PyTorch node name (``MulBackward0``...), made on first use, so that
``type(y.grad_fn).__name__`` and the repr read as in PyTorch. It lives with the registry, not in
autograd: it reads an ``OpDef``'s formulas and save plans, while the engine needs only the ``Node``
interface it implements.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..autograd.graph import Node, record_node
from ..autograd.saved_tensor import (FREED, FREED_ERROR, SavedTensor, check_savable, check_version, saving_hooks,
                                      version_of)
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
    index; nothing else is kept alive. ``variants`` holds the staged replays of those formulas over
    arrays (``staged_backward``), shared by every such node."""

    __slots__ = ("entries", "positions", "frees", "variants")

    def __init__(self, entries: tuple[tuple[str, int, int], ...]) -> None:
        self.entries = entries
        self.positions = {param: i for i, (param, _, _) in enumerate(entries)}
        self.frees = any(source in (_INPUT, _RESULT, _RESULTS) for _, source, _ in entries)
        self.variants: dict = {}  # the first gradient's shape -> staged_backward.Variants


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


def record(op: "OpDef", tensors: tuple, args: tuple, attrs: dict, outputs: tuple[Tensor, ...]) -> None:
    """Creates the backward node of one call of ``op`` (a registry op whose input requires grad) and
    makes it the ``grad_fn`` of its float outputs. The node keeps what the formulas of the inputs that
    need a gradient read, and nothing else, in its save plan's order (see ``OpBackward.saved``).

    Every op that records runs this: one function, since a Python frame costs about as much as the work
    inside it."""
    if len(outputs) == 1:
        if outputs[0]._data.dtype.kind != "f":
            return
    elif not any(o._data.dtype.kind == "f" for o in outputs):
        return
    node, needs = record_node(op.backward_class or op.node_class(args, attrs), tensors, outputs)
    node.op = op
    plan = op.save_plans.get(needs)
    if plan is None:
        plan = op.save_plans[needs] = save_plan(op, needs)
    node._plan = plan
    entries = plan.entries
    if len(entries) == 1:
        value = node._saved = _saved_value(op, entries[0], tensors, attrs, outputs)
        node._versions = version_of(value) if isinstance(value, Tensor) else None
    else:
        values, versions = [], []
        for entry in entries:
            value = _saved_value(op, entry, tensors, attrs, outputs)
            values.append(value)
            versions.append(version_of(value) if isinstance(value, Tensor) else None)
        node._saved, node._versions = tuple(values), tuple(versions)


class OpBackward(Node):
    """The backward of one call of a registry op: made and filled by ``record``."""

    __slots__ = ("op", "_saved", "_versions", "_plan")

    def saved(self) -> tuple:
        """The saved values in the plan's order. Every object a node allocates is one more for the
        garbage collector to scan while the graph lives, so a node keeps a lone value as it is (most
        save one thing), a number as it is, and an input tensor as it is, with its version at the time
        (``versions()``); ``SavedTensor`` is for outputs, lists of tensors and saved-tensor hooks. Once
        freed, the node holds ``FREED`` instead of its values."""
        if self._saved is FREED:
            raise RuntimeError(FREED_ERROR)
        return (self._saved,) if len(self._plan.entries) == 1 else self._saved

    def versions(self) -> tuple:
        """The version of each saved input tensor when it was saved (None for other values)."""
        return (self._versions,) if len(self._plan.entries) == 1 else self._versions

    def _arguments(self, params: tuple[str, ...], grads: list) -> list:
        args = []
        values = None
        for param in params:
            if param == "grad":
                grad = grads[0]
                args.append(grad if grad is not None else self._zeros(0))
            elif param == "grads":
                args.append(tuple(g if g is not None else self._zeros(i) for i, g in enumerate(grads)))
            else:
                if values is None:
                    values = self.saved()
                position = self._plan.positions[param]
                value = values[position]
                if isinstance(value, SavedTensor):
                    value = value.unpack(self)
                elif isinstance(value, Tensor):
                    value = check_version(value, self.versions()[position], self)
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
        """Frees what the node saved. A node that kept a tensor or a number (PyTorch saves a number as
        a tensor) refuses a second backward from then on; one that kept only shapes and attributes
        may run again, as in PyTorch."""
        if self._plan.frees and self._saved is not FREED:
            for value in self.saved():
                for v in value if type(value) is tuple else (value,):
                    if isinstance(v, SavedTensor):
                        v.release()
            self._saved = FREED


def _saved_value(op: "OpDef", entry: tuple[str, int, int], inputs: tuple, attrs: dict,
                 outputs: tuple[Tensor, ...]) -> Any:
    """What a node keeps of one parameter its formulas read."""
    param, source, index = entry
    if source == _INPUT:
        if op.variadic:
            return tuple(SavedTensor(t) for t in inputs)
        value = inputs[index]
        if not isinstance(value, Tensor):
            return value
        if saving_hooks():
            return SavedTensor(value)
        check_savable(value)
        return value
    if source == _RESULT:
        return SavedTensor(outputs[0], 0)
    if source == _ATTR:
        if param not in attrs:
            raise TypeError(f"op {op.name}: a derivative formula reads {param!r}, which is neither "
                            "an input, an attribute of this call, grad(s) nor result(s)")
        return attrs[param]
    if source == _SHAPE:
        return tuple(np.shape(_data(t)) for t in inputs) if op.variadic else np.shape(_data(inputs[index]))
    return tuple(SavedTensor(o, nr if o._data.dtype.kind == "f" else None) for nr, o in enumerate(outputs))


def _data(value: Any) -> Any:
    return value._data if isinstance(value, Tensor) else value
