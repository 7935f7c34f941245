"""Staged backward formulas: a node's derivative formulas, run once on tensors and replayed on arrays.

A derivative formula is written in jitgrad ops, so that ``create_graph``, higher order and tracing come
for free. Outside ``create_graph`` that generality costs: each formula call builds tensors nobody sees
and pays an op dispatch per step. Here a node's formulas are run once, on its real values, under the
registry's observer; the ops they call are recorded and replayed as a generated Python function that
calls each op's numpy forward on arrays. The function begins with guards on everything the recording
depended on — the shape and dtype of every gradient and saved array, the type and value of every
number, attribute and shape the formulas read, the default dtype — and answers ``MISS`` when one
fails, so a node whose values differ from the recording's is staged again (up to ``MAX_STAGES``
variants per save plan and gradient shape, then its formulas run on tensors as before). Since the
guarded values fix every shape, any attribute a formula computes from them is a constant of the stage.

A formula is not staged, and runs on tensors, when its recording could not be replayed faithfully: it
reads a value in Python (``item()``, ``bool(t)``..., refused while staging), makes a tensor outside
the ops (a factory, a constant), writes in place, or reads something no guard can compare (an array
attribute). The replay calls the same numpy forwards in the same order as the formulas do, so its
results are bit for bit those of the tensor path; ``tests/eager/test_fast_backward.py`` checks that
for every registry op.

The generated source of a stage is its ``source`` attribute (``print(stage.source)`` shows what runs).
"""
from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from ..autograd.grad_mode import no_grad
from ..autograd.graph import FORMULA_MISS
from ..autograd.saved_tensor import FREED, SavedTensor, version_of
from ..dtypes import get_default_dtype
from ..tensor import Tensor
from . import registry

if TYPE_CHECKING:
    from .op_backward import OpBackward

MISS = FORMULA_MISS  # a stage's answer when a guard fails (a node's array_formula answers the same)
MAX_STAGES = 8  # variants per plan and shape: a loop whose scalar changes every step must not grow memory
MAX_SHAPES = 256  # shapes per plan kept staged; past that the plan starts afresh


class _ValueRead(Exception):
    """A formula read a tensor's value in Python while being staged."""


class _Unstageable(Exception):
    """A formula did something a replay over arrays would not reproduce."""


class StagingTensor(Tensor):
    """The tensors a formula sees while it is staged: reading a value in Python would bake that value
    into every later replay, so it stops the staging instead."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise _ValueRead

    item = numpy = tolist = __float__ = __int__ = __index__ = __bool__ = __array__ = _refuse


class Stage:
    """One staged variant of a node's formulas: ``run(grads, node)`` gives the gradients (one array or
    None per next edge) or ``MISS``; ``source`` is the generated code. ``run.routed`` is ``run``
    without its guards on ``grads`` (their number, shapes and dtypes), for a caller that has checked
    them already: a replay program, whose routing checks every gradient it hands a node
    (``backward_replay``), paid those guards twice (W2: about 200 bytecodes a step)."""

    __slots__ = ("run", "source")

    def __init__(self, run: Any, source: str) -> None:
        self.run = run
        self.source = source


class Variants:
    """The stages of one save plan for gradients of one shape (a plan keeps them by shape, so that the
    cap on variants bounds what values alone vary, such as a scalar that changes every step, and a
    program with many shapes stages every one of them); ``unstaged`` counts the nodes whose formulas
    could not be staged."""

    __slots__ = ("stages", "unstaged")

    def __init__(self) -> None:
        self.stages: list[Stage] = []
        self.unstaged = 0


def apply_arrays(node: "OpBackward", grads: list) -> list | None:
    """The gradients for ``node``'s next edges from the arrays ``grads`` (one per output, None where no
    gradient arrived); None when the node cannot run outside the engine."""
    if len(grads) > 1 and any(g is None for g in grads):
        grads = [g if g is not None else np.zeros(node.input_metadata(i).shape, node.input_metadata(i).dtype)
                 for i, g in enumerate(grads)]
    by_shape = node.save_plan.variants
    variants = by_shape.get(grads[0].shape)
    if variants is not None:
        for stage in variants.stages:
            out = stage.run(grads, node)
            if out is not MISS:
                return out
    if node.saved_values is FREED or not _runnable(node):
        return None
    if variants is None:
        if len(by_shape) >= MAX_SHAPES:
            by_shape.clear()
        variants = by_shape[grads[0].shape] = Variants()
    if len(variants.stages) + variants.unstaged >= MAX_STAGES:
        return _on_tensors(node, grads)
    try:
        with no_grad():
            stage = _generate(node, grads, variants)
    except _Unstageable:
        variants.unstaged += 1
        return _on_tensors(node, grads)
    variants.stages.append(stage)
    out = stage.run(grads, node)
    return _on_tensors(node, grads) if out is MISS else out


def formula_for(node: "OpBackward", grads: list) -> Any:
    """The ``run`` of the stage that answers ``apply_arrays(node, grads)`` now (``Node.array_formula``):
    its guards, the node's save plan among them, make it answer ``MISS`` for any node it does not fit.
    Called once per node when a replay program is written, so it may run the stages again."""
    if len(grads) != node.num_inputs() or any(g is None for g in grads):
        return None
    variants = node.save_plan.variants.get(grads[0].shape)
    for stage in variants.stages if variants is not None else ():
        if stage.run(grads, node) is not MISS:
            return stage.run
    return None


def _on_tensors(node: "OpBackward", grads: list) -> list | None:
    """The node's formulas on tensors, as the engine runs them: for what no stage can replay. Grad
    mode is off, as in the engine without ``create_graph`` (the fast path leaves it as it finds it:
    a stage, which runs no ops, needs no switch, which costs a thread setting's bookkeeping twice)."""
    with no_grad():
        outputs = node.apply([Tensor._make(g) for g in grads], None)
    arrays = []
    for g in outputs:
        if g is not None and not isinstance(g, Tensor):
            return None  # the engine's own checks report it
        arrays.append(None if g is None else g._data)
    return arrays


class _Recording:
    """Generated code being written for one stage: guards first, then the formulas' steps."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.globals: dict[str, Any] = {"MISS": MISS, "FREED": FREED, "ndarray": np.ndarray,
                                        "asarray": np.asarray, "same": _same, "default_dtype": get_default_dtype}
        self.names: dict[int, str] = {}  # id of a tensor the formulas see -> its variable
        self.alive: list[Any] = []  # keeps those tensors alive, so their ids stay theirs

    def constant(self, value: Any) -> str:
        if _holds_array(value):  # an array made from a tensor's values outside the ops: not a constant
            raise _Unstageable("an array argument")
        name = f"K{len(self.globals)}"
        self.globals[name] = value
        return name

    def guard_array(self, variable: str, array: np.ndarray) -> Tensor:
        dtype, shape = self.constant(array.dtype), self.constant(array.shape)
        self.lines.append(f"    if {variable}.dtype is not {dtype} or {variable}.shape != {shape}: return MISS")
        return self.tensor(variable, array)

    def tensor(self, variable: str, array: np.ndarray) -> Tensor:
        t = StagingTensor._make(array)
        self.names[id(t)] = variable
        self.alive.append(t)
        return t

    def guard_value(self, variable: str, value: Any) -> None:
        if not _guardable(value):
            raise _Unstageable(f"cannot guard a {type(value).__name__}")
        constant = self.constant(value)
        if type(value) is tuple and all(type(v) is int for v in value):  # a shape or dims: types, then values
            types = self.constant(tuple(int for _ in value))
            self.lines.append(f"    if type({variable}) is not tuple or tuple(map(type, {variable})) != {types} "
                              f"or {variable} != {constant}: return MISS")
        elif isinstance(value, (tuple, list, slice)) or isinstance(value, float) and value == 0:
            self.lines.append(f"    if not same({variable}, {constant}): return MISS")
        else:
            kind = self.constant(type(value))
            self.lines.append(f"    if type({variable}) is not {kind} or {variable} != {constant}: return MISS")

    def reference(self, value: Any) -> str:
        """A step's argument as code: a tensor the stage knows, or a constant."""
        if isinstance(value, Tensor):
            name = self.names.get(id(value))
            if name is None:
                raise _Unstageable("a tensor made outside the ops")
            return name
        if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
            inner = ", ".join(self.reference(v) for v in value)
            return f"[{inner}]" if isinstance(value, list) else f"({inner},)"
        return self.constant(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float, complex, np.number))


def _holds_array(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return True
    return isinstance(value, (tuple, list)) and any(_holds_array(v) for v in value)


def _same(value: Any, expected: Any) -> bool:
    """Whether a value equals a guarded one, type for type and element by element, never comparing an
    array (a mask in an index where the recording had a slice) and telling -0.0 from 0.0."""
    if type(value) is not type(expected):
        return False
    if isinstance(expected, (tuple, list)):
        return len(value) == len(expected) and all(_same(v, e) for v, e in zip(value, expected))
    if isinstance(expected, slice):
        return _same((value.start, value.stop, value.step), (expected.start, expected.stop, expected.step))
    if isinstance(expected, float) and expected == 0:
        return value == 0 and math.copysign(1.0, value) == math.copysign(1.0, expected)
    return bool(value == expected)


def _guardable(value: Any) -> bool:
    if value is None or value is Ellipsis or isinstance(value, (bool, int, float, str, np.dtype, np.number)):
        return True
    if isinstance(value, (tuple, list)):
        return all(_guardable(v) for v in value)
    if isinstance(value, slice):
        return _guardable((value.start, value.stop, value.step))
    return False


def _runnable(node: "OpBackward") -> bool:
    """Whether the saved values can be read as arrays: not freed, not modified in place since, not
    packed by saved-tensor hooks. Otherwise the engine runs the node and reports what is wrong."""
    for value, version in zip(node.saved(), node.versions()):
        if isinstance(value, Tensor) and version_of(value) != version:
            return False
        for v in value if type(value) is tuple else (value,):
            if isinstance(v, SavedTensor) and not v.readable():
                return False
    return True


def _read_saved(recording: _Recording, variable: str, value: Any, version: str) -> Any:
    """Writes the guards and unpacking of one saved value (``version``: the code of its version when
    saved, for an input tensor); returns what the formulas get for it."""
    lines = recording.lines
    if isinstance(value, (Tensor, SavedTensor, tuple)) or _is_number(value):  # a number or a tensor
        lines.append(f"    if type({variable}) is not {recording.constant(type(value))}: return MISS")
    if isinstance(value, Tensor):
        lines.append(f"    c = {variable}._version_counter")  # version_of, in the stage's frame
        lines.append(f"    if (0 if c is None else c[0]) != {version}: return MISS")
        lines.append(f"    {variable} = {variable}._data")
        return recording.guard_array(variable, value._data)
    if isinstance(value, SavedTensor):
        lines.append(f"    {variable} = {variable}.readable_array()")
        lines.append(f"    if {variable} is None: return MISS")
        return recording.guard_array(variable, value.array())
    if type(value) is tuple and value and isinstance(value[0], SavedTensor):
        lines.append(f"    if len({variable}) != {len(value)}: return MISS")
        items = []
        for j, item in enumerate(value):
            lines.append(f"    {variable}_{j} = {variable}[{j}]")
            items.append(_read_saved(recording, f"{variable}_{j}", item, "None"))
        return tuple(items)
    recording.guard_value(variable, value)
    return value


def _callable(step: Any, args: tuple, attrs: dict) -> Any:
    """What a replay calls for ``step``: its forward, or the numpy function the forward says it reduces
    to for arguments of these types and dtypes (``forward.specialize``), which the stage's guards fix."""
    specialize = getattr(step.forward, "specialize", None)
    if specialize is not None and not step.variadic:
        direct = specialize(*[a._data if isinstance(a, Tensor) else a for a in args], **attrs)
        if direct is not None:
            return direct
    return step.forward


def _refuse(*args: Any) -> None:
    raise _Unstageable("a formula made a tensor outside the ops or wrote in place")


def _generate(node: "OpBackward", grads: list, variants: Variants) -> Stage:
    """Records ``node``'s formulas on its own values and writes the guarded replay of them, one of
    ``variants``. Its first guard holds while the node's save plan keeps ``variants`` for these
    gradients, so that a stage called directly (``formula_for``) is dropped with them."""
    op, entries = node.op, node.save_plan.entries
    recording = _Recording()
    lines = recording.lines
    grad_tensors = []
    lines.append(f"    if len(grads) != {len(grads)}: return MISS")
    for k, grad in enumerate(grads):
        lines.append(f"    g{k} = grads[{k}]")
        grad_tensors.append(recording.guard_array(f"g{k}", grad))
    grad_guards = set(range(len(lines))) - {1 + 2 * k for k in range(len(grads))}  # all but ``gk = grads[k]``
    values: dict[str, Any] = {}
    plan = recording.constant(node.save_plan)
    lines.append(f"    if node.save_plan is not {plan} or {plan}.variants.get({recording.constant(grads[0].shape)}) "
                 f"is not {recording.constant(variants)}: return MISS")
    # a formula's ops may read the default dtype (``int_tensor * 0.5``, pow's log of an integer base), and
    # a step writes into a temporary of the dtype it had when staged: a stage replays under its own only
    lines.append(f"    if default_dtype() is not {recording.constant(get_default_dtype())}: return MISS")
    if entries:
        lines.append("    saved, versions = node.saved_values, node.saved_versions")
        lines.append("    if saved is FREED: return MISS")
    for position, ((param, _, _), value) in enumerate(zip(entries, node.saved())):
        index = "" if len(entries) == 1 else f"[{position}]"
        lines.append(f"    s_{param} = saved{index}")
        values[param] = _read_saved(recording, f"s_{param}", value, f"versions{index}")

    def arguments(name: str) -> list:
        return [grad_tensors[0] if p == "grad" else tuple(grad_tensors) if p == "grads" else values[p]
                for p in op.reads[name]]

    steps: list[_Step] = []

    def observe(step: Any, args: tuple, attrs: dict, out: Any) -> None:
        if any(isinstance(a, registry.SymbolicValue) for a in args):
            raise _Unstageable("a traced number")
        call = ", ".join([recording.reference(a) for a in args]
                         + [f"{k}={recording.constant(v)}" for k, v in attrs.items()])
        outs = out if type(out) is tuple else (out,)
        names = []
        for o in outs:
            o.__class__ = StagingTensor
            names.append(f"v{len(recording.names)}")
            recording.names[id(o)] = names[-1]
            recording.alive.append(o)
        function = _callable(step, args, attrs)
        steps.append(_Step(names, type(out) is tuple, function, recording.constant(function), call,
                           [o._data for o in outs]))

    needed = [e is not None for e in node.next_edges]
    results: list[Any] = [None] * len(needed)
    try:
        with registry.observing(observe, _refuse, created=_refuse, before_write=_refuse):
            if op.variadic:
                if any(needed):
                    name = op.inputs[0]
                    results = [g if need else None for g, need in zip(op.derivatives[name](*arguments(name)),
                                                                      needed)]
            else:
                for i, name in enumerate(op.inputs):
                    if needed[i] and name in op.reads:
                        results[i] = op.derivatives[name](*arguments(name))
    except _ValueRead:
        raise _Unstageable("a formula read a value in Python") from None
    outputs = [recording.reference(r) if isinstance(r, Tensor) else "None" if r is None else _not_tensor(r)
               for r in results]
    returned = f"    return [{', '.join(outputs)}]"
    lines += _steps_lines(steps, returned)
    lines.append(returned)
    source = "def staged(grads, node):\n" + "\n".join(lines) + "\n"
    routed = "def routed(grads, node):\n" + "\n".join(line for i, line in enumerate(lines) if i not in grad_guards)
    namespace = recording.globals
    exec(compile(source + routed + "\n", f"<staged {node.name()}>", "exec"), namespace)  # noqa: S102 - our own generated code
    run = namespace["staged"]
    run.routed = namespace["routed"]
    return Stage(run, source)


class _Step:
    """One op call a formula made while staged: the variables it assigns, the function the replay
    calls (its constant's name) and the call's arguments as code, and the arrays it gave then."""

    __slots__ = ("names", "several", "function", "constant", "call", "arrays")

    def __init__(self, names: list[str], several: bool, function: Any, constant: str, call: str,
                 arrays: list) -> None:
        self.names, self.several, self.function, self.constant = names, several, function, constant
        self.call, self.arrays = call, arrays


# Arithmetic whose result is rounded once per element whichever loop numpy picks, so that writing it
# into an operand's memory (``out=``) gives the bits a fresh array would; but only where the operand's
# layout is the one numpy gives a fresh result (``_steps_lines``): a later reduction sums in memory
# order, so another layout changes its last bits.
_IN_PLACE = {np.add, np.subtract, np.multiply, np.true_divide, np.negative}
_VARIABLE = re.compile(r"\bv\d+\b")


def _steps_lines(steps: list[_Step], returned: str) -> list[str]:
    """The replay's lines for the formulas' op calls. An arithmetic step whose operand is an array an
    earlier step of the stage made (so memory nobody else can see), used for the last time here, of
    the result's shape and dtype, writes its result there: ``1 - y * y`` then ``grad * that`` (tanh's
    derivative) make one array instead of three. Each array fewer is memory a step need not find in
    the cache: W2's backward runs between matrix products whose packing reads what is cached. The
    operand must also have the strides the fresh result had when staged: ``cos`` of a stacked broadcast
    keeps its input's permuted layout, ``grad * cos`` is C-ordered, and a sum over the gradient read
    in the permuted order rounded otherwise than the engine's."""
    last_use: dict[str, int] = {}
    for index, step in enumerate(steps):
        for name in _VARIABLE.findall(step.call):
            last_use[name] = index
    for name in _VARIABLE.findall(returned):
        last_use[name] = len(steps)
    arrays: dict[str, np.ndarray] = {}
    private: set[str] = set()  # variables holding an array a step here made, in memory of its own
    lines = []
    for index, step in enumerate(steps):
        out = ""
        result = step.arrays[0]
        if step.function in _IN_PLACE and not step.several and type(result) is np.ndarray and result.ndim:
            for name in _VARIABLE.findall(step.call):
                held = arrays.get(name)
                if name in private and last_use[name] == index and held.shape == result.shape \
                        and held.dtype == result.dtype and held.strides == result.strides:
                    out = f", out={name}"
                    break
        target = ", ".join(step.names) + "," if step.several else step.names[0]
        lines.append(f"    {target} = {step.constant}({step.call}{out})")
        for name, array in zip(step.names, step.arrays):
            lines.append(f"    if type({name}) is not ndarray: {name} = asarray({name})")
            arrays[name] = array
            if isinstance(step.function, np.ufunc) and type(array) is np.ndarray and array.ndim:
                private.add(name)
    return lines


def _not_tensor(value: Any) -> str:
    raise _Unstageable(f"a formula returned a {type(value).__name__}")
