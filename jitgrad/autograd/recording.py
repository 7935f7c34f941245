"""Recording the backward node of one op call, as PyTorch's generated autograd wrappers do: the node,
its edges, what its derivative formulas will read, and the history of the outputs.

Every op call that requires grad comes through ``record``, and at 16 elements a training step's ops
cost less in numpy than their recording does, so the common call (one or two inputs, one float output
on the CPU) is made in this one frame: edges, every slot of the node, the saved values and the
output's history. Spread over a record function in the op layer, a node maker here and a function
per saved value, it cost W1's forward (126 nodes) about 20 us a step more, 4% (measured side by side).

What a node saves is its op's *save plan* for the inputs that need a gradient (the op layer makes it,
``jitgrad.ops.op_backward.save_plan``): for each parameter the formulas read, where it comes from.
A node keeps a lone saved value without a container (most save one thing), a number as it is, and an
input tensor as it is with its version as a number (a tensor whose counter was never made is at
version 0); ``SavedTensor`` is for outputs, lists of tensors and saved-tensor hooks. Every object a
node allocates is one more for the garbage collector to scan while the graph lives.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..tensor import Tensor
from . import anomaly_mode
from .graph import _ONE_CPU_SLOT, Node, _one_cpu_slot, _sequence, gradient_edge, set_history
from .saved_tensor import FREED, FREED_ERROR, SavedTensor, _hooks, check_savable, saving_hooks, version_of

# Where a saved formula parameter comes from: a save plan's entries are (parameter, source, index).
SAVE_RESULT, SAVE_RESULTS, SAVE_INPUT, SAVE_SHAPE, SAVE_ATTR = range(5)


class SavingNode(Node):
    """A node whose backward formulas read values kept when it was recorded. ``op`` is what it is the
    backward of; ``save_plan`` says what was saved (shared by the nodes of one op and inputs needing a
    gradient); ``saved_values`` holds them (``FREED`` once freed) and ``saved_versions`` the version of
    each saved input tensor, for a lone value the value and the version themselves."""

    __slots__ = ("op", "saved_values", "saved_versions", "save_plan")

    def saved(self) -> tuple:
        """The saved values in the plan's order."""
        if self.saved_values is FREED:
            raise RuntimeError(FREED_ERROR)
        return (self.saved_values,) if len(self.save_plan.entries) == 1 else self.saved_values

    def versions(self) -> tuple:
        """The version of each saved input tensor when it was saved (None for other values)."""
        return (self.saved_versions,) if len(self.save_plan.entries) == 1 else self.saved_versions

    def release_variables(self) -> None:
        """Frees what the node saved. A node that kept a tensor or a number (PyTorch saves a number as
        a tensor) refuses a second backward from then on; one that kept only shapes and attributes
        may run again, as in PyTorch."""
        values = self.saved_values
        if values is FREED or not self.save_plan.frees:
            return
        self.saved_values = FREED
        for value in (values,) if len(self.save_plan.entries) == 1 else values:
            if type(value) is SavedTensor:
                value.release()
            elif type(value) is tuple:
                for v in value:
                    if isinstance(v, SavedTensor):
                        v.release()


def record(cls: type[SavingNode], op: Any, tensors: Sequence[Any], attrs: dict, outputs: Sequence[Tensor]) -> None:
    """Makes a node of ``cls`` the backward of ``outputs``, a call of ``op`` on ``tensors`` (anything
    not a tensor gets no edge); only float outputs take it as their ``grad_fn``, and a call with none
    records nothing. ``op.save_plans`` maps which inputs need a gradient to the save plan (made by
    ``op.plan_for`` when missing)."""
    if len(outputs) == 1 and 1 <= len(tensors) <= 2 and not anomaly_mode.state.enabled:
        output = outputs[0]
        data = output._data
        if data.dtype.kind != "f":
            return
        if type(data) is np.ndarray:
            plain = not op.variadic and not _hooks.stack
            if len(tensors) == 2:
                record_two(cls, op, tensors[0], tensors[1], attrs, output, plain)
            else:
                record_one(cls, op, tensors[0], attrs, output, plain)
            return
        node, needs = _general_node(cls, tensors, outputs)
    elif not any(o._data.dtype.kind == "f" for o in outputs):
        return
    else:
        node, needs = _general_node(cls, tensors, outputs)
    node.op = op
    plan = node.save_plan = op.save_plans.get(needs) or op.plan_for(needs)
    _save(node, op, plan.entries, tensors, attrs, outputs, not op.variadic and not _hooks.stack)


def record_one(cls: type[SavingNode], op: Any, a: Tensor, attrs: dict, output: Tensor, plain: bool = True) -> None:
    """``record`` of a call on one tensor ``a`` that requires grad, whose output is a float array on the
    CPU: what ``jitgrad.ops``' callers of one-input ops hand here, with every thread setting at its
    default (so ``plain``: no saved-tensor hooks, see ``_save``), and ``record`` itself. Unrolled,
    down to the node's slots and the output's history, because at 16 elements W1's forward is mostly
    this and the op's dispatch; what the node keeps, its save plan's saver keeps (``_saver``)."""
    if anomaly_mode.state.enabled:
        record(cls, op, (a,), attrs, (output,))
        return
    fn = a._grad_fn
    node = _new_node(cls)
    node._next_edges = ((fn, a._output_nr) if fn is not None and a._view is None else gradient_edge(a),)
    node._sequence_nr = next(_sequence.counter)
    node._topological_nr = node._metadata = None
    node._pre_hooks = node._post_hooks = node._tensor_pre_hooks = node._retains_grad = None
    data = output._data
    slots = _ONE_CPU_SLOT.get((data.shape, data.dtype))
    node._input_metadata = slots if slots is not None else _one_cpu_slot(data.shape, data.dtype)
    output._requires_grad = True
    output._grad_fn = node
    node.op = op
    plan = node.save_plan = op.save_plans.get(_ONE_NEEDED) or op.plan_for(_ONE_NEEDED)
    if plain:
        (plan.saver or _saver(plan))(node, op, a, None, attrs, output)
    else:
        _save(node, op, plan.entries, (a,), attrs, (output,), False)


def record_two(cls: type[SavingNode], op: Any, a: Any, b: Any, attrs: dict, output: Tensor,
               plain: bool = True) -> None:
    """``record_one`` of a call on two inputs, at least one of them a tensor that requires grad; either
    may be a number."""
    if anomaly_mode.state.enabled:
        record(cls, op, (a, b), attrs, (output,))
        return
    if isinstance(a, Tensor):
        fn = a._grad_fn
        first = (fn, a._output_nr) if fn is not None and a._view is None else gradient_edge(a)
    else:
        first = None
    if isinstance(b, Tensor):
        fn = b._grad_fn
        second = (fn, b._output_nr) if fn is not None and b._view is None else gradient_edge(b)
    else:
        second = None
    node = _new_node(cls)
    node._next_edges = (first, second)
    node._sequence_nr = next(_sequence.counter)
    node._topological_nr = node._metadata = None
    node._pre_hooks = node._post_hooks = node._tensor_pre_hooks = node._retains_grad = None
    data = output._data
    slots = _ONE_CPU_SLOT.get((data.shape, data.dtype))
    node._input_metadata = slots if slots is not None else _one_cpu_slot(data.shape, data.dtype)
    output._requires_grad = True
    output._grad_fn = node
    node.op = op
    needs = (first is not None, second is not None)
    plan = node.save_plan = op.save_plans.get(needs) or op.plan_for(needs)
    if plain:
        (plan.saver or _saver(plan))(node, op, a, b, attrs, output)
    else:
        _save(node, op, plan.entries, (a, b), attrs, (output,), False)


_ONE_NEEDED = (True,)


def _saver(plan: Any) -> Callable[..., None]:
    """What ``_save`` does with ``plain`` for a call of one or two inputs, written out for ``plan``'s
    entries: ``saver(node, op, a, b, attrs, output)`` (``b`` None for one input), kept as
    ``plan.saver``. ``_save`` decides on every call what the plan decides once: through it a node of
    W2's matmul saved its two inputs in 110 bytecodes, through this in 30."""
    lines = ["def saver(node, op, a, b, attrs, output):"]
    namespace: dict[str, Any] = {"Tensor": Tensor, "check_savable": check_savable, "shape_of": np.shape,
                                 "of_new_output": SavedTensor.of_new_output, "saved_value": saved_value,
                                 "general": _save, "entries": plan.entries}
    if any(source == SAVE_RESULT for _, source, _ in plan.entries):  # as _save: no shortcut for these
        lines.append("    if output._is_inference: return general(node, op, entries, (a, b), attrs, (output,))")
    for k, entry in enumerate(plan.entries):
        param, source, index = entry
        namespace[f"E{k}"] = entry
        value, version = f"v{k}", f"r{k}"
        if source == SAVE_RESULT:
            lines.append(f"    {value} = of_new_output(output, 0); {version} = None")
            continue
        if source == SAVE_SHAPE:
            x = "ab"[index]
            lines.append(f"    {value} = {x}._data.shape if isinstance({x}, Tensor) else shape_of({x})")
            lines.append(f"    {version} = None")
            continue
        if source == SAVE_INPUT:
            lines.append(f"    {value} = {'ab'[index]}")
        elif source == SAVE_ATTR:
            lines.append(f"    {value} = attrs[{param!r}] if {param!r} in attrs else "
                         f"saved_value(op, E{k}, (a, b), attrs, (output,))")
        else:
            lines.append(f"    {value} = saved_value(op, E{k}, (a, b), attrs, (output,))")
        lines.append(f"    if isinstance({value}, Tensor):")
        lines.append(f"        if {value}._is_inference: check_savable({value})")
        lines.append(f"        c = {value}._version_counter; {version} = 0 if c is None else c[0]")
        lines.append(f"    else: {version} = None")
    if len(plan.entries) == 1:
        lines.append("    node.saved_values, node.saved_versions = v0, r0")
    else:
        values = "".join(f"v{k}, " for k in range(len(plan.entries)))
        versions = "".join(f"r{k}, " for k in range(len(plan.entries)))
        lines.append(f"    node.saved_values, node.saved_versions = ({values}), ({versions})")
    exec(compile("\n".join(lines) + "\n", f"<saver of {plan.entries}>", "exec"), namespace)  # noqa: S102
    plan.saver = namespace["saver"]
    return plan.saver


def _save(node: SavingNode, op: Any, entries: tuple, tensors: Sequence[Any], attrs: dict,
          outputs: Sequence[Tensor], plain: bool = True) -> None:
    """Keeps what the formulas of ``node`` read. ``plain`` when no saved-tensor hook is set and the op
    is not variadic: an input tensor is then kept as it is, with its version as a number, and an
    output its op has just made needs none of ``SavedTensor``'s checks."""
    if len(entries) == 1:
        entry = entries[0]
        source = entry[1]
        if plain and source == SAVE_INPUT:
            value = tensors[entry[2]]
        elif plain and source == SAVE_RESULT and not outputs[0]._is_inference:
            node.saved_values, node.saved_versions = SavedTensor.of_new_output(outputs[0], 0), None
            return
        else:
            value = saved_value(op, entry, tensors, attrs, outputs)
        node.saved_values = value
        if isinstance(value, Tensor):
            if value._is_inference:
                check_savable(value)
            counter = value._version_counter
            node.saved_versions = 0 if counter is None else counter[0]
        else:
            node.saved_versions = None
        return
    values, versions = [], []
    for entry in entries:
        if plain and entry[1] == SAVE_INPUT:
            value = tensors[entry[2]]
        else:
            value = saved_value(op, entry, tensors, attrs, outputs)
        values.append(value)
        if isinstance(value, Tensor):
            if value._is_inference:
                check_savable(value)
            versions.append(version_of(value))
        else:
            versions.append(None)
    node.saved_values, node.saved_versions = tuple(values), tuple(versions)


def _general_node(cls: type[SavingNode], tensors: Sequence[Any], outputs: Sequence[Tensor]) -> tuple[Node, tuple]:
    """``record``'s node for any call: any number of inputs and outputs, on any device, in anomaly mode."""
    edges = tuple([gradient_edge(t) if isinstance(t, Tensor) else None for t in tensors])
    node = cls(edges)
    set_history(outputs, node)
    return node, tuple([e is not None for e in edges])


_new_node = object.__new__


def saved_value(op: Any, entry: tuple[str, int, int], inputs: Sequence[Any], attrs: dict,
                outputs: Sequence[Tensor]) -> Any:
    """What a node keeps of one parameter its formulas read."""
    param, source, index = entry
    if source == SAVE_INPUT:
        if op.variadic:
            return tuple(SavedTensor(t) for t in inputs)
        value = inputs[index]
        if not isinstance(value, Tensor):
            return value
        if saving_hooks():
            return SavedTensor(value)
        check_savable(value)
        return value
    if source == SAVE_RESULT:
        return SavedTensor(outputs[0], 0)
    if source == SAVE_ATTR:
        if param not in attrs:
            raise TypeError(f"op {op.name}: a derivative formula reads {param!r}, which is neither "
                            "an input, an attribute of this call, grad(s) nor result(s)")
        return attrs[param]
    if source == SAVE_SHAPE:
        return tuple(np.shape(_data(t)) for t in inputs) if op.variadic else np.shape(_data(inputs[index]))
    return tuple(SavedTensor(o, nr if o._data.dtype.kind == "f" else None) for nr, o in enumerate(outputs))


def _data(value: Any) -> Any:
    return value._data if isinstance(value, Tensor) else value
