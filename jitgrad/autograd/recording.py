"""Recording the backward node of one op call, as PyTorch's generated autograd wrappers do: the node,
its edges, what its derivative formulas will read, and the history of the outputs.

Every op call that requires grad comes through ``record``, and at 16 elements a training step's ops
cost less in numpy than their recording does, so the common call (one or two inputs, one float output
on the CPU) is made in one frame written for its op and node class (``recorder``): edges, every slot
of the node, the saved values and the output's history. Spread over a record function in the op
layer, a node maker here and a function per saved value, it cost W1's forward (126 nodes) about
20 us a step more, 4% (measured side by side).

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
from .graph import _ONE_CPU_SLOT, Node, _one_cpu_slot, _sequence, grad_accumulator, gradient_edge, set_history
from .saved_tensor import (FREED, FREED_ERROR, SavedTensor, _hooks, check_savable, check_version, saving_hooks,
                           version_of)

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

    def __getattr__(self, name: str) -> Any:
        """PyTorch's ``node._saved_self``, ``_saved_other``, ``_saved_result``...: a saved value by the name
        its formulas read it under, checked as the formulas get it (PyTorch's errors once freed or
        changed in place). Only asked for names the node's slots do not hold, so it costs nothing else. A
        saved shape answers to PyTorch's name too (``_saved_self_sym_sizes`` for ``self_shape``)."""
        param = name[7:] if name.startswith("_saved_") else None
        if param is not None and param.endswith(_SYM_SIZES):
            param = param[:-len(_SYM_SIZES)] + "_shape"
        plan = self.save_plan if param is not None else None
        if plan is None or param not in plan.positions:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        position = plan.positions[param]
        value = self.saved()[position]
        if isinstance(value, SavedTensor):
            return value.unpack(self)
        if isinstance(value, Tensor):
            return check_version(value, self.versions()[position], self)
        if type(value) is tuple and value and isinstance(value[0], SavedTensor):
            return tuple(v.unpack(self) for v in value)
        return value

    def __dir__(self) -> list[str]:
        plan = getattr(self, "save_plan", None)
        names = [f"_saved_{param}" for param in plan.positions] if plan else []
        pytorchs = [name[:-len("_shape")] + _SYM_SIZES for name in names if name.endswith("_shape")]
        return list(super().__dir__()) + names + pytorchs

    def release_variables(self) -> None:
        """Frees what the node saved. A node that kept a tensor or a number (PyTorch saves a number as
        a tensor) refuses a second backward from then on; one that kept only shapes and attributes
        may run again, as in PyTorch. The node is the only holder of its ``SavedTensor``s (nothing
        hands them out), so dropping them frees their arrays: a training step frees every node."""
        if self.save_plan.frees:
            self.saved_values = FREED


_SYM_SIZES = "_sym_sizes"  # PyTorch's ending of a saved shape's name (jitgrad's formulas read ``<input>_shape``)


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
        if type(data) is np.ndarray and not op.variadic and not _hooks.stack:
            recorder(cls, op, len(tensors))(*tensors, attrs, output)
            return
        node, needs = _general_node(cls, tensors, outputs)
    elif not any(o._data.dtype.kind == "f" for o in outputs):
        return
    else:
        node, needs = _general_node(cls, tensors, outputs)
    node.op = op
    plan = node.save_plan = op.save_plans.get(needs) or op.plan_for(needs)
    _save(node, op, plan.entries, tensors, attrs, outputs, not op.variadic and not _hooks.stack)


def recorder(cls: type[SavingNode], op: Any, inputs: int) -> Callable[..., None]:
    """The recorder of calls of ``op`` on ``inputs`` (1 or 2) inputs whose nodes are of ``cls``, the
    record of what ``jitgrad.ops``' op callers hand here: a call whose output is one float array on
    the CPU, with every thread setting at its default (so no saved-tensor hooks) and at least one
    input a tensor that requires grad. ``recorder(a, attrs, output)`` for one input,
    ``recorder(a, b, attrs, output)`` for two (either may be a number).

    Written once per node class and op (``_write_recorder``): its edges, every slot of the node, the
    output's history and the saving of each save plan (one per inputs needing a gradient) in one
    frame, with nothing decided per call that the op decides once. At W2's sizes an op's recording
    was as much Python as its numpy work; spread over a recorder, a save plan lookup and a saver it
    cost W2's 13 ops about 700 bytecodes a step more."""
    key = (cls, op, inputs)
    written = _RECORDERS.get(key)
    if written is None:
        written = _RECORDERS[key] = _write_recorder(cls, op, inputs)
    return written


_RECORDERS: dict[tuple, Callable[..., None]] = {}
_ONE_NEEDED = (True,)


def _write_recorder(cls: type[SavingNode], op: Any, inputs: int) -> Callable[..., None]:
    names = ("a",) if inputs == 1 else ("a", "b")
    tensors = f"({', '.join(names)},)"
    namespace: dict[str, Any] = {
        "cls": cls, "op": op, "record": record, "anomaly": anomaly_mode.state, "Tensor": Tensor, "new": _new_node,
        "gradient_edge": gradient_edge, "grad_accumulator": grad_accumulator, "sequence": _sequence, "one_cpu": _ONE_CPU_SLOT, "one_cpu_slot": _one_cpu_slot,
        "check_savable": check_savable, "shape_of": np.shape, "of_new_output": SavedTensor.of_new_output,
        "saved_value": saved_value, "general_save": _save}
    lines = [f"def recorder({', '.join(names)}, attrs, output):",
             f"    if anomaly.enabled: return record(cls, op, {tensors}, attrs, (output,))"]
    for name, edge in zip(names, ("first", "second")):  # gradient_edge, written out: a frame less per input
        lines += [f"    if isinstance({name}, Tensor):",
                  f"        fn = {name}._grad_fn",
                  f"        if {name}._view is not None: {edge} = gradient_edge({name})",
                  f"        elif fn is not None: {edge} = (fn, {name}._output_nr)",
                  f"        elif {name}._requires_grad: {edge} = (grad_accumulator({name}), 0)",
                  f"        else: {edge} = None",
                  f"    else: {edge} = None"]
    lines += ["    node = new(cls)",
              "    node._next_edges = (first, second)" if inputs == 2 else "    node._next_edges = (first,)",
              "    node._sequence_nr = next(sequence.counter)",
              "    node._topological_nr = node._metadata = None",
              "    node._pre_hooks = node._post_hooks = node._tensor_pre_hooks = node._retains_grad = None",
              "    data = output._data",
              "    slots = one_cpu.get((data.shape, data.dtype))",
              "    node._input_metadata = slots if slots is not None else one_cpu_slot(data.shape, data.dtype)",
              "    output._requires_grad = True",
              "    output._grad_fn = node",
              "    node.op = op"]
    if inputs == 1:
        branches = [("", _ONE_NEEDED)]
    else:
        branches = [("if first is not None and second is not None:", (True, True)),
                    ("elif first is not None:", (True, False)), ("elif second is not None:", (False, True)),
                    ("else:", (False, False))]
    for number, (test, needs) in enumerate(branches):
        indent = "    " if not test else "        "
        if test:
            lines.append(f"    {test}")
        plan = namespace[f"P{number}"] = op.save_plans.get(needs) or op.plan_for(needs)
        lines.append(f"{indent}node.save_plan = P{number}")
        lines += _saving_lines(plan, f"P{number}", tensors, indent, namespace)
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<recorder of {op.name} ({cls.__name__})>", "exec"), namespace)  # noqa: S102
    written = namespace["recorder"]
    written.source = source  # what runs, for a reader (as a stage's and a replay program's ``source``)
    return written


def _saving_lines(plan: Any, plan_name: str, tensors: str, indent: str, namespace: dict) -> list[str]:
    """What ``_save`` does with ``plain`` for ``plan``'s entries, as lines of a recorder: the plan
    decides once per entry what ``_save`` decides on every call (a node of W2's matmul saved its two
    inputs in 110 bytecodes through ``_save``, in 30 through these)."""
    lines = []
    entries = plan.entries
    if any(source == SAVE_RESULT for _, source, _ in entries):  # as _save: no shortcut for these
        lines.append(f"if output._is_inference: return general_save(node, op, {plan_name}.entries, {tensors}, "
                     "attrs, (output,))")
    for k, entry in enumerate(entries):
        param, source, index = entry
        namespace[f"{plan_name}_E{k}"] = entry
        value, version = f"v{k}", f"r{k}"
        x = "ab"[index] if source in (SAVE_INPUT, SAVE_SHAPE) else None
        if source == SAVE_RESULT:
            lines.append(f"{value} = of_new_output(output, 0); {version} = None")
            continue
        if source == SAVE_SHAPE:
            lines.append(f"{value} = {x}._data.shape if isinstance({x}, Tensor) else shape_of({x}); {version} = None")
            continue
        if source == SAVE_INPUT:
            lines.append(f"{value} = {x}")
        elif source == SAVE_ATTR:
            lines.append(f"{value} = attrs[{param!r}] if {param!r} in attrs else "
                         f"saved_value(op, {plan_name}_E{k}, {tensors}, attrs, (output,))")
        else:
            lines.append(f"{value} = saved_value(op, {plan_name}_E{k}, {tensors}, attrs, (output,))")
        lines += [f"if isinstance({value}, Tensor):",
                  f"    if {value}._is_inference: check_savable({value})",
                  f"    c = {value}._version_counter; {version} = 0 if c is None else c[0]",
                  f"else: {version} = None"]
    if len(entries) == 1:
        lines.append("node.saved_values, node.saved_versions = v0, r0")
    else:
        values = "".join(f"v{k}, " for k in range(len(entries)))
        versions = "".join(f"r{k}, " for k in range(len(entries)))
        lines.append(f"node.saved_values, node.saved_versions = ({values}), ({versions})")
    return [indent + line for line in lines]


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
