"""What a compiled function runs: lowered graphs, where a call finds their inputs, and a whole step.

``Lowered`` is one graph after the passes and the backend (``lowering.py`` makes it), with what
``explain`` shows. ``InputLayout`` finds a program's inputs among a call's values and ``NumberInputs``
adds the Python numbers computed from them. ``StepProgram`` runs a step and writes its ``.grad``s and
in-place updates back into the caller's tensors; a loss's program is in ``loss_program.py``. A program
runs on one device, and its outputs are that device's arrays: what is done with them goes through
``placement.py``. Nothing here imports ``jitgrad.fx``: a warm process runs programs from the warm-start
index through this module and never loads the tracing half. The classes are plain classes, not
dataclasses: making a dataclass at import costs about 3 M instructions (its methods are generated and
compiled), and a warm process imports this module before its first result.
"""
from __future__ import annotations

import itertools
import os
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..autograd.graph import first_grad
from ..autograd.versions import increment_version
from ..random import default_generator
from ..tensor import Tensor
from . import placement
from .backend import Backend
from .result_template import template_filler

if TYPE_CHECKING:
    from ..fx.passes.hoist_numbers import NumberPrelude


def logs(topic: str) -> bool:
    return topic in os.environ.get("JITGRAD_LOG", "").split(",")


class Lowered:
    """One graph after passes and lowering, with what ``explain`` reports about it. ``reused``: the
    backend had kernels for a graph equal up to sizes (in this process); ``from_disk``: loaded from the
    disk cache instead of lowered; ``example_out``: what the example call returned (used once, to warm
    up the backward). ``ir_before`` may be given as an object whose ``str()`` is the text (the traced
    graph's ``fx.graph.Listing``), printed when first read."""

    def __init__(self, label: str, call: Callable[..., tuple], source: str, ir_before: Any, ir_after: str,
                 pass_report: str, fusion_groups: list[str], memory: dict[str, Any], out_dtypes: list[np.dtype],
                 reused: bool = False, from_disk: bool = False, example_out: list | None = None) -> None:
        self.label, self.call, self.source = label, call, source
        self._ir_before, self.ir_after, self.pass_report = ir_before, ir_after, pass_report
        self.fusion_groups, self.memory, self.out_dtypes = fusion_groups, memory, out_dtypes
        self.reused, self.from_disk, self.example_out = reused, from_disk, example_out

    @property
    def ir_before(self) -> str:
        """The graph as traced, before the passes."""
        if not isinstance(self._ir_before, str):
            self._ir_before = str(self._ir_before)
        return self._ir_before


def as_tensor(index: int, array: np.ndarray) -> Tensor:
    """A template filler's ``wrap`` for results that are plain tensors (no autograd history)."""
    return Tensor._make(array)


class InputLayout:
    """Where a call finds each graph input among ``values`` (its argument leaves, then the free
    variables the compiled function reads, ``decorator.py``): a position, or for the ``.grad`` of an
    input, that input's index (the gradient is read through it). ``random`` is the input that takes
    the generator's state at the start of the call, when the function draws random numbers (``draws``
    elements per call)."""

    def __init__(self, positions: list[int | None], grad_of: list[int | None], random: int | None = None,
                 draws: int = 0) -> None:
        self.positions, self.grad_of, self.random, self.draws = positions, grad_of, random, draws
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


class NumberInputs:
    """The Python numbers a lowered graph reads beyond its inputs: what ``hoist_numbers`` took out
    of it (``lr * 0.5``), computed at each call from the run-time numbers among the inputs. ``prelude``
    is None for a program that has none, so that making one needs no ``jitgrad.fx``; ``positions`` are
    the inputs the prelude reads, by index, and ``value_positions`` the same numbers among a call's
    values (its leaves and free values), where ``holds`` finds them before the inputs are gathered.
    ``checked``: the program was traced for particular outcomes of comparisons of those numbers
    (``fx.numbers``), which ``holds`` checks."""

    def __init__(self, prelude: NumberPrelude | None, positions: list[int],
                 value_positions: list[int] | None = None) -> None:
        self.prelude, self.positions = prelude, positions
        self.value_positions = value_positions or []
        self.checked = prelude is not None and bool(prelude.checks)

    def extend(self, inputs: list) -> list:
        if not self.prelude:
            return inputs
        return [*inputs, *self.prelude(*[inputs[i] for i in self.positions])]

    def holds(self, values: list) -> bool:
        """Whether a call's numbers compare as the trace's did (True for a program that compared none)."""
        return not self.checked or self.prelude.holds(*[values[i] for i in self.value_positions])

    def first_change(self, values: list) -> int:
        """The index of the first comparison a call's numbers make otherwise than the trace's; -1 for none."""
        return self.prelude.first_change(*[values[i] for i in self.value_positions]) if self.checked else -1

    def outcomes(self, values: list) -> list[str]:
        """The comparisons a call's numbers make otherwise than the trace's, described."""
        return self.prelude.outcomes(*[values[i] for i in self.value_positions]) if self.checked else []


def no_numbers() -> NumberInputs:
    return NumberInputs(None, [])


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


def _memory_owner(data: Any) -> Any:
    """What holds a tensor's memory: the array a numpy view was made from (numpy keeps the first owner
    as every view's ``base``), a CUDA array's allocation, the array itself otherwise."""
    if type(data) is np.ndarray:
        return data if data.base is None else data.base
    pointer = getattr(data, "gpu_data", None)
    owner = getattr(pointer, "owner", None) if pointer is not None else None
    return owner if owner is not None else pointer if pointer is not None else data


def writes_shared_memory(inputs: list, written: tuple[int, ...], added_into: frozenset[int] = frozenset(),
                         grad_slots: frozenset[int] = frozenset()) -> bool:
    """Whether an input the program writes shares memory with another input (two views of one array,
    an array and a view of it, two tensors over one array). The program reads every input before it
    writes any, where eager mode sees each write at once through the other view, so such a call must
    run eagerly. The same tensor twice is not sharing: the trace saw it as one. A ``.grad`` the step
    adds into (of the inputs ``added_into``; ``grad_slots`` are the inputs that read those) is written
    too, once per input whose ``.grad`` it is: one tensor set as the ``.grad`` of two parameters is
    one input of the trace, whose two sums the program writes one after the other, where eager's
    ``AccumulateGrad`` adds both gradients into it. Two tensors over one CUDA allocation count as sharing."""
    entries = [(id(value), value) for index, value in enumerate(inputs)
               if isinstance(value, Tensor) and index not in grad_slots]
    entries += [(("grad", index), inputs[index]._grad) for index in added_into if inputs[index]._grad is not None]
    first: dict[int, tuple[Any, Tensor]] = {}   # memory owner -> the first entry over it
    shared: dict[int, dict[Any, Tensor]] = {}   # an owner more than one entry is over -> those entries
    for key, value in entries:
        owner = id(_memory_owner(value._data))
        other_key, other = first.setdefault(owner, (key, value))
        if other_key != key:
            shared.setdefault(owner, {other_key: other})[key] = value
    if not shared:
        return False
    written_keys = {id(inputs[i]) for i in written} | {("grad", i) for i in added_into}
    return any((ka in written_keys or kb in written_keys)
               and (type(a._data) is not np.ndarray or np.may_share_memory(a._data, b._data))
               for group in shared.values() for (ka, a), (kb, b) in itertools.combinations(group.items(), 2))


def _add_into(grad: Tensor | None, total: Any) -> bool:
    """Writes a step's new ``.grad`` (the old one plus what the step added) into the old ``.grad``'s
    memory, where eager mode's ``AccumulateGrad`` would have added into it; False where it cannot."""
    if grad is None or not placement.writeable(grad._data) \
            or tuple(grad._data.shape) != tuple(np.shape(total)):
        return False
    placement.write_back(grad, total)
    increment_version(grad)
    return True


# ---- a whole step -------------------------------------------------------------------------------------
class StepProgram:
    """A whole step: ``template`` is ``(result, {input: slot|None}, {input: slot})``, inputs by index
    (the result's template, the ``.grad`` each input gets, the new value each input is written with);
    ``backend`` is what lowered it (``explain`` names it)."""

    kind = "step"

    def __init__(self, lowered: Lowered, template: Any, layout: InputLayout, numbers: NumberInputs | None = None,
                 backend: Backend | None = None, added_into: frozenset[int] = frozenset(),
                 rebound: frozenset[int] = frozenset()) -> None:
        self.lowered, self.template, self.layout = lowered, template, layout
        self.added_into = added_into   # inputs whose .grad the step sums into, as eager's AccumulateGrad
        self.rebound = rebound         # inputs given new memory (``w.data = ...``), not written in place
        self.numbers = no_numbers() if numbers is None else numbers
        self.backend = backend
        self._fill_result = template_filler(self.template[0])
        self.written = tuple(template[2])   # the inputs it writes in place, by index
        self._added_slots = frozenset(i for i, owner in enumerate(layout.grad_of) if owner in added_into)

    @property
    def lowered_graphs(self) -> list[Lowered]:
        return [self.lowered]

    def writes_shared_memory(self, inputs: list) -> bool:
        """Whether a call's inputs share memory with what the step writes (``writes_shared_memory``)."""
        if not (self.written or self.added_into):
            return False
        return writes_shared_memory(inputs, self.written, self.added_into, self._added_slots)

    def writes_allowed(self, inputs: list) -> bool:
        """Whether every input the step writes in place can take the write: an expanded view cannot,
        and the call must raise eager's error rather than give the input new memory."""
        return all(placement.writeable(inputs[i]._data) for i in self.written if i not in self.rebound)

    def run(self, inputs: list) -> Any:
        flat = run_lowered(self.lowered, arrays_of(self.numbers.extend(inputs)))
        _, grads, writes = self.template
        for index, slot in writes.items():
            tensor = inputs[index]
            if index in self.rebound:   # as the setter does: new memory, the version counter left alone
                tensor._data = placement.copy(placement.to_device_of(tensor._data, flat[slot.index]))
                continue
            placement.write_back(tensor, flat[slot.index])
            increment_version(tensor)
        for index, slot in grads.items():
            tensor = inputs[index]
            if slot is not None and index in self.added_into and _add_into(tensor._grad, flat[slot.index]):
                continue
            tensor._grad = None if slot is None else Tensor._make(_first_grad(tensor, flat[slot.index]))
        return self._fill_result(flat, as_tensor, inputs)   # after the writes: a view of an input sees them


def _first_grad(tensor: Tensor, grad: Any) -> Any:
    """A step's new ``.grad`` of ``tensor`` in the leaf's own layout, as eager's ``AccumulateGrad`` makes it
    (``first_grad``): a program's gradients are row-major, so a column-major weight's ``.grad`` was not
    the layout eager gives it (until 2026-11-28)."""
    grad = placement.to_device_of(tensor._data, grad)
    return first_grad(grad, tensor._data, copy=False) if type(grad) is np.ndarray else grad


__all__ = ["InputLayout", "Lowered", "NumberInputs", "StepProgram", "arrays_of", "as_tensor", "logs", "no_numbers",
           "run_lowered"]
