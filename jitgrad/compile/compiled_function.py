"""What a compiled function runs: lowered graphs, and the autograd node that runs a compiled backward.

``lower`` takes a captured graph through the pass pipeline and the backend, keeping what ``explain``
shows (the IR before and after, fusion groups, the memory plan, the source). ``StepProgram`` runs a
step and writes its ``.grad``s and in-place updates back into the caller's tensors. ``LossProgram``
runs a forward and hands its differentiable outputs one ``CompiledFunctionBackward`` node, whose
``apply`` runs the compiled backward for the gradients the engine asks for (one lowered variant per
set of needed inputs), or, under ``create_graph=True``, the eager backward of a re-run of the function.
"""
from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..autograd import grad_mode
from ..autograd.differentiate import grad as autograd_grad
from ..autograd.graph import Node, gradient_edge, new_input_metadata
from ..autograd.versions import increment_version
from ..fx.graph import Graph
from ..fx.node import Node as IRNode, Opcode
from ..fx.passes import PassManager, partition_joint
from ..fx.passes.dead_code import eliminate_dead_code
from ..fx.passes.hoist_numbers import NumberPrelude
from ..tensor import Tensor
from .backend import Backend
from .capture import Unsupported
from .templates import flatten_output, slots, template_filler, tensor_leaves


def logs(topic: str) -> bool:
    return topic in os.environ.get("JITGRAD_LOG", "").split(",")


@dataclass
class Lowered:
    """One graph after passes and lowering, with what ``explain`` reports about it."""

    label: str
    call: Callable[..., tuple]
    source: str
    ir_before: str
    ir_after: str
    pass_report: str
    fusion_groups: list[str]
    memory: dict[str, Any]
    out_dtypes: list[np.dtype]
    reused: bool = False      # the backend had kernels for a graph equal up to sizes (in this process)
    from_disk: bool = False   # loaded from the disk cache instead of lowered
    example_out: list | None = None  # what the example call returned (used once, to warm up the backward)


# Structural keys of the graphs lowered so far: a backend that caches kernels by structure (numba's
# does, by generated source) reuses them for a graph equal up to sizes, so lowering it is cheap.
_SEEN_KEYS: set[Any] = set()


def _failing_node(graph: Graph, error: BaseException) -> IRNode | None:
    node = getattr(error, "node", None)
    if isinstance(node, IRNode):
        return node
    text = str(error)
    for candidate in graph.nodes:
        if candidate.op is Opcode.CALL_FUNCTION and (candidate.name in text or candidate.target_name in text):
            return candidate
    return None


def _structural_key(compiled: Any, graph: Graph, backend: Backend, options: dict[str, Any]) -> tuple | None:
    """What says whether this process lowered an equal graph up to sizes before: the compiled
    object's own key when it has one (generating the code again just to hash it costs a lowering)."""
    code = getattr(compiled, "key", None)
    if code is None and backend.structural_key is not None:
        code = backend.structural_key(graph)
    return None if code is None else (backend.name, code, options["fastmath"], options["parallel"])


def lower(graph: Graph, backend: Backend, options: dict[str, Any], label: str,
          sources: dict[str, str], disk: Any = None, example: list[np.ndarray] | None = None) -> Lowered:
    """Passes then the backend; an op without a lowering (or any backend failure) is ``Unsupported``,
    naming the op and the user's line where the trace saw it. The lowered code runs once on copies of
    ``example`` here, so that a backend compiling lazily (numba compiles on the first call) fails now,
    while the call can still run eagerly, and never in the middle of a backward."""
    before = str(graph)
    for node in graph.nodes:  # the lowered graph runs on arrays, where grad mode means nothing, so
        node.meta.pop("no_grad", None)  # a backward's recomputation may share the forward's node
    manager = PassManager()
    graph = manager.run(graph)
    records = {r.name: r for r in graph.history}
    fusion = records.get("group_fusions")
    memory = records.get("plan_memory")
    out_dtypes = [np.dtype(n.meta["dtype"]) for n in graph.output_node.args[0]]
    disk_key = disk.key(graph, f"{backend.name} ({backend.version})", options) if disk is not None else None
    compiled = disk.load(disk_key) if disk_key is not None else None
    from_disk = compiled is not None
    if from_disk:
        disk.restore_machine_code(compiled, options["fastmath"])
    try:
        if compiled is None:
            compiled = backend.lower(graph, fastmath=options["fastmath"], parallel=options["parallel"])
        example_out = None
        if example is not None:
            example_out = list(compiled(*[np.array(a, copy=True) if type(a) is np.ndarray else a for a in example]))
        if disk_key is not None and not from_disk and disk.store(disk_key, compiled):
            disk.save_machine_code(compiled, options["fastmath"])
    except Exception as error:  # noqa: BLE001 - a backend's own traceback never reaches the user
        node = _failing_node(graph, error)
        op = node.target_name if node is not None else None
        where = sources.get(node.name) if node is not None else None
        kind = "no lowering" if isinstance(error, backend.lowering_errors) else \
            f"the {backend.name} backend failed ({type(error).__name__})"
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise Unsupported(f"{kind}: {first_line}", op, where) from None
    key = _structural_key(compiled, graph, backend, options)
    reused = key is not None and key in _SEEN_KEYS
    if key is not None:
        _SEEN_KEYS.add(key)
    source = getattr(compiled, "source", "")
    if logs("output_code") and not reused and not from_disk:
        print(f"--- jitgrad.compile: generated code for {label} ({backend.name}) ---\n{source}", file=sys.stderr)
    lowered = Lowered(label, compiled, source, before, str(graph), manager.report(),
                      list(fusion.changes) if fusion else [], dict(memory.stats) if memory else {}, out_dtypes,
                      reused, from_disk)
    lowered.example_out = example_out
    return lowered


def _as_tensor(index: int, array: np.ndarray) -> Tensor:
    return Tensor._make(array)


@dataclass
class InputLayout:
    """Where a call finds each graph input among ``values`` (its argument leaves, then the free
    variables the compiled function reads, ``decorator.py``): a position, or for the ``.grad`` of an
    input, that input's index (the gradient is read through it)."""

    positions: list[int | None]
    grad_of: list[int | None]

    def __post_init__(self) -> None:
        self._grads = [(i, owner) for i, owner in enumerate(self.grad_of) if owner is not None]

    def gather(self, values: list) -> list:
        inputs = [values[p] if p is not None else None for p in self.positions]
        for i, owner in self._grads:
            inputs[i] = inputs[owner]._grad
        return inputs


def arrays_of(inputs: list) -> list[np.ndarray]:
    """The arrays a lowered graph takes: a tensor's, or a numpy array read from outside (or a Python
    number passed at each call) as it is."""
    return [v._data if isinstance(v, Tensor) else v for v in inputs]


@dataclass
class NumberInputs:
    """The Python numbers a lowered graph reads beyond its inputs: what ``hoist_numbers`` took out
    of it (``lr * 0.5``), computed at each call from the run-time numbers among the inputs."""

    prelude: NumberPrelude
    positions: list[int]   # the inputs the prelude reads, by index

    def extend(self, inputs: list) -> list:
        if not self.prelude:
            return inputs
        return [*inputs, *self.prelude(*[inputs[i] for i in self.positions])]


def no_numbers() -> NumberInputs:
    return NumberInputs(NumberPrelude(), [])


def _run(lowered: Lowered, arrays: list[np.ndarray]) -> list[np.ndarray]:
    flat = lowered.call(*arrays)
    return [v if isinstance(v, np.ndarray) and (v.dtype is d or v.dtype == d) else np.asarray(v, dtype=d)
            for v, d in zip(flat, lowered.out_dtypes)]  # ``is`` first: comparing dtypes costs ~0.3 us


# ---- a whole step -------------------------------------------------------------------------------------
@dataclass
class StepProgram:
    lowered: Lowered
    template: Any               # (result, {input: slot|None}, {input: slot}), inputs by index
    layout: InputLayout
    numbers: NumberInputs = field(default_factory=no_numbers)
    kind: str = "step"

    def __post_init__(self) -> None:
        self._fill_result = template_filler(self.template[0])

    def run(self, inputs: list) -> Any:
        flat = _run(self.lowered, arrays_of(self.numbers.extend(inputs)))
        _, grads, writes = self.template
        value = self._fill_result(flat, _as_tensor)
        for index, slot in writes.items():
            tensor, new = inputs[index], flat[slot.index]
            if tensor._data.shape == new.shape and tensor._data.flags.writeable:
                np.copyto(tensor._data, new)
            else:
                tensor._data = np.array(new, copy=True)
            increment_version(tensor)
        for index, slot in grads.items():
            tensor = inputs[index]
            tensor._grad = None if slot is None else Tensor._make(np.array(flat[slot.index], copy=True))
        return value


# ---- a loss: forward now, backward through the engine ---------------------------------------------------
@dataclass
class LossProgram:
    joint: Graph                 # kept to build the backward variants
    forward: Lowered
    result_template: Any         # the result, with slots into the forward's outputs
    saved_count: int
    differentiable: list[bool]   # per tensor leaf of the result
    wanted: list[int]            # inputs that get gradients (by index)
    layout: InputLayout
    options: dict[str, Any]
    backend: Backend
    sources: dict[str, str]
    partition_stats: dict[str, Any]
    disk: Any = None
    numbers: NumberInputs = field(default_factory=no_numbers)
    backward_numbers: list[int] = field(default_factory=list)  # forward inputs the backward reads too
    saved_inputs: list[int] = field(default_factory=list)  # inputs the forward saves as they are
    backward_variants: dict[tuple[bool, ...], tuple[Lowered, Any]] = field(default_factory=dict)
    kind: str = "loss"

    def __post_init__(self) -> None:
        self._differentiable_slots = dict(zip(slots(self.result_template), self.differentiable))
        self._fill_result = template_filler(self.result_template)

    def backward_for(self, mask: tuple[bool, ...], example: list[np.ndarray] | None = None) -> tuple[Lowered, Any]:
        """The backward computing only the gradients in ``mask`` (one per wanted input), lowered once
        (and run on ``example``, the saved values and tangents, when given), and the filler of its
        gradients' template."""
        variant = self.backward_variants.get(mask)
        if variant is None:
            graph = partition_joint(self.joint).backward
            grads = graph.output_node.args[0]
            graph.output_node.args = (tuple(g if keep else None for g, keep in zip(grads, mask)),)
            eliminate_dead_code(graph)
            fill = template_filler(flatten_output(graph))
            label = self.forward.label.replace("(forward)", "(backward)")
            if not all(mask):
                label += f" for gradients {list(mask)}"
            variant = (lower(graph, self.backend, self.options, label, self.sources, self.disk, example), fill)
            self.backward_variants[mask] = variant
        return variant

    def run(self, inputs: list, eager_call: Callable[[], Any], check: Any = None) -> Any:
        extended = self.numbers.extend(inputs)
        flat = _run(self.forward, arrays_of(extended))
        saved = flat[len(flat) - self.saved_count:] if self.saved_count else []
        wanted = [inputs[i] for i in self.wanted]
        records = grad_mode.is_grad_enabled() and any(t._requires_grad for t in wanted)
        node = None
        if records:
            saved = [*saved, *(extended[i] for i in self.backward_numbers)]  # numbers come after tangents
            node = CompiledFunctionBackward(self, saved, [gradient_edge(t) for t in wanted], eager_call, check)
        differentiable = self._differentiable_slots
        metadata = []

        def wrap(index: int, array: np.ndarray) -> Tensor:
            out = Tensor._make(array)
            if node is not None and differentiable.get(index) and array.dtype.kind == "f":
                out._requires_grad, out._grad_fn, out._output_nr = True, node, len(metadata)
                metadata.append(new_input_metadata((array.shape, array.dtype, "cpu")))
            return out

        value = self._fill_result(flat, wrap)
        if node is not None:
            node._input_metadata = metadata
        return value


class CompiledFunctionBackward(Node):
    """The one backward node of a compiled function's outputs: the compiled backward of its forward."""

    def __init__(self, program: LossProgram, saved: list[np.ndarray], edges: list, eager_call: Callable,
                 check: Any) -> None:
        Node.__init__(self, edges)
        self._program = program
        self._saved: list[np.ndarray] | None = list(saved)
        self._eager_call = eager_call
        self._check = check

    def apply(self, grads, needed):
        if grad_mode.state.grad_enabled:  # create_graph: the gradients must be differentiable
            return self._eager_backward(grads)
        self._eager_call(check_only=True)  # an input changed in place since forward: eager's error
        if self._saved is None:
            raise RuntimeError("Trying to backward through the graph a second time (or directly access "
                               "saved tensors after they have already been freed). Specify "
                               "retain_graph=True if you need to backward through the graph a second time.")
        mask = tuple(bool(n) for n in needed) if needed is not None else (True,) * len(self._next_edges)
        tangents = [g._data if g is not None else np.zeros(m.shape, m.dtype)
                    for g, m in zip(grads, self._input_metadata)]
        count = len(self._saved) - len(self._program.backward_numbers)
        arrays = [*self._saved[:count], *tangents, *self._saved[count:]]
        try:
            lowered, fill = self._program.backward_for(mask, arrays)
        except Unsupported as error:  # this set of gradients has no lowering: eager, as the warning says
            warnings.warn(f"jitgrad.compile: running a backward eagerly: {error}", RuntimeWarning, stacklevel=2)
            return self._eager_backward(grads, create_graph=False)
        flat = _run(lowered, arrays)
        result = list(fill(flat, _as_tensor))
        if self._check is not None:
            self._check(grads, result, mask)
        return result

    def _eager_backward(self, grads, create_graph: bool = True):
        """Re-runs the function eagerly on the original inputs and differentiates that graph."""
        with grad_mode.enable_grad():
            tensors, result = self._eager_call()
        outputs = [t for t, d in zip(tensor_leaves(result), self._program.differentiable) if d]
        pairs = [(o, g) for o, g in zip(outputs, grads) if g is not None and o._requires_grad]
        inputs = [tensors[i] for i in self._program.wanted]
        if not pairs:
            return [None] * len(inputs)
        return list(autograd_grad([o for o, _ in pairs], inputs, [g for _, g in pairs],
                                  create_graph=create_graph, allow_unused=True))

    def release_variables(self) -> None:
        self._saved = None


__all__ = ["CompiledFunctionBackward", "LossProgram", "Lowered", "StepProgram", "Unsupported", "logs", "lower"]
