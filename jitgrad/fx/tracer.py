"""``Tracer``: runs a function on tensors that carry real values and records every registry op it runs.

The tracer listens through ``jitgrad.ops.registry.observing``, so it sees the ops of the function and,
when the function calls ``backward()`` or ``autograd.grad``, the derivative ops the real engine runs,
in the engine's order (those nodes get ``meta["phase"] = "backward"``). Values are real, so control
flow on shapes just works; what cannot be captured is a value turning into a Python number, so
``TracedTensor`` refuses those conversions with a ``TraceError`` naming the line. A node's ``shape`` and
``dtype`` come from its op's rule (``node_meta``), checked against the value the op returned.

Tensors are matched to nodes by ``id``; the tracer keeps every tensor it has seen alive so that an id
is never reused during a trace. A backward node keeps its op's output as a bare array and unpacks it
into a new tensor object, so an op output is also known by the ``id`` of its array.

The caller's tensors the function reads are *lent* to the trace (``lift`` for an argument, ``borrow``
for a tensor it may read through its closure or globals: its placeholder is made on first use; see
``borrowing.py``) and given back untouched when it ends. A tensor the tracer has not seen otherwise
(made by a factory, or by the engine: the seed ``ones`` of a scalar loss, zeros for a missing
gradient) becomes a constant (``get_attr``), unless ``outside`` refuses it (``jitgrad.compile`` does
for a tensor it cannot tell where a call would read it from). A numpy array ``outside`` claims
becomes an input when a factory makes a tensor of it. With ``draws_as_input`` (``jitgrad.compile``),
the state a random factory took from the generator (``jitgrad.random.Draw``) is not a constant either:
the first draw's state becomes the placeholder ``rng_state`` and each later draw's is that plus the
elements drawn before it (``draws``), so that a call fed its own starting state draws afresh.

An in-place write into an argument's memory (through the tensor, ``.data`` or ``.detach()``) raises a
``TraceError`` before anything is written, unless the tracer was made with ``capture_writes=True``
(``jitgrad.compile`` does): then the argument gets memory of its own for the rest of the trace and
``writes`` maps its placeholder to the node of its new value, which later reads see. A write into part
of an argument, through a view of it, always raises. A view read after its base was written in place
is taken again from the base's new value, as its memory would show it.
"""
from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, Iterator, Protocol

import numpy as np

from ..autograd import engine, grad_mode
from ..autograd.graph import grad_accumulator
from ..device import copy_array
from ..ops.op_backward import running_formulas
from ..ops.registry import REGISTRY, OpDef, observing
from ..random import Draw, Generator
from ..tensor import Tensor
from .backward_calls import BackwardCalls
from .borrowing import BorrowError, Loan, memory_owner, same_memory
from .derivative_templates import DerivativeTemplates
from .graph import Graph, format_arg, tensor_meta
from .node import Node, Opcode, tuple_item
from .node_meta import call_meta, call_meta_key
from .numbers import NumberOp, Specialize, SymbolicNumber, integer_checks, number_meta, values_of
from .traced_tensor import TracedTensor, TraceError, conversion_error, traced_class
from .user_lines import user_line


class Outside(Protocol):
    """What a tracer asks about values it has not seen (``jitgrad.compile``'s free variables; the
    tensors among those it lends to the trace before the function runs, see ``borrow``)."""

    def lift_name(self, array: np.ndarray) -> str | None:
        """A placeholder name when ``array`` (which a factory is making a tensor of) lives outside
        the function and must be a graph input; None when it is not known outside."""

    def unclaimed(self, tensor: Tensor) -> None:
        """Called for a tensor neither seen, borrowed nor made during the trace: may raise when such
        a tensor cannot safely be a constant; returning makes it one."""


@dataclass
class RandomDraws:
    """The draws a trace saw from one generator: ``node`` is the placeholder for the state the first
    started at (``start``, ``[seed, offset]``), ``count`` the elements drawn in all."""

    node: Node
    generator: Generator
    start: np.ndarray
    count: int = 0


def agrees(meta: dict[str, Any], value: Any) -> bool:
    """Whether ``meta`` is ``tensor_meta(value)``, for one tensor without building that dict."""
    if type(value) is tuple:
        return meta == tensor_meta(value)
    return meta["shape"] == value._data.shape and meta["dtype"] == value._data.dtype


class Tracer:
    """Builds one graph from the ops observed while a function runs."""

    # the tensors a registry derivative may read without running user code (``backward_calls.py``)
    tensor_types: tuple[type, ...] = (Tensor, TracedTensor)

    def __init__(self, capture_writes: bool = False, outside: Outside | None = None,
                 record_lines: bool = False, draws_as_input: bool = False, graph: Graph | None = None,
                 backward_calls: bool | list | None = None) -> None:
        """``backward_calls``: True records the backward calls the function makes, a first trace's
        records (``BackwardCalls.recorded``) let a second trace (``graph`` checked against the first's)
        take their results rather than run them (``backward_calls.py``); None watches none."""
        self.graph = Graph() if graph is None else graph
        # a ``CheckedGraph`` (a second trace checked against a first): it matches calls itself
        self._match_call = getattr(self.graph, "match_call", None)
        self._nodes: dict[int, Node] = {}
        self._by_array: dict[int, Node] = {}  # op outputs by the id of their array (saved ``result``s)
        self._alive: list[Any] = []  # keeps ids unique for the whole trace
        self._view_versions: dict[int, int] = {}  # views: their base's version when they were bound
        # Values made in the trace whose memory an in-place op wrote: by the id of that array, the
        # node of what it holds now. ``y.detach()`` and ``y.data`` share ``y``'s array, so a write
        # through them is seen when ``y`` is read next, as its memory shows it eagerly.
        self._rewritten: dict[int, Node] = {}
        # Arguments' arrays: ``w.data``/``w.detach()`` share them, and an in-place write into one is a
        # write into the argument. Without ``capture_writes`` such a write raises TraceError; with it,
        # ``writes`` maps the placeholder to the node of the value it now holds.
        self.capture_writes = capture_writes
        self._arguments: dict[int, Node] = {}
        # The same arrays by the id of the array owning their memory, to tell a view of an argument
        # (whose numpy ``base`` names that owner, not the argument, when the argument is a view too).
        self._arguments_by_owner: dict[int, list[np.ndarray]] = {}
        self.writes: dict[Node, Node] = {}
        self.outside = outside
        self.loans: dict[int, Loan] = {}           # borrowed tensors, by id
        self._loans_by_array: dict[int, Loan] = {}  # and by the id of every array they have held
        self._pending: dict[int, str] = {}         # borrowed, their placeholder made on first use
        self._placeholders: dict[int, Node] = {}   # borrowed and used: their placeholders
        self.grad_of: dict[int, Tensor] = {}       # a borrowed ``.grad``, by id -> the tensor it belongs to
        self.added_into: dict[int, Tensor] = {}    # a ``.grad`` eager mode sums into the old one, by id -> it
        self.lifted: list[tuple[Node, np.ndarray]] = []  # placeholders of arrays ``outside`` claimed
        self._lifted_arrays: dict[int, Node] = {}
        self._outside_arrays: list[np.ndarray] = []  # numpy memory read from outside: never written
        self._created: set[int] = set()
        self.record_lines = record_lines
        self.lines: dict[str, str] = {}  # node name -> the user's line that ran its op (record_lines)
        # while a backward call that runs no user code runs, the line that made it: every op's in it
        self.backward_line: str | None = None
        self.specialized: set[str] = set()  # number inputs some code needed as Python values
        # comparisons of run-time numbers the function branched on: (node, the outcome it followed,
        # the user's line that compared them)
        self.predicates: list[tuple[Node, bool, str | None]] = []
        self.draws_as_input = draws_as_input
        self.draws: RandomDraws | None = None  # with draws_as_input, once the function drew
        self.drawn_from: dict[int, tuple[Any, np.ndarray]] = {}  # each generator drawn from, its first state
        self._metas: dict[Any, dict[str, Any]] = {}  # call_meta's answers, by call_meta_key
        self._grad_fn_nodes: dict[Any, Node] = {}  # an op's backward node -> the op's node
        self.backward_calls = None if backward_calls is None else \
            BackwardCalls(self, None if backward_calls is True else backward_calls)

    # ---- values ------------------------------------------------------------------------------------
    def _bind(self, tensor: Tensor, node: Node) -> None:
        self._nodes[id(tensor)] = node
        self._alive.append(tensor)
        if tensor._view is not None:
            self._view_versions[id(tensor)] = tensor._version_counter[0]

    def node_of(self, tensor: Tensor) -> Node:
        """The node computing ``tensor``; a constant for a tensor made outside the registry."""
        if not self.writes and not self._rewritten and tensor._view is None:  # the common case: an op's output
            node = self._nodes.get(id(tensor))
            if node is not None and node.op is not Opcode.PLACEHOLDER:
                return node
        argument = self._arguments.get(id(tensor._data))
        if argument is not None and argument in self.writes:
            return self.writes[argument]  # the argument's memory was written: its latest value
        if self._rewritten and id(tensor._data) in self._rewritten:
            return self._rewritten[id(tensor._data)]
        node = self._nodes.get(id(tensor))
        if node is not None and argument is not node and (node.op is Opcode.PLACEHOLDER or id(tensor) in self.loans):
            node = None  # an argument whose ``.data`` was replaced (after a write too): it holds another value now
        if node is not None and tensor._view is not None and \
                self._view_versions.get(id(tensor)) != tensor._version_counter[0]:
            return self._retake_view(tensor)
        node = node or self._by_array.get(id(tensor._data)) or argument
        if node is None:
            node = self._unseen(tensor)
        return node

    def bound_node(self, tensor: Tensor) -> Node | None:
        """``node_of(tensor)`` where that makes nothing (no constant, placeholder or view taken
        again), None where it would."""
        argument = self._arguments.get(id(tensor._data))
        if argument is not None and argument in self.writes:
            return self.writes[argument]
        if self._rewritten and id(tensor._data) in self._rewritten:
            return self._rewritten[id(tensor._data)]
        node = self._nodes.get(id(tensor))
        if node is not None and argument is not node and (node.op is Opcode.PLACEHOLDER or id(tensor) in self.loans):
            node = None
        if node is not None and tensor._view is not None and \
                self._view_versions.get(id(tensor)) != tensor._version_counter[0]:
            return None
        return node or self._by_array.get(id(tensor._data)) or argument

    def array_node(self, tensor: Tensor) -> Node | None:
        """The op output node ``tensor``'s array is known by, if any."""
        return self._by_array.get(id(tensor._data))

    @property
    def checked(self) -> bool:
        """Whether this trace is checked against an earlier one (its graph matches calls itself)."""
        return self._match_call is not None

    def state(self) -> tuple:
        """What only something other than an op call reading tensors changes: constants, placeholders,
        numbers asked for or branched on, writes in place, factory calls, random draws. A replayed
        derivative formula (``derivative_templates``) is one whose recording left it unchanged."""
        graph = self.graph
        return (len(graph.constants), len(graph.placeholders), len(self.predicates), len(self.specialized),
                len(self._rewritten), len(self.writes), len(self._created), len(self.lifted),
                self.draws.count if self.draws is not None else -1)

    def grad_fn_node(self, grad_fn: Any) -> Node | None:
        """The node of the op whose backward node ``grad_fn`` is, if this trace saw it made."""
        return self._grad_fn_nodes.get(grad_fn)

    def stand_in(self, node: Node, array_node: Node | None, value: np.ndarray) -> "TracedTensor":
        """A new tensor holding ``value``, bound to ``node`` (and its array to ``array_node``): what a
        second trace has for a result of a backward call it did not run (``backward_calls.py``)."""
        tensor = TracedTensor._make(value)
        self._bind(tensor, node)
        if array_node is not None:
            self._by_array.setdefault(id(value), array_node)
        return tensor

    def _unseen(self, tensor: Tensor) -> Node:
        if id(tensor) in self._pending:
            return self._materialize(tensor)
        loan = self._loans_by_array.get(id(tensor._data))
        if loan is not None and id(loan.tensor) in self._pending:  # ``w.detach()`` before ``w`` was used
            node = self._materialize(loan.tensor)
            self._bind(tensor, node)
            return node
        if self.outside is not None and id(tensor) not in self._created:
            self.outside.unclaimed(tensor)
        node = self.graph.get_attr(Tensor._make(copy_array(tensor._data)), meta=self._phase())
        self._bind(tensor, node)
        return node

    def _retake_view(self, view: Tensor) -> Node:
        """A view whose base was written in place since it was bound holds the base's new values: its
        view ops are replayed on the base's current node."""
        root, _, chain, _ = view._view
        with grad_mode.no_grad():
            value = root
            for op, attrs, index in chain:
                value = op(value, **attrs)
                if index is not None:
                    value = value[index]
        node = self.node_of(value)
        self._bind(view, node)
        return node

    def as_arg(self, value: Any) -> Any:
        """``value`` with its tensors replaced by their nodes (sequences kept as they are, but a tuple
        of a subclass, such as what ``max(dim)`` returns, becomes a plain one: the IR holds plain
        tuples and lists)."""
        if isinstance(value, Tensor):
            return self.node_of(value)
        if isinstance(value, SymbolicNumber):
            return value.node
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
        meta: dict[str, Any] = {"phase": "backward"} if engine.running_backward() else {}
        if not grad_mode.state.grad_enabled:
            meta["no_grad"] = True
        return meta

    def placeholder(self, name: str, value: Tensor, **meta: Any) -> TracedTensor:
        """An argument of the graph standing for a new tensor (a tangent): returns the traced tensor
        the function is given for it."""
        traced = TracedTensor._make(value._data, value._requires_grad)
        node = self.graph.placeholder(name, {**tensor_meta(value), **meta})
        self._bind(traced, node)
        self._add_argument(traced._data, node)
        if traced._requires_grad:
            self._watch_grad(traced)
        return traced

    def lift(self, name: str, tensor: Tensor) -> Node:
        """Makes the caller's ``tensor`` an argument of the graph, lent to the trace (``give_back``
        returns it as it was, see ``borrowing.py``); the function goes on using the same object, a
        ``TracedTensor`` until then. Its ``.grad`` is lent too, and becomes an argument when first
        read (a backward accumulating into it, an update reading it)."""
        self.borrow(name, tensor)
        return self._materialize(tensor)

    def borrow(self, name: str, tensor: Tensor) -> None:
        """Lends ``tensor`` to the trace now; its placeholder ``name`` is made when it is first used."""
        try:
            loan = Loan(tensor, traced_class(type(tensor)))
        except BorrowError as error:
            raise TraceError(f"{error}: pass a jitgrad.Tensor") from None
        self.loans[id(tensor)] = loan
        self._loans_by_array[id(tensor._data)] = loan
        self._pending[id(tensor)] = name
        self._alive.append(tensor)
        grad = tensor._grad
        if grad is not None and id(grad) not in self.loans:
            self.grad_of[id(grad)] = tensor
            self.borrow(f"{name}_grad", grad)

    def _materialize(self, tensor: Tensor) -> Node:
        name = self._pending.pop(id(tensor))
        node = self.graph.placeholder(name, tensor_meta(tensor))
        self._placeholders[id(tensor)] = node
        self._bind(tensor, node)
        self._add_argument(tensor._data, node)
        if tensor._requires_grad:
            self._watch_grad(tensor)
        return node

    # ---- Python numbers as inputs (``numbers.py``) -----------------------------------------------------
    def number_input(self, name: str, value: int | float) -> SymbolicNumber:
        """A placeholder for a Python number; the function is given the ``SymbolicNumber`` returned."""
        node = self.graph.placeholder(name, number_meta(value))
        return SymbolicNumber(value, node, frozenset({node.name}), self)

    def number_op(self, op: NumberOp, operands: tuple) -> SymbolicNumber:
        value = op(*values_of(operands))
        args = tuple(o.node if isinstance(o, SymbolicNumber) else o for o in operands)
        node = self.graph.call_function(op, args, {}, {**number_meta(value), **self._phase()})
        roots = frozenset().union(*(o.roots for o in operands if isinstance(o, SymbolicNumber)))
        return SymbolicNumber(value, node, roots, self)

    def predicate(self, op: NumberOp, operands: tuple) -> bool:
        """A comparison of run-time numbers: its outcome now, recorded with its node (``numbers.py``)."""
        value = bool(op(*values_of(operands)))
        args = tuple(o.node if isinstance(o, SymbolicNumber) else o for o in operands)
        node = self.graph.call_function(op, args, {}, {**number_meta(value), **self._phase()})
        self.predicates.append((node, value, user_line()))
        return value

    def specialize(self, number: SymbolicNumber, operation: str) -> None:
        """``number`` is needed as a Python value: remembered, then raised as ``Specialize``."""
        self.specialized |= number.roots
        raise Specialize(number.roots, operation, user_line())

    def loans_in_order(self) -> list[Tensor]:
        """The borrowed tensors, in the order they were lent."""
        return [loan.tensor for loan in self.loans.values()]

    def traced_values(self) -> list[tuple[Tensor, Node | None]]:
        """Every tensor the trace has seen, with its node (None for one not bound to a node)."""
        return [(v, self._nodes.get(id(v))) for v in self._alive if isinstance(v, Tensor)]

    def placeholder_of(self, tensor: Tensor) -> Node | None:
        """The placeholder of a borrowed tensor, None while it has not been used."""
        return self._placeholders.get(id(tensor))

    def release(self) -> None:
        """Lets go of every value the trace kept alive to keep ids unique (its tensors, their nodes by
        id) and of its watcher of backward calls, once nothing will be traced or looked up any more.
        The hooks that record gradients, and that watcher, hold the tracer and the tracer holds them,
        so without this the trace's tens of thousands of tensors and nodes live until the cycle
        collector finds those loops (0.03-0.08 s of CPU after W4's 500-step compile); released, they go
        as soon as the caller drops them."""
        self._alive.clear()
        self.added_into.clear()
        self._grad_fn_nodes.clear()
        self._nodes.clear()
        self._by_array.clear()
        self._rewritten.clear()
        self._view_versions.clear()
        self._metas.clear()
        self.backward_calls = None  # it holds the tracer: a loop that left all of a trace to the collector

    def give_back(self) -> None:
        """Returns every borrowed tensor to the state it had before the trace."""
        for loan in self.loans.values():
            loan.give_back()

    def _watch_grad(self, leaf: TracedTensor) -> None:
        """Records what backward writes into ``leaf.grad``. Without ``create_graph`` AccumulateGrad
        copies or adds arrays directly, outside the registry, so its hooks tell the tracer instead:
        a first gradient is the incoming one, a later one is ``add(old, incoming)``."""
        accumulator = grad_accumulator(leaf)
        accumulator.in_place = False   # a sum into the borrowed .grad's memory would be neither seen nor undone
        self._alive.append(accumulator)
        before: dict[str, Tensor | None] = {}

        def remember_old(grads: tuple) -> None:
            before["old"] = leaf._grad

        def record_new(grad_inputs: tuple, grad_outputs: tuple) -> None:
            new, old = leaf._grad, before.get("old")
            if new is None:
                return
            if id(new) in self._nodes:
                # written by an op the tracer saw: a new tensor under create_graph; a CUDA sum, made
                # by a kernel with grad mode off, which eager mode writes into ``old``'s memory
                if old is not None and new is not old and not grad_mode.state.grad_enabled:
                    self.added_into[id(new)] = old
                return
            incoming = self.node_of(grad_outputs[0])
            if old is None:
                node = incoming
            else:
                node = self.call(REGISTRY["add"], (self.node_of(old), incoming), {}, new)
                self.added_into[id(new)] = old
            new.__class__ = TracedTensor
            self._bind(new, node)
            loan = self.loans.get(id(leaf))
            if old is not None and (loan is None or old is not loan.original("_grad")):
                # a .grad set in the function (``w.grad = g``): eager mode sums into g's memory, which
                # later reads of g (or of an argument set as .grad) see; the call's own .grad is
                # summed into after the call (``compile.lent_tensors.grads_added_into``)
                self.alias(old, new)

        accumulator.register_prehook(remember_old)
        accumulator.register_hook(record_new)
        if self.backward_calls is not None:
            self.backward_calls.own_hooks.update((id(remember_old), id(record_new)))

    # ---- ops ---------------------------------------------------------------------------------------
    def call(self, target: Any, args: tuple, kwargs: dict, value: Any) -> Node:
        """A call node whose ``shape`` and ``dtype`` come from its op's rule (``node_meta``), checked
        against ``value``, what the real op returned: a rule that disagrees would make every pass
        and backend after the trace wrong, so the trace stops instead (``jitgrad.compile`` then runs
        the function eagerly). The rule is asked once per ``call_meta_key``: an unrolled loop makes the
        same call at every step, and each answer is still checked against the value. A trace checked
        against an earlier one (``checked_graph``) gets that trace's node instead, whose metadata the
        checked graph compares with the value."""
        if self._match_call is not None:
            return self._match_call(target, args, kwargs, value, self._phase())
        key = call_meta_key(target, args, kwargs)
        meta = self._metas.get(key) if key is not None else None
        if meta is None:
            meta = call_meta(target, args, kwargs)
            if key is not None:
                self._metas[key] = meta
        if not agrees(meta, value):
            raise TraceError(f"the shape and dtype rule of op {target.name} gives {meta} for "
                             f"{format_arg(args)}, but the op returned {tensor_meta(value)}")
        return self.graph.call_function(target, args, kwargs, {**meta, **self._phase()})

    def observe(self, op: OpDef, args: tuple, attrs: dict, output: Any) -> None:
        """The registry's observer: one node per op call (plus a ``tuple_item`` per output of a
        multi-output op); outputs become ``TracedTensor``s."""
        if attrs:
            for value in attrs.values():
                if isinstance(value, SymbolicNumber):
                    self.specialize(value, f"an attribute of {op.name}")
        node_of = self.node_of
        node = self.call(op, tuple([node_of(a) if isinstance(a, Tensor) else self.as_arg(a) for a in args]),
                         dict(attrs), output)
        numbers = [a for a in args if type(a) is SymbolicNumber and type(a.value) is int]
        for check in integer_checks(op.name, numbers, args, output) if numbers else ():
            self.predicate(*check)   # its range beside an integer tensor: eager's errors (``numbers.py``)
        if self.record_lines:
            line = self.backward_line or user_line()
            if line is not None:
                self.lines[node.name] = line
        if isinstance(output, tuple):
            for index, item in enumerate(output):
                item_node = self.call(tuple_item, (node, index), {}, item)
                self._bind_output(item, item_node)
                if isinstance(item, Tensor) and item._grad_fn is not None:
                    self._grad_fn_nodes[item._grad_fn] = node
            self._alive.append(output)
        else:
            self._bind_output(output, node)
            if output._grad_fn is not None:
                self._grad_fn_nodes[output._grad_fn] = node

    def created(self, tensor: Tensor, source: Any) -> None:
        """A factory made ``tensor`` (from ``source``, the data it was given): a constant of the trace,
        unless ``source`` is a numpy array ``outside`` claims, which becomes an input."""
        self._created.add(id(tensor))
        self._alive.append(tensor)
        if isinstance(source, Draw) and self.draws_as_input:
            node = self._draw_state(source)
            if node.op is Opcode.PLACEHOLDER:
                self._add_argument(tensor._data, node, replace=True)  # the tensor holds the input's value
            tensor.__class__ = TracedTensor
            self._bind(tensor, node)
            return
        if self.outside is None or not isinstance(source, np.ndarray):
            return
        node = self._lifted_arrays.get(id(source))
        if node is None:
            name = self.outside.lift_name(source)
            if name is None:
                return
            holder = TracedTensor._make(source)
            node = self.graph.placeholder(name, tensor_meta(holder))
            self._lifted_arrays[id(source)] = node
            self._alive.append(source)
            self._outside_arrays.append(source)
            self.lifted.append((node, source))
        if tensor._data.dtype != source.dtype:
            node = self.call(REGISTRY["to_dtype"], (node,), {"dtype": tensor._data.dtype}, tensor)
        else:
            self._add_argument(tensor._data, node, replace=True)  # the tensor holds the input's value
        tensor.__class__ = TracedTensor
        self._bind(tensor, node)

    def _draw_state(self, draw: Draw) -> Node:
        """The node of a draw's state: the call's starting state, offset by the elements drawn before
        it in the trace. Draws must follow one another on one generator, as a call would make them."""
        self.drawn_from.setdefault(id(draw.generator), (draw.generator, draw.state.copy()))
        if self.draws is None:
            node = self.graph.placeholder("rng_state", tensor_meta(Tensor._make(draw.state)))
            self.draws = RandomDraws(node, draw.generator, draw.state.copy())
        draws = self.draws
        if draw.generator is not draws.generator or draw.state[0] != draws.start[0] or \
                draw.state[1] != draws.start[1] + draws.count:
            raise TraceError("the random generator was reseeded, or set to another state, between two draws "
                             f"of the traced function (at {user_line()}); seed it outside the function")
        before, draws.count = draws.count, draws.count + draw.count
        if before == 0:
            return draws.node
        offset = self.graph.get_attr(Tensor._make(np.array([0, before], dtype=np.int64)), "draw_offset",
                                     meta=self._phase())
        return self.call(REGISTRY["add"], (draws.node, offset), {}, Tensor._make(draw.state))

    def before_write(self, tensor: Tensor) -> None:
        """Called before an in-place op writes ``tensor``'s memory: a borrowed tensor (or an alias of
        its memory) gets memory of its own, so the caller's array keeps its value; a write the trace
        cannot capture raises before it happens."""
        loan = self._loans_by_array.get(id(tensor._data))
        if loan is not None:
            if id(loan.tensor) in self._pending:
                self._materialize(loan.tensor)  # its value before the write is an input
            if not self.capture_writes:
                raise conversion_error("An in-place change to an argument of the traced function (not "
                                        "captured by fx.trace; jitgrad.compile captures it)")
            if not getattr(getattr(tensor._data, "flags", None), "writeable", True):
                return  # an expanded view: the write raises eager's error, as it would on a copy-free call
            own = loan.copy_on_write()
            if own is not None:
                self._loans_by_array[id(own)] = loan
                self._add_argument(own, self._arguments[id(loan.original_data)], replace=True)
            tensor._data = loan.tensor._data
            return
        if id(tensor._data) in self._arguments and not self.capture_writes:
            raise conversion_error("An in-place change to an argument of the traced function (not "
                                    "captured by fx.trace; jitgrad.compile captures it)")
        if id(tensor._data) not in self._arguments and self._views_an_argument(tensor._data):
            raise conversion_error("An in-place change to part of an argument (through a view of it)")
        if any(same_memory(array, tensor._data) for array in self._outside_arrays):
            raise conversion_error("An in-place change to a numpy array read from outside the function")

    def alias(self, tensor: Tensor, source: Tensor) -> None:
        """``tensor`` now holds ``source``'s value (an in-place op wrote it back), cast to its own dtype
        as the write casts (``x += y`` of a float32 ``x`` and a float64 ``y`` stays float32)."""
        argument = self._arguments.get(id(tensor._data))
        if argument is None and self._views_an_argument(tensor._data):
            raise conversion_error("An in-place change to part of an argument (through a view of it)")
        if argument is not None and not self.capture_writes:
            raise conversion_error("An in-place change to an argument of the traced function (not "
                                    "captured by fx.trace; jitgrad.compile captures it)")
        node = self.node_of(source)
        if source._data.dtype != tensor._data.dtype:
            node = self.call(REGISTRY["to_dtype"], (node,), {"dtype": tensor._data.dtype}, tensor)
        if argument is not None:
            self.writes[argument] = node
        else:
            self._rewritten[id(tensor._data)] = node
        self._bind(tensor, node)

    def _add_argument(self, array: np.ndarray, node: Node, replace: bool = False) -> None:
        if replace:
            self._arguments[id(array)] = node
        elif self._arguments.setdefault(id(array), node) is not node:
            return
        self._arguments_by_owner.setdefault(id(memory_owner(array)), []).append(array)

    def _views_an_argument(self, array: np.ndarray) -> bool:
        """Whether ``array`` (not an argument's own) reaches an argument's memory."""
        if not isinstance(array.base, np.ndarray):
            return False
        arguments = self._arguments_by_owner.get(id(memory_owner(array)), ())
        return any(same_memory(argument, array) for argument in arguments)

    def _bind_output(self, tensor: Tensor, node: Node) -> None:
        tensor.__class__ = TracedTensor
        self._bind(tensor, node)
        self._by_array.setdefault(id(tensor._data), node)

    @contextmanager
    def running(self) -> Iterator["Tracer"]:
        """The block in which the traced function runs: ops, factories and in-place writes are
        observed, and every borrowed tensor is given back at the end, whatever happens."""
        try:
            with observing(self.observe, self.alias, created=self.created, before_write=self.before_write), \
                    running_formulas(DerivativeTemplates(self)), \
                    engine.watching(self.backward_calls) if self.backward_calls is not None else nullcontext():
                yield self
        finally:
            self.give_back()
