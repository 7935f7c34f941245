"""The backward node of a registry op: runs the op's derivative formulas on what it saved.

One subclass per PyTorch node name (``MulBackward0``...), made on first use, so that
``type(y.grad_fn).__name__`` and the repr read as in PyTorch. It lives with the registry, not in
autograd: it reads an ``OpDef``'s formulas and save plans, while the engine needs only the ``Node``
interface it implements. Autograd records it (``autograd.recording.record``, in one frame) from the
save plan made here.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from ..autograd.recording import SAVE_ATTR, SAVE_INPUT, SAVE_RESULT, SAVE_RESULTS, SAVE_SHAPE, SavingNode
from ..autograd.saved_tensor import SavedTensor, check_version
from ..device import zeros_on
from ..tensor import Tensor
from ..thread_settings import ThreadSettings
from ..thread_settings import departures as _departures
from . import staged_backward

if TYPE_CHECKING:
    from .registry import OpDef

_NODE_CLASSES: dict[str, type["OpBackward"]] = {}

FormulaRunner = Callable[["OpDef", str, Callable[..., Any], list], Any]


class _Formulas(ThreadSettings):
    runner: FormulaRunner | None = None


_formulas = _Formulas()


@contextmanager
def running_formulas(runner: FormulaRunner) -> Iterator[None]:
    """Inside the block, each derivative formula a backward node of this thread runs is called as
    ``runner(op, input_name, formula, args)`` rather than ``formula(*args)``: a tracer replays what an
    earlier call of the same kind recorded (``fx.derivative_templates``) instead of running it again."""
    previous, _formulas.runner = _formulas.runner, runner
    try:
        yield
    finally:
        _formulas.runner = previous


def node_class(name: str) -> type["OpBackward"]:
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        cls = _NODE_CLASSES[name] = type(name, (OpBackward,), {"__slots__": ()})
    return cls


class SavePlan:
    """What nodes of one op whose inputs flagged in ``needs_grad`` want gradients save: ``entries``
    holds, for each parameter their formulas read, its source (``autograd.recording.SAVE_RESULT``...) and the input's
    index; nothing else is kept alive. ``variants`` holds the staged replays of those formulas over
    arrays (``staged_backward``), shared by every such node."""

    __slots__ = ("entries", "positions", "frees", "variants")

    def __init__(self, entries: tuple[tuple[str, int, int], ...]) -> None:
        self.entries = entries
        self.positions = {param: i for i, (param, _, _) in enumerate(entries)}
        self.frees = any(source in (SAVE_INPUT, SAVE_RESULT, SAVE_RESULTS) for _, source, _ in entries)
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
                plan[param] = (param, SAVE_RESULT, 0)
            elif param == "results":
                plan[param] = (param, SAVE_RESULTS, 0)
            elif param in op.inputs:
                plan[param] = (param, SAVE_INPUT, op.inputs.index(param))
            elif param.endswith("_shape") and param[:-6] in op.inputs:
                plan[param] = (param, SAVE_SHAPE, op.inputs.index(param[:-6]))
            else:
                plan[param] = (param, SAVE_ATTR, 0)
    return SavePlan(tuple(plan.values()))


class OpBackward(SavingNode):
    """The backward of one call of a registry op: made and filled by ``autograd.recording.record``."""

    __slots__ = ()

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
                position = self.save_plan.positions[param]
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
        runner = _formulas.runner if _departures.count else None
        for i, name in enumerate(op.inputs):
            if needed[i] and name in reads:
                if runner is None:
                    result[i] = derivatives[name](*self._arguments(reads[name], grads))
                else:
                    result[i] = runner(op, name, derivatives[name], self._arguments(reads[name], grads))
        return result

    apply_arrays = staged_backward.apply_arrays  # its formulas, staged (one call less per node)
    array_formula = staged_backward.formula_for
