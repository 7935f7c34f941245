"""``DerivativeTemplates``: a trace records each kind of derivative formula call once, then replays it.

A backward traced through an unrolled loop runs the same formulas on the same shapes again and again:
W4 over 500 steps calls ``tanh``'s derivative 500 times, and recording each op of each call through
the registry and the tracer (the op call, the observer, the metadata rule, the node) was two thirds of
the trace. A registry derivative is a pure function of its arguments (the incoming gradient, saved
values, attributes): called with tensors of the same shapes and dtypes, the same Python values, and
the same pattern of arguments that are one value, it records the same ops in the same order. So the
first call of each kind runs the formula, and what it recorded is kept as a template: each new node's
op, attributes and metadata, each input as an earlier node of the template or one of the formula's
tensor arguments, and which node the formula returned. A later call of the same kind runs the
template's ops' forwards on arrays, checks every value against its node's metadata, and only then adds
the nodes: the nodes, names and order the formula would have recorded, so the graph is the one the
trace makes without templates (``tests/fx/test_derivative_templates.py`` compares them).

A formula is replayed only where replaying is exact. Never when its recording did anything but add op
calls reading its arguments: it made a constant or a placeholder, asked a number's value or branched
on one, drew random numbers, wrote in place, read a tensor it was not given, returned something other
than a new tensor that views no memory (a view shares its base's version counter, which only the real
op call sets up). Never with grad mode on (``create_graph``: its ops must record their own backward),
on a device, in a trace checked against another (a checked graph matches calls itself), or for an
argument the key cannot describe (a run-time number, a tensor subclass, an object).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..autograd import engine, forward_ad, grad_mode
from ..device import usage as devices
from ..dtypes import get_default_dtype
from ..ops.registry import OpDef, as_storage
from ..tensor import Tensor
from .node import Node, Opcode, iter_nodes, tuple_item
from .node_meta import NoKey, argument_key
from .traced_tensor import TracedTensor
from .user_lines import user_line

if TYPE_CHECKING:
    from .tracer import Tracer

class _Argument:
    """An input of a template node: the formula's ``index``-th tensor argument."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class _Step:
    """An input of a template node: the value of the template's ``index``-th node."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class Template:
    """What one kind of formula call recorded: ``steps`` of ``(target, args, kwargs, meta)``, whose
    args hold ``_Argument``/``_Step`` for nodes and whose meta is the node's (its phase included), and
    the step the formula returned (None: it returned None)."""

    __slots__ = ("steps", "result")

    def __init__(self, steps: list[tuple[Any, tuple, dict, dict]], result: int | None) -> None:
        self.steps, self.result = steps, result


def _fill(spec: tuple, arguments: list, steps: list) -> list:
    """``spec`` (a template node's args: flat, or a variadic op's one list) with each ``_Argument``
    and ``_Step`` replaced by its item of ``arguments`` or ``steps``."""
    if len(spec) == 1 and type(spec[0]) in (tuple, list):   # a variadic op's list
        return [type(spec[0])(_fill(spec[0], arguments, steps))]
    return [arguments[a.index] if type(a) is _Argument else steps[a.index] if type(a) is _Step else a
            for a in spec]


class DerivativeTemplates:
    """The formula runner of one trace (``ops.op_backward.running_formulas``): see the module docstring."""

    def __init__(self, tracer: "Tracer") -> None:
        self.tracer = tracer
        self.templates: dict[tuple, Template | None] = {}   # None: this kind is never replayed

    def __call__(self, op: OpDef, name: str, formula: Callable[..., Any], args: list) -> Any:
        tracer = self.tracer
        if grad_mode.state.grad_enabled or devices.active or forward_ad.state.level is not None or \
                tracer.checked:
            return formula(*args)
        tensors: list[Tensor] = []
        nodes: list[Node] = []
        key = self._key(op, name, args, tensors, nodes)
        if key is None:
            return formula(*args)
        template = self.templates.get(key, self)
        if template is self:
            return self._record(key, formula, args, tensors)
        if template is not None:
            result = self._replay(template, tensors, nodes)
            if result is not self:
                return result
        return formula(*args)

    def _key(self, op: OpDef, name: str, args: list, tensors: list[Tensor], nodes: list[Node]) -> tuple | None:
        """The call's kind: the op, the input, whether a backward runs, the default dtype (a formula may
        read it), and each argument by its shape and dtype (a tensor, with the first argument holding
        the same node) or its ``argument_key``; None where an argument has none. Fills ``tensors`` with
        the tensor arguments, in order, and ``nodes`` with their nodes."""
        node_of, types = self.tracer.node_of, self.tracer.tensor_types
        parts: list[Any] = [op, name, engine.running_backward(), get_default_dtype()]
        for value in args:
            if isinstance(value, Tensor):
                if type(value) not in types or type(value._data) is not np.ndarray:
                    return None
                node = node_of(value)
                first = nodes.index(node) if node in nodes else -1
                tensors.append(value)
                nodes.append(node)
                parts.append((value._data.shape, value._data.dtype, first))
            else:
                try:
                    parts.append(argument_key(value))
                except NoKey:
                    return None
        return tuple(parts)

    def _record(self, key: tuple, formula: Callable[..., Any], args: list, tensors: list[Tensor]) -> Any:
        tracer = self.tracer
        before, state = len(tracer.graph), tracer.state()
        result = formula(*args)
        made = tracer.graph.last_nodes(len(tracer.graph) - before) if tracer.state() == state else None
        self.templates[key] = None if made is None else self._template(made, tensors, result)
        return result

    def _template(self, made: list[Node], tensors: list[Tensor], result: Any) -> Template | None:
        """The template of a recording that made the nodes ``made``, or None where replaying it could
        differ from running the formula."""
        node_of = self.tracer.node_of
        inputs: dict[Node, _Argument] = {}
        for index, tensor in enumerate(tensors):
            inputs.setdefault(node_of(tensor), _Argument(index))
        steps: dict[Node, _Step] = {}

        def spec(value: Any) -> Any:
            if type(value) is not Node:
                if next(iter_nodes(value), None) is not None:
                    raise LookupError(value)   # nested where the op's forward reads tensors, not arrays
                return value
            found = steps.get(value) or inputs.get(value)
            if found is None:
                raise LookupError(value)   # a tensor the formula was not given
            return found

        recorded = []
        for node in made:
            if node.op is not Opcode.CALL_FUNCTION or next(iter_nodes(node.kwargs), None) is not None:
                return None
            args = node.args
            try:
                if getattr(node.target, "variadic", False):   # its forward reads the list of its first
                    args = (type(args[0])(spec(v) for v in args[0]),)
                else:
                    args = tuple(spec(a) for a in args)
            except LookupError:
                return None
            steps[node] = _Step(len(recorded))
            recorded.append((node.target, args, dict(node.kwargs), dict(node.meta)))
        if result is None:
            return Template(recorded, None)
        if type(result) is not TracedTensor or result._view is not None or result._data.base is not None:
            return None
        step = steps.get(self.tracer.bound_node(result))
        return None if step is None else Template(recorded, step.index)

    def _replay(self, template: Template, tensors: list[Tensor], nodes: list[Node]) -> Any:
        """The formula's result, its nodes added to the graph; ``self`` where a value disagrees with
        its node's metadata or an op raises (the formula then runs, and raises its own error)."""
        arrays = [t._data for t in tensors]
        values: list[Any] = []
        try:
            for target, args, kwargs, meta in template.steps:
                if target is tuple_item:
                    values.append(values[args[0].index][args[1]])
                    continue
                inputs = _fill(args, arrays, values)
                out = target.forward(list(inputs[0]), **kwargs) if target.variadic else \
                    target.forward(*inputs, **kwargs)
                out = tuple(as_storage(o) for o in out) if type(out) is tuple else as_storage(out)
                if not _agrees(meta, out):
                    return self
                values.append(out)
        except Exception:
            return self
        if template.result is not None and values[template.result].base is not None:
            return self
        return self._add_nodes(template, nodes, values)

    def _add_nodes(self, template: Template, arguments: list[Node], values: list[Any]) -> Tensor | None:
        """The template's nodes, reading ``arguments`` (the nodes of the formula's tensor arguments)."""
        tracer = self.tracer
        graph = tracer.graph
        nodes: list[Node] = []
        for target, args, kwargs, meta in template.steps:
            nodes.append(graph.call_function(target, tuple(_fill(args, arguments, nodes)), kwargs, meta))
        if tracer.record_lines:
            line = tracer.backward_line or user_line()
            if line is not None:
                for node in nodes:
                    tracer.lines[node.name] = line
        if template.result is None:
            return None
        node = nodes[template.result]
        return tracer.stand_in(node, node, values[template.result])


def _agrees(meta: dict[str, Any], value: Any) -> bool:
    if type(value) is tuple:
        return meta["shape"] == tuple(v.shape for v in value) and meta["dtype"] == tuple(v.dtype for v in value)
    return meta["shape"] == value.shape and meta["dtype"] == value.dtype
