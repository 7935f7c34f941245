"""Capturing a call of the user's function as the graphs a compiled function runs.

A first trace (``capture_call``) runs the function on copies of the tensor arguments, so that tracing a
training step does not update the caller's parameters. It tells the two kinds of programs apart:

- a *step*: the function calls ``backward()``/``autograd.grad`` or writes into its arguments (an SGD
  update under ``no_grad``, ``w.data = ...``), or it needs no gradient at all. One graph taking the
  tensor arguments (and the ``.grad`` they already hold) returns ``(result, grads, writes)``: the
  result, the final ``.grad`` of each argument whose gradient changed and the new value of each
  argument written in place. The runtime writes those back into the caller's tensors.
- a *loss*: its outputs require grad and it does not differentiate them itself. ``fx.trace_joint``
  captures forward and backward together and ``passes.partition_joint`` splits them, so that the
  forward runs now and the backward when the engine reaches the outputs' ``CompiledFunctionBackward``.

Whatever the backend gets returns a flat tuple of nodes; ``Template`` remembers the nesting around them.
"""
from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..autograd import grad_mode
from ..fx.graph import Graph
from ..fx.joint import is_backward, trace_joint
from ..fx.node import Node, Opcode, iter_leaves
from ..fx.tracer import Tracer, TraceError, parameter_names
from ..ops.registry import observing
from ..tensor import Tensor

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Unsupported(Exception):
    """Something this call does that a compiled function cannot reproduce exactly; ``op`` and ``where``
    name it when known. The decorator turns it into eager execution, or an error with fullgraph."""

    def __init__(self, reason: str, op: str | None = None, where: str | None = None) -> None:
        super().__init__(reason)
        self.reason, self.op, self.where = reason, op, where

    def __str__(self) -> str:
        parts = [self.reason]
        if self.op and self.op not in self.reason:
            parts.append(f"op: {self.op}")
        if self.where and self.where not in self.reason:
            parts.append(f"at {self.where}")
        return "; ".join(parts)


# ---- output templates ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Slot:
    """Position ``index`` in the flat tuple a lowered graph returns."""
    index: int


def make_template(value: Any, leaves: list[Node]) -> Any:
    """``value`` with each node replaced by a ``Slot`` and appended to ``leaves``."""
    if isinstance(value, Node):
        leaves.append(value)
        return Slot(len(leaves) - 1)
    if isinstance(value, tuple):
        return tuple(make_template(v, leaves) for v in value)
    if isinstance(value, list):
        return [make_template(v, leaves) for v in value]
    if isinstance(value, dict):
        return {k: make_template(v, leaves) for k, v in value.items()}
    return value


class TupleOf(tuple):
    """A tuple of a subclass in a template (``max(dim)``'s ``(values, indices)``, a named tuple): the
    IR holds plain tuples, so the type is put back here and the result rebuilt as ``kind(*items)``."""

    def __new__(cls, kind: type, items: tuple) -> "TupleOf":
        template = super().__new__(cls, items)
        template.kind = kind
        return template


def tuple_types(value: Any) -> Any:
    """Where ``value`` (a traced function's result) holds tuples of a subclass: ``(kind, items)`` for
    a tuple, a list or dict of the same for lists and dicts, None where there are none."""
    if isinstance(value, (tuple, list)):
        items = [tuple_types(v) for v in value]
        if isinstance(value, tuple) and type(value) is not tuple:
            return (type(value), items)
        return items if any(i is not None for i in items) else None
    if isinstance(value, dict):
        items = {k: tuple_types(v) for k, v in value.items()}
        return items if any(i is not None for i in items.values()) else None
    return None


def with_tuple_types(template: Any, types: Any) -> Any:
    """``template`` with the tuple subclasses ``tuple_types`` found put back."""
    if types is None:
        return template
    if isinstance(types, tuple):
        kind, items = types
        return TupleOf(kind, tuple(with_tuple_types(t, i) for t, i in zip(template, items)))
    if isinstance(types, dict):
        return {k: with_tuple_types(t, types.get(k)) for k, t in template.items()}
    rebuilt = [with_tuple_types(t, i) for t, i in zip(template, types)]
    return tuple(rebuilt) if isinstance(template, tuple) else rebuilt


def template_filler(template: Any) -> Callable[[Sequence[Any], Callable[[int, Any], Any]], Any]:
    """A function ``fill(values, wrap)``: the template with slot ``i`` replaced by ``wrap(i, values[i])``.

    Written once per template as one Python expression (``(wrap(0, values[0]), [wrap(1, values[1])])``):
    every call of a compiled function rebuilds its result, and walking the template on each call cost
    2 us for W4's three outputs, a third of what a call spends in Python."""
    constants: list[Any] = []

    def constant(value: Any) -> str:
        constants.append(value)
        return f"c{len(constants) - 1}"

    def expression(part: Any) -> str:
        kind = type(part)
        if kind is Slot:
            return f"wrap({part.index}, values[{part.index}])"
        if kind is tuple:
            return "(" + "".join(f"{expression(v)}, " for v in part) + ")"
        if kind is list:
            return "[" + ", ".join(expression(v) for v in part) + "]"
        if kind is TupleOf:
            return f"{constant(part.kind)}(" + ", ".join(expression(v) for v in part) + ")"
        if kind is dict:
            return "{" + ", ".join(f"{constant(k)}: {expression(v)}" for k, v in part.items()) + "}"
        return constant(part)
    source = f"lambda values, wrap: {expression(template)}"
    return eval(source, {f"c{i}": value for i, value in enumerate(constants)})  # noqa: S307 - our own source


def flatten_output(graph: Graph) -> Any:
    """Makes the graph return a flat tuple of its output nodes; returns the template to rebuild the value."""
    leaves: list[Node] = []
    template = make_template(graph.output_node.args[0], leaves)
    graph.output_node.args = (tuple(leaves),)
    return template


def slots(template: Any) -> list[int]:
    """The slot indices of a template, in the order ``tensor_leaves`` walks the value it stands for."""
    return [slot.index for slot in iter_leaves(template, Slot)]


def tensor_leaves(value: Any) -> list[Tensor]:
    return list(iter_leaves(value, Tensor))


# ---- source lines ----------------------------------------------------------------------------------
def user_line() -> str | None:
    """``file:line: code`` of the innermost frame outside the jitgrad package."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return None
    import linecache
    code = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return f"{frame.f_code.co_filename}:{frame.f_lineno}: {code}"


# ---- the first trace ---------------------------------------------------------------------------------
@dataclass
class Captured:
    kind: str                                   # "step" or "loss"
    graph: Graph | None = None                  # the step's graph (before passes)
    result_types: Any = None                    # the result's tuple subclasses (``tuple_types``)
    grad_inputs: list[int] = field(default_factory=list)   # tensor arguments passed with their .grad
    sources: dict[str, str] = field(default_factory=dict)  # node name -> user source line


def _copy_tensor(arg: Tensor) -> Tensor:
    return Tensor._make(arg._data.copy(), arg._requires_grad)


def _check_hooks(tracer: Tracer, arguments: list[Tensor], sources: dict[str, str]) -> None:
    """Hooks and retain_grad registered inside the function would run at trace time only."""
    for value in tracer._alive:
        if not isinstance(value, Tensor):
            continue
        fn = value._grad_fn
        what = None
        if value._retains_grad or (fn is not None and fn._retains_grad):
            what = "retain_grad()"
        elif value._hooks or (fn is not None and fn._tensor_pre_hooks):
            what = "a tensor hook (register_hook)"
        elif fn is not None and (fn._pre_hooks or fn._post_hooks):
            what = "a hook on a grad_fn"
        if what is not None:
            node = tracer._nodes.get(id(value))
            where = sources.get(node.name) if node is not None else None
            raise Unsupported(f"{what} inside a compiled function is not supported: it would act only "
                              "while tracing; use it outside the compiled function, or run this one eagerly",
                              where=f"the value computed at {where}" if where else None)
    for arg in arguments:
        if arg._hooks or arg._retains_grad:
            raise Unsupported("a hook registered on an argument inside a compiled function is not supported")


def capture_call(fn: Callable, args: tuple, kwargs: dict) -> Captured:
    """Traces ``fn(*args, **kwargs)`` on copies; returns a step's graph, or says it is a loss."""
    tracer = Tracer(capture_writes=True)
    sources: dict[str, str] = {}

    def observe(op, op_args, attrs, output):
        count = len(tracer.graph)
        tracer.observe(op, op_args, attrs, output)
        if len(tracer.graph) > count:
            line = user_line()
            if line:
                for node in tracer.graph.nodes[count:]:
                    if node.op is Opcode.CALL_FUNCTION:
                        sources[node.name] = line

    names = parameter_names(fn, len(args))
    originals = [a for a in args if isinstance(a, Tensor)]
    call_args: list[Any] = []
    traced: list[Tensor] = []
    for name, arg in zip(names, args):
        if isinstance(arg, Tensor):
            arg = tracer.placeholder(name, _copy_tensor(arg))
            traced.append(arg)
        call_args.append(arg)
    grad_inputs = []
    for index, (original, copy) in enumerate(zip(originals, traced)):
        if original._grad is not None:
            grad_inputs.append(index)
            name = tracer.graph.placeholders[index].name
            copy._grad = tracer.placeholder(f"{name}_grad", Tensor._make(original._grad._data.copy()))
    arrays = [t._data for t in traced]
    with observing(observe, tracer.alias):
        result = fn(*call_args, **kwargs)
    _check_hooks(tracer, traced, sources)
    graph = tracer.graph
    placeholders = graph.placeholders
    writes: dict[str, Node] = {placeholders[i].name: tracer.writes[placeholders[i]]
                               for i in range(len(traced)) if placeholders[i] in tracer.writes}
    for i, (copy, array) in enumerate(zip(traced, arrays)):
        if copy._data is not array:  # ``w.data = new``
            writes[placeholders[i].name] = tracer.node_of(Tensor._make(copy._data))
    grads: dict[str, Node | None] = {}
    for i, copy in enumerate(traced):
        grad_placeholder = placeholders[len(traced) + grad_inputs.index(i)] if i in grad_inputs else None
        if copy._grad is None:
            if grad_placeholder is not None:
                grads[placeholders[i].name] = None  # ``w.grad = None`` inside
            continue
        node = tracer.node_of(copy._grad)
        if node is not grad_placeholder:
            grads[placeholders[i].name] = node
    differentiated = any(is_backward(n) for n in graph.nodes)
    if len({id(a) for a in originals}) != len(originals) and (differentiated or writes or grads):
        raise Unsupported("the same tensor is passed as two arguments of a function that runs backward "
                          "or writes into its arguments; pass it once")
    leaves = tensor_leaves(result)
    needs_grad = grad_mode.is_grad_enabled() and any(t._requires_grad for t in leaves)
    if needs_grad and not differentiated:
        if writes or grads:
            raise Unsupported("the function writes into its arguments (in place, or their .grad) and returns "
                              "outputs that require grad; compile the whole step (with backward() inside)")
        return Captured("loss", sources=sources)
    if differentiated and any(a._hooks or a._retains_grad for a in originals):
        raise Unsupported("an argument has a tensor hook and the function runs backward inside: the "
                          "compiled backward would skip the hook; run this function eagerly")
    if needs_grad and any(is_backward(tracer.node_of(t)) for t in leaves if t._requires_grad):
        raise Unsupported("the function returns a gradient that requires grad (create_graph=True inside); "
                          "higher-order gradients through a compiled step are not supported")
    value = tracer.as_arg(result)
    graph.output((value, grads, writes))
    return Captured("step", graph, tuple_types(result), grad_inputs, sources)


@dataclass
class CapturedLoss:
    graph: Graph                   # the joint graph
    differentiable: list[bool]     # per tensor leaf of the result: does it require grad
    wanted: list[int]              # tensor arguments (by position among tensors) that get gradients
    result_types: Any = None       # the result's tuple subclasses (``tuple_types``)


def capture_loss(fn: Callable, args: tuple, kwargs: dict) -> CapturedLoss:
    """``fx.trace_joint`` on copies of the arguments, remembering which outputs require grad."""
    results: list[Any] = []

    @functools.wraps(fn)
    def wrapped(*call_args):
        result = fn(*call_args, **kwargs)
        results.append(result)
        return result

    copies = [_copy_tensor(a) if isinstance(a, Tensor) else a for a in args]
    joint = trace_joint(wrapped, *copies)
    differentiable = [t._requires_grad for t in tensor_leaves(results[0])]
    tensors = [a for a in args if isinstance(a, Tensor)]
    wanted = [i for i, t in enumerate(tensors) if t._requires_grad]
    return CapturedLoss(joint.graph, differentiable, wanted, tuple_types(results[0]))


__all__ = ["Captured", "CapturedLoss", "Slot", "TraceError", "TupleOf", "Unsupported", "capture_call",
           "capture_loss", "flatten_output", "make_template", "slots", "template_filler", "tensor_leaves",
           "tuple_types", "user_line", "with_tuple_types"]
