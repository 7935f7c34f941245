"""``trace``: runs a function on tensors that carry real values and records every registry op it runs.

The tracer listens through ``jitgrad.ops.registry.observing``, so it sees the ops of the function and,
when the function calls ``backward()`` or ``autograd.grad``, the derivative ops the real engine runs,
in the engine's order (those nodes get ``meta["phase"] = "backward"``). Values are real, so every shape
is known and control flow on shapes just works; what cannot be captured is a value turning into a
Python number, so ``TracedTensor`` refuses those conversions with a ``TraceError`` naming the line.

Tensors are matched to nodes by ``id``; the tracer keeps every tensor it has seen alive so that an id
is never reused during a trace. A backward node keeps its op's output as a bare array and unpacks it
into a new tensor object, so an op output is also known by the ``id`` of its array. A tensor the
tracer has not seen (made by a factory, or by the engine: the seed ``ones`` of a scalar loss, zeros for
a missing gradient) becomes a constant (``get_attr``).

An in-place write into an argument's memory (through the tensor, ``.data`` or ``.detach()``) raises a
``TraceError``, unless the tracer was made with ``capture_writes=True`` (``jitgrad.compile`` does): then
``writes`` maps the argument's placeholder to the node of its new value, which later reads see. A write
into part of an argument, through a view of it, always raises.
"""
from __future__ import annotations

import inspect
import os
import traceback
from typing import Any, Callable

import numpy as np

from ..autograd import engine, grad_mode
from ..autograd.graph import grad_accumulator
from ..ops.registry import REGISTRY, OpDef, observing
from ..tensor import Tensor
from .graph import Graph, tensor_meta
from .graph_module import WRITES_GRAD, GraphModule
from .node import Node, Opcode, tuple_item

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TraceError(RuntimeError):
    """The traced function needs a tensor's value as a Python value, which a static graph cannot hold."""


def _conversion_error(operation: str) -> TraceError:
    """Names the conversion and the first frame of the user's code (outside the jitgrad package)."""
    frames = [f for f in traceback.extract_stack() if not os.path.abspath(f.filename).startswith(_PACKAGE_DIR)]
    where = f"{frames[-1].filename}:{frames[-1].lineno}: {frames[-1].line}" if frames else "unknown line"
    return TraceError(f"{operation} on a traced tensor at {where}\nA traced tensor stands for every value "
                      "it could take, so the graph cannot depend on this one; compute with tensor ops "
                      "(e.g. jitgrad.where instead of if) or pass the value in as a non-tensor argument.")


class TracedTensor(Tensor):
    """A tensor inside a trace: a real value, but one that refuses to become a Python value."""

    __slots__ = ()

    def item(self) -> Any:
        raise _conversion_error("Tensor.item()")

    def tolist(self) -> Any:
        raise _conversion_error("Tensor.tolist()")

    def numpy(self) -> np.ndarray:
        raise _conversion_error("Tensor.numpy()")

    def __bool__(self) -> bool:
        raise _conversion_error("bool()")

    def __float__(self) -> float:
        raise _conversion_error("float()")

    def __int__(self) -> int:
        raise _conversion_error("int()")

    def __index__(self) -> int:
        raise _conversion_error("Use as an index (__index__)")


class Tracer:
    """Builds one graph from the ops observed while a function runs."""

    def __init__(self, capture_writes: bool = False) -> None:
        self.graph = Graph()
        self._nodes: dict[int, Node] = {}
        self._by_array: dict[int, Node] = {}  # op outputs by the id of their array (saved ``result``s)
        self._alive: list[Any] = []  # keeps ids unique for the whole trace
        # Arguments' arrays: ``w.data``/``w.detach()`` share them, and an in-place write into one is a
        # write into the caller's tensor. Without ``capture_writes`` such a write raises TraceError;
        # with it, ``writes`` maps the placeholder to the node of the value it now holds.
        self.capture_writes = capture_writes
        self._arguments: dict[int, Node] = {}
        self.writes: dict[Node, Node] = {}

    # ---- values ------------------------------------------------------------------------------------
    def _bind(self, tensor: Tensor, node: Node) -> None:
        self._nodes[id(tensor)] = node
        self._alive.append(tensor)

    def node_of(self, tensor: Tensor) -> Node:
        """The node computing ``tensor``; a constant for a tensor made outside the registry."""
        argument = self._arguments.get(id(tensor._data))
        if argument is not None and argument in self.writes:
            return self.writes[argument]  # the argument's memory was written: its latest value
        node = self._nodes.get(id(tensor))
        if node is not None and node.op is Opcode.PLACEHOLDER and argument is not node:
            node = None  # an argument whose ``.data`` was replaced: it holds another value now
        node = node or self._by_array.get(id(tensor._data)) or argument
        if node is None:
            node = self.graph.get_attr(Tensor._make(tensor._data.copy()))
            node.meta.update(self._phase())
            self._bind(tensor, node)
        return node

    def as_arg(self, value: Any) -> Any:
        """``value`` with its tensors replaced by their nodes (sequences kept as they are, but a tuple
        of a subclass, such as what ``max(dim)`` returns, becomes a plain one: the IR holds plain
        tuples and lists)."""
        if isinstance(value, Tensor):
            return self.node_of(value)
        if isinstance(value, (tuple, list)):
            items = [self.as_arg(v) for v in value]
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, dict):
            return {k: self.as_arg(v) for k, v in value.items()}
        return value

    @staticmethod
    def _phase() -> dict[str, Any]:
        """Where the op ran: ``phase="backward"`` inside the engine, ``no_grad=True`` where grad mode
        was off (a backward without ``create_graph``), so that the module records what eager did."""
        meta: dict[str, Any] = {"phase": "backward"} if engine._thread.depth > 0 else {}
        if not grad_mode.state.grad_enabled:
            meta["no_grad"] = True
        return meta

    def placeholder(self, name: str, value: Tensor, **meta: Any) -> TracedTensor:
        """An argument of the graph; returns the traced tensor the function is given for it."""
        traced = TracedTensor._make(value._data, value._requires_grad)
        node = self.graph.placeholder(name, {**tensor_meta(value), **meta})
        self._bind(traced, node)
        self._arguments.setdefault(id(traced._data), node)
        if traced._requires_grad:
            self._watch_grad(traced)
        return traced

    def _watch_grad(self, leaf: TracedTensor) -> None:
        """Records what backward writes into ``leaf.grad``. Without ``create_graph`` AccumulateGrad
        copies or adds arrays directly, outside the registry, so its hooks tell the tracer instead:
        a first gradient is the incoming one, a later one is ``add(old, incoming)``."""
        accumulator = grad_accumulator(leaf)
        self._alive.append(accumulator)
        before: dict[str, Tensor | None] = {}

        def remember_old(grads: tuple) -> None:
            before["old"] = leaf._grad

        def record_new(grad_inputs: tuple, grad_outputs: tuple) -> None:
            new = leaf._grad
            if new is None or id(new) in self._nodes:
                return  # untouched, or written by an op the tracer saw (create_graph)
            incoming = self.node_of(grad_outputs[0])
            old = before.get("old")
            if old is None:
                node = incoming
            else:
                node = self.graph.call_function(REGISTRY["add"], (self.node_of(old), incoming), {},
                                                {**tensor_meta(new), **self._phase()})
            new.__class__ = TracedTensor
            self._bind(new, node)

        accumulator.register_prehook(remember_old)
        accumulator.register_hook(record_new)

    # ---- ops ---------------------------------------------------------------------------------------
    def observe(self, op: OpDef, args: tuple, attrs: dict, output: Any) -> None:
        """The registry's observer: one node per op call (plus a ``tuple_item`` per output of a
        multi-output op); outputs become ``TracedTensor``s."""
        node = self.graph.call_function(op, self.as_arg(tuple(args)), dict(attrs),
                                        {**tensor_meta(output), **self._phase()})
        if isinstance(output, tuple):
            for index, item in enumerate(output):
                item_node = self.graph.call_function(tuple_item, (node, index), {},
                                                     {**tensor_meta(item), **self._phase()})
                self._bind_output(item, item_node)
            self._alive.append(output)
        else:
            self._bind_output(output, node)

    def alias(self, tensor: Tensor, source: Tensor) -> None:
        """``tensor`` now holds ``source``'s value (an in-place op wrote it back)."""
        argument = self._arguments.get(id(tensor._data))
        if argument is None and self._views_an_argument(tensor._data):
            raise _conversion_error("An in-place change to part of an argument (through a view of it)")
        if argument is not None:
            if not self.capture_writes:
                raise _conversion_error("An in-place change to an argument of the traced function (not "
                                        "captured by fx.trace; jitgrad.compile captures it)")
            self.writes[argument] = self.node_of(source)
        self._bind(tensor, self.node_of(source))

    def _views_an_argument(self, array: np.ndarray) -> bool:
        base = array.base
        while isinstance(base, np.ndarray):
            if id(base) in self._arguments:
                return True
            base = base.base
        return False

    def _bind_output(self, tensor: Tensor, node: Node) -> None:
        tensor.__class__ = TracedTensor
        self._bind(tensor, node)
        self._by_array.setdefault(id(tensor._data), node)


def parameter_names(fn: Callable, count: int) -> list[str]:
    """Names for the placeholders: ``fn``'s parameter names where it has them, else ``arg<i>``."""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i].name if i < len(params) else f"arg{i}" for i in range(count)]


def start_trace(fn: Callable, example_args: tuple) -> tuple[Tracer, list[Any]]:
    """A tracer with one placeholder per tensor argument; other arguments are passed through as they
    are, so the graph is specialised to them and takes only the tensors."""
    tracer = Tracer()
    call_args = [tracer.placeholder(name, arg) if isinstance(arg, Tensor) else arg
                 for name, arg in zip(parameter_names(fn, len(example_args)), example_args)]
    return tracer, call_args


def trace(fn: Callable[..., Any], *example_args: Any) -> GraphModule:
    """Captures ``fn(*example_args)`` as a ``GraphModule`` taking ``fn``'s tensor arguments.

    A ``backward()`` inside ``fn`` is captured with it: gradients it writes into ``.grad`` of the
    arguments become outputs, and calling the module writes them into ``.grad`` of its arguments."""
    tracer, call_args = start_trace(fn, example_args)
    with observing(tracer.observe, tracer.alias):
        result = fn(*call_args)
    value = tracer.as_arg(result)
    tensors = [arg for arg in call_args if isinstance(arg, Tensor)]
    grads = {node.name: tracer.node_of(arg._grad) for arg, node in zip(tensors, tracer.graph.placeholders)
             if arg._grad is not None}
    if grads:
        tracer.graph.output((value, grads)).meta[WRITES_GRAD] = True
    else:
        tracer.graph.output(value)
    return GraphModule(tracer.graph)
