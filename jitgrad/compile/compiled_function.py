"""What a compiled function runs: lowered graphs, where a call finds their inputs, and a whole step.

``lower`` takes a captured graph through the pass pipeline and the backend, keeping what ``explain``
shows (the IR before and after, fusion groups, the memory plan, the source). ``InputLayout`` finds a
program's inputs among a call's values and ``NumberInputs`` adds the Python numbers computed from them.
``StepProgram`` runs a step and writes its ``.grad``s and in-place updates back into the caller's
tensors; a loss's program is in ``loss_program.py``. A program runs on one device, and its outputs are
that device's arrays: what is done with them goes through ``placement.py``.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..autograd.versions import increment_version
from ..fx.graph import Graph
from ..fx.node import Node, Opcode
from ..fx.passes import PassManager
from ..fx.passes.hoist_numbers import NumberPrelude
from ..random import default_generator
from ..tensor import Tensor
from . import placement
from .backend import Backend
from .capture import Unsupported
from .templates import template_filler


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


def _failing_node(graph: Graph, error: BaseException) -> Node | None:
    node = getattr(error, "node", None)
    if isinstance(node, Node):
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
    ``example`` here, so that a backend compiling lazily (numba-cuda compiles at the first launch) fails
    now, while the call can still run eagerly, and never in the middle of a backward; a kernel run from
    loaded machine code (``loaded``: numba_cpu's object code) is not run."""
    placement.constants_on_host(graph)
    before = str(graph)
    for node in graph.nodes:  # the lowered graph runs on arrays, where grad mode means nothing, so
        node.meta.pop("no_grad", None)  # a backward's recomputation may share the forward's node
    manager = PassManager(backend.passes,
                          lint=os.environ.get("JITGRAD_LINT_PASSES") == "1")
    graph = manager.run(graph)
    records = {r.name: r for r in graph.history}
    fusion = records.get("group_fusions")
    memory = records.get("plan_memory")
    out_dtypes = [np.dtype(n.meta["dtype"]) for n in graph.output_node.args[0]]
    try:
        compiled = backend.lower(graph, fastmath=options["fastmath"], parallel=options["parallel"], cache=disk)
        example_out = None
        if example is not None and not getattr(compiled, "loaded", False):  # loaded machine code has nothing
            # left to compile, so nothing that could fail later: the example call would cost a step
            example_out = list(compiled(*[placement.copy(a) if placement.is_array(a) else a for a in example]))
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
    from_disk = bool(getattr(compiled, "from_disk", False))
    if logs("output_code") and not reused and not from_disk:
        print(f"--- jitgrad.compile: generated code for {label} ({backend.name}) ---\n{source}", file=sys.stderr)
    lowered = Lowered(label, compiled, source, before, str(graph), manager.report(),
                      list(fusion.changes) if fusion else [], dict(memory.stats) if memory else {}, out_dtypes,
                      reused, from_disk)
    lowered.example_out = example_out
    return lowered


def as_tensor(index: int, array: np.ndarray) -> Tensor:
    """A template filler's ``wrap`` for results that are plain tensors (no autograd history)."""
    return Tensor._make(array)


@dataclass
class InputLayout:
    """Where a call finds each graph input among ``values`` (its argument leaves, then the free
    variables the compiled function reads, ``decorator.py``): a position, or for the ``.grad`` of an
    input, that input's index (the gradient is read through it). ``random`` is the input that takes
    the generator's state at the start of the call, when the function draws random numbers (``draws``
    elements per call)."""

    positions: list[int | None]
    grad_of: list[int | None]
    random: int | None = None
    draws: int = 0

    def __post_init__(self) -> None:
        self._grads = [(i, owner) for i, owner in enumerate(self.grad_of) if owner is not None]

    def take_state(self) -> np.ndarray | None:
        """The state a call draws from, the generator moved past the call's draws as an eager call
        would move it; None for a function that draws nothing."""
        return None if self.random is None else default_generator.take(self.draws)

    def gather(self, values: list, random_state: np.ndarray | None = None) -> list:
        inputs = [values[p] if p is not None else None for p in self.positions]
        for i, owner in self._grads:
            inputs[i] = inputs[owner]._grad
        if self.random is not None:
            inputs[self.random] = random_state
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


def _output_array(value: Any, dtype: np.dtype) -> Any:
    """A backend's output as an array of the graph's dtype: a device array as it is (``np.asarray``
    would copy it to the host), a Python number as a 0-d numpy array."""
    if isinstance(value, np.ndarray) or not placement.is_array(value):
        return np.asarray(value, dtype=dtype)
    return value


def run_lowered(lowered: Lowered, arrays: list[np.ndarray]) -> list[np.ndarray]:
    flat = lowered.call(*arrays)
    return [v if isinstance(v, np.ndarray) and (v.dtype is d or v.dtype == d) else _output_array(v, d)
            for v, d in zip(flat, lowered.out_dtypes)]  # ``is`` first: comparing dtypes costs ~0.3 us


# ---- a whole step -------------------------------------------------------------------------------------
@dataclass
class StepProgram:
    lowered: Lowered
    template: Any               # (result, {input: slot|None}, {input: slot}), inputs by index
    layout: InputLayout
    numbers: NumberInputs = field(default_factory=no_numbers)
    backend: Backend | None = None   # what lowered it (explain names it)
    kind: str = "step"

    def __post_init__(self) -> None:
        self._fill_result = template_filler(self.template[0])

    @property
    def lowered_graphs(self) -> list[Lowered]:
        return [self.lowered]

    def run(self, inputs: list) -> Any:
        flat = run_lowered(self.lowered, arrays_of(self.numbers.extend(inputs)))
        _, grads, writes = self.template
        value = self._fill_result(flat, as_tensor)
        for index, slot in writes.items():
            tensor = inputs[index]
            placement.write_back(tensor, flat[slot.index])
            increment_version(tensor)
        for index, slot in grads.items():
            tensor = inputs[index]
            tensor._grad = None if slot is None else \
                Tensor._make(placement.to_device_of(tensor._data, flat[slot.index]))
        return value


__all__ = ["InputLayout", "Lowered", "NumberInputs", "StepProgram", "Unsupported", "arrays_of", "as_tensor", "logs",
           "lower", "no_numbers", "run_lowered"]
