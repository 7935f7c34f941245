"""Capturing a call of the user's function as the graph a compiled function runs: one trace.

The trace runs the function on the caller's own objects. Its tensors (the arguments' leaves, at any
depth of lists, tuples and dicts, and the tensors it reads from its closure, globals, defaults or the
objects reached from them) are lent to the trace and given back untouched (``fx.borrowing``); each
distinct tensor is one graph input, with every *source* it was found at, so that each call reads it
afresh from there (``GraphInput``). What the function reads besides tensors is guarded
(``free_variables.py``): the guards are the decorator's business, this module reports them.

The trace tells two kinds of programs apart:

- a *step*: the function calls ``backward()``/``autograd.grad``, writes into its tensors (an SGD update
  under ``no_grad``, ``w.data = ...``), or needs no gradient at all. Its graph returns ``(result, grads,
  writes)``: the result, the final ``.grad`` of each input whose gradient changed and the new value of
  each input written in place, by input index. The runtime writes those back into the caller's tensors.
- a *loss*: its outputs require grad and it does not differentiate them itself. The same trace goes on
  into the engine's backward (``fx.joint.differentiate``), so the graph is the joint one, which
  ``passes.partition_joint`` splits into the forward that runs now and the backward that runs when the
  engine reaches the outputs' ``CompiledFunctionBackward``.
"""
from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from ..autograd import engine, grad_mode
from ..fx.checked_graph import CheckedGraph, NotAlike
from ..fx.graph import Graph
from ..fx.joint import differentiate, is_backward
from ..fx.node import Node, iter_leaves
from ..fx.numbers import Specialize, SymbolicNumber
from ..fx.traced_tensor import TracedTensor
from ..fx.tracer import TraceError, Tracer, user_line
from ..ops.host_reads import TraceRefused
from ..random import default_generator
from ..tensor import Tensor
from . import side_effects
from .free_variables import SCALAR_TYPES, FreeVariables, find_free_variables
from .guards import array_contents, unguarded_array
from .placement import host
from .pytree import call_leaf_paths, flatten, replace_leaves
from .returned_values import check_returned_objects, graph_outlives_the_call, share_memory
from .lent_tensors import check_borrowed, check_retained, grads_added_into, rebound, step_outputs
from .sources import READ_ERRORS, Source, source_of_path
from .templates import tensor_leaves, tuple_types, viewed_node
from .unsupported import Unsupported


@dataclass
class GraphInput:
    """One placeholder of the captured graph (tangents aside) and where a call reads its value:
    ``sources`` lists every place the tensor was found (an argument leaf, a closure variable...; all
    of them must hold the same tensor at a call). ``grad_of`` marks the ``.grad`` of another input
    (read through it); ``array`` a numpy array a factory made a tensor of; ``number`` a Python number
    argument passed at each call (``fx.numbers``); ``random`` the generator's state at the start of the
call (``[seed, offset]``, taken from the generator by the caller)."""

    name: str
    sources: list[Source]
    grad_of: int | None = None
    array: bool = False
    number: bool = False
    random: bool = False


@dataclass
class Captured:
    kind: str                      # "step" or "loss"
    graph: Graph                   # the step's graph, or the loss's joint graph (output: (result, grads))
    inputs: list[GraphInput]       # in placeholder order, tangents excluded
    free: FreeVariables            # what the function can reach: the guards come from here
    result_types: Any = None       # the result's tuple subclasses (``templates.tuple_types``)
    sources: dict[str, str] = field(default_factory=dict)   # node name -> user source line
    differentiable: list[bool] = field(default_factory=list)  # loss: per tensor leaf of the result
    wanted: list[int] = field(default_factory=list)          # loss: inputs that get gradients
    draws: int = 0                 # elements the function draws from the generator per call
    host_results: bool = False     # step: a result is a CPU tensor (made from 0-d CPU inputs alone)
    # step: per tensor leaf of the result, the input it is (the same object) or None, the input whose
    # new ``.grad`` it is or None, and whether it requires grad (``templates.alias_inputs``)
    returned: list = field(default_factory=list)
    returned_grad: list = field(default_factory=list)
    returned_requires_grad: list = field(default_factory=list)
    backward_calls: list = field(default_factory=list)  # the trace's backward calls (fx.BackwardCalls)
    grads_added_into: list = field(default_factory=list)  # step: ``_grads_added_into``
    rebound: list = field(default_factory=list)  # step: inputs whose new value was set as ``.data`` (``_rebound``)
    # comparisons of run-time numbers the function branched on (``Tracer.predicates``)
    predicates: list = field(default_factory=list)


class _FreeTensors:
    """The tracer's ``outside``: a numpy array found by the free-variable walk becomes an input when a
    factory reads it; a tensor found nowhere cannot be a constant (a call could not read it afresh)."""

    def __init__(self, free: FreeVariables, parameter_names: list[str]) -> None:
        self.free, self.parameter_names = free, parameter_names

    def lift_name(self, array: Any) -> str | None:
        sources = self.free.sources_of(array)
        return sources[0].placeholder_name(self.parameter_names) if sources else None

    def unclaimed(self, tensor: Tensor) -> None:
        if engine.running_backward():
            return  # the engine's own (a gradient seed, zeros for a missing gradient): a constant
        raise Unsupported(f"the function reads a tensor ({tensor._data.dtype}{list(tensor._data.shape)}) that "
                          "is not among its arguments and was not found in its closure, globals or "
                          "defaults, so a compiled call could not read it afresh; pass it as an argument",
                          where=user_line())


def _is_object(value: Any) -> bool:
    return not isinstance(value, (Tensor, *SCALAR_TYPES)) and type(value).__module__ != "numpy"


class EagerThisCall(TraceError):
    """Raised by code being traced that must run eagerly this once and can be compiled from the next
    call on: an optimizer's first step, which makes the state (momentum buffers, Adam's moments) that
    later steps read as inputs. The compiled function runs the call eagerly, silently, and keeps no
    program for it."""


class RaisedWhileTraced(EagerThisCall):
    """The function raised an exception of its own while traced: the call runs eagerly, where the
    exception comes again if it is the function's; if eager mode returns instead, the trace cannot run
    this function (``CompiledFunction`` then runs such calls eagerly, said)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(f"the function raised {type(error).__name__} while traced ({error}), and not when "
                         "run eagerly")
        self.error = error


class NeedsValues(Exception):
    """The trace needed some of the numbers it was given as run-time inputs as Python values: the
    argument leaves in ``leaves``, and the free numbers at ``sources``, must stay guarded constants
    (``reason`` says where)."""

    def __init__(self, leaves: set[int], reason: str, sources: frozenset[Source] = frozenset()) -> None:
        super().__init__(reason)
        self.leaves, self.sources = leaves, sources


def _needs_values(tracer: Any, number_leaves: dict, free_numbers: dict, reason: str) -> NeedsValues:
    """The numbers the trace asked the value of (``tracer.specialized``), as the call's leaves and free
    sources the next trace keeps constant."""
    return NeedsValues({number_leaves[name] for name in tracer.specialized if name in number_leaves}, reason,
                       frozenset(free_numbers[name] for name in tracer.specialized if name in free_numbers))


def capture(fn: Callable, args: tuple, kwargs: dict, parameter_names: list[str],
            dynamic: frozenset[int] = frozenset(), static: frozenset[Source] = frozenset(),
            runtime_free: bool = True) -> Captured:
    """Traces ``fn(*args, **kwargs)`` (see the module docstring), twice (``_first_difference``); the
    argument leaves in ``dynamic`` (Python numbers, by ``flatten`` position) become run-time inputs
    (``fx.numbers``), and so do the free run-time numbers the walk finds (an optimizer's ``lr``) but
    for those at the sources in ``static``, which earlier traces needed by value (and for all of them
    without ``runtime_free``: ``jitgrad.compile(dynamic=False)`` keeps every number a constant). A trace that changes
    Python state outside the function is undone and traced again under a line tracer, to name the
    line that made each change. The second trace is checked against the first as it runs
    (``fx.checked_graph``), node by node."""
    captured = _capture_once(fn, args, kwargs, parameter_names, dynamic, static, runtime_free)
    try:
        again = _capture_once(fn, args, kwargs, parameter_names, dynamic, static, runtime_free, lines=False,
                              reference=captured)
    except NotAlike as differs:
        difference: str | None = str(differs)
    else:
        difference = _first_difference(captured, again)
    finally:
        captured.backward_calls = []  # they hold the first trace's nodes and values: let them go now
    if difference is not None:
        raise Unsupported("two traces of one call gave different graphs (" + difference + "): the function "
                          "reads a value that changes from call to call where no guard can see it (random."
                          "random(), np.random, time.time(), a counter, a library object's state); pass "
                          "such values as arguments")
    return captured


def _capture_once(fn: Callable, args: tuple, kwargs: dict, parameter_names: list[str],
                  dynamic: frozenset[int], static: frozenset[Source], runtime_free: bool = True,
                  lines: bool = True, reference: Captured | None = None) -> Captured:
    """One trace; ``lines``: note the user's line of every node (``Captured.sources``, for messages),
    which the trace that is only compared with the first does without (a stack walk per op).
    ``reference``: the first trace, which this trace is checked against as it runs (its graph is a
    ``CheckedGraph``, and it takes the results of the backward calls the first trace recorded where
    they are the same, ``fx.backward_calls``); ``NotAlike`` where a node prints otherwise, also when
    the trace failed after one did (the traced code may have caught the ``NotAlike``)."""
    def attempt(locate_changes: bool) -> Captured:
        graph = CheckedGraph(reference.graph) if reference is not None else None
        calls = reference.backward_calls if reference is not None else True
        try:
            captured = _capture(fn, args, kwargs, parameter_names, dynamic, static, locate_changes, lines, graph,
                                calls, runtime_free)
        except NotAlike:
            raise
        except Exception as error:
            if graph is not None and graph.difference is not None:
                raise NotAlike(graph.difference) from error
            raise
        if graph is not None and not graph.alike:
            raise NotAlike(graph.difference or f"{len(reference.graph)} nodes against {len(graph)}")
        return captured

    try:
        return attempt(locate_changes=False)
    except _ChangedState:
        return attempt(locate_changes=True)


def _first_difference(first: Captured, second: Captured) -> str | None:
    """Where two traces of the same call differ, or None. Guards see what the function reads from its
    arguments, closure, globals and the objects reached from them; a value it gets from a call into a
    library (a random number, the time, ``next(counter)``) is seen by none, and would be baked into
    the graph as a constant, silently. Such a value shows as a difference between two traces, so every
    capture traces twice. The graphs are compared as they print, node by node while the second trace
    runs (``fx.checked_graph``: it raises ``NotAlike`` at the first difference); what is left to
    compare after it are the constants' values and the random draws."""
    for name, value in first.graph.constants.items():
        other = second.graph.constants.get(name)
        if other is None or not np.array_equal(host(value._data), host(other._data),
                                               equal_nan=value.is_floating_point()):
            return f"the values of constant {name}"
    if first.draws != second.draws:
        return f"{first.draws} random elements drawn against {second.draws}"
    return None


class _ChangedState(Exception):
    """The trace changed state outside the function (undone): trace again to find the lines."""


def _capture(fn: Callable, args: tuple, kwargs: dict, parameter_names: list[str], dynamic: frozenset[int],
             static: frozenset[Source], locate_changes: bool, lines: bool = True,
             graph: Graph | None = None, backward_calls: bool | list = True, runtime_free: bool = True) -> Captured:
    leaves, _ = flatten(args, kwargs)
    leaf_sources = [source_of_path(p) for p in call_leaf_paths(args, kwargs)]
    for source, leaf in zip(leaf_sources, leaves):
        if type(leaf) is np.ndarray and array_contents(leaf) is None:
            raise Unsupported(f"{getattr(fn, '__name__', 'the function')} cannot be guarded: "
                              + unguarded_array(leaf, source.describe(parameter_names)))
    free = find_free_variables(fn, [(s, v) for s, v in zip(leaf_sources, leaves) if _is_object(v)])
    free.guards = [(s, "value" if kind == "number" and (s in static or not runtime_free) else kind, v)
                   for s, kind, v in free.guards]
    if free.unguardable:
        raise Unsupported(f"{getattr(fn, '__name__', 'the function')} cannot be guarded: {free.unguardable}")
    tracer = Tracer(capture_writes=True, outside=_FreeTensors(free, parameter_names), record_lines=lines,
                    draws_as_input=True, graph=graph, backward_calls=backward_calls)
    generator_state = default_generator.peek()
    argument_sources: dict[int, list[Source]] = {}
    numbers: dict[Node, tuple[Source, Any]] = {}   # number placeholder -> (its leaf's source, value)
    number_leaves: dict[str, int] = {}
    free_numbers: dict[str, Source] = {}           # number placeholder name -> its free source
    placed: list[tuple[Source, SymbolicNumber, Any]] = []
    changes: list[side_effects.Change] = []
    snapshots: list = []
    try:
        with tracer.running():
            symbols = {}
            for index, (source, leaf) in enumerate(zip(leaf_sources, leaves)):
                if index in dynamic:
                    symbols[index] = tracer.number_input(source.placeholder_name(parameter_names), leaf)
                    numbers[symbols[index].node] = (source, leaf)
                    number_leaves[symbols[index].node.name] = index
                elif isinstance(leaf, Tensor):
                    if id(leaf) not in argument_sources:
                        tracer.lift(source.placeholder_name(parameter_names), leaf)
                    argument_sources.setdefault(id(leaf), []).append(source)
            for tensor in free.tensors_found():  # lent before any op can record them in a graph
                if id(tensor) not in tracer.loans:
                    tracer.borrow(free.sources_of(tensor)[0].placeholder_name(parameter_names), tensor)
            for source, kind, value in free.guards:
                if kind == "number":
                    symbol = tracer.number_input(source.placeholder_name(parameter_names), value)
                    numbers[symbol.node] = (source, value)
                    free_numbers[symbol.node.name] = source
                    placed.append((source, symbol, value))
            if free.calls_type and (number_leaves or free_numbers):
                # ``type(lr) is float`` cannot be answered for a run-time number (``fx.numbers``): until
                # 2026-11-29 such a test took the other branch, silently, once a number was dynamic
                tracer.specialized |= set(number_leaves) | set(free_numbers)
                raise _needs_values(tracer, number_leaves, free_numbers, f"{free.calls_type} calls type(), "
                                    "which a run-time number cannot answer; use isinstance() to keep it dynamic")
            call_args, call_kwargs = replace_leaves(args, kwargs, symbols) if symbols else (args, kwargs)
            snapshots = free.snapshots + side_effects.container_snapshots(_containers(call_args, call_kwargs))
            with side_effects.locating(snapshots) if locate_changes else nullcontext({}) as lines:
                try:
                    with _symbols_in_place(placed, args, kwargs):
                        result = _call_traced(fn, call_args, call_kwargs)
                    if not tracer.specialized:
                        _refuse_numbers(tracer, result)
                except Specialize as error:
                    tracer.specialized |= error.roots
                    reason = str(error)
                else:
                    reason = "a number is needed as a Python value"
                if tracer.specialized:
                    raise _needs_values(tracer, number_leaves, free_numbers, reason)
                try:
                    captured = _finish(tracer, free, result, argument_sources, numbers)  # may run a backward's hooks
                except Specialize as error:  # a derivative formula needs a number's value (pow's at exponent 0)
                    tracer.specialized |= error.roots
                    raise _needs_values(tracer, number_leaves, free_numbers, str(error)) from None
            captured.draws = _check_draws(tracer, generator_state)
            captured.predicates = tracer.predicates
            captured.backward_calls = tracer.backward_calls.recorded
            changes = side_effects.find_changes(snapshots)
            if changes and not locate_changes:
                raise _ChangedState()
            if changes:
                changes = side_effects.with_lines(changes, snapshots, lines)
                raise Unsupported("the function changes Python state outside itself, which a compiled call "
                                  "would not do again: " + "; ".join(c.describe(parameter_names) for c in changes)
                                  + "; return the values instead, or run it eagerly")
    finally:
        side_effects.undo(changes or side_effects.find_changes(snapshots))
        for generator, state in tracer.drawn_from.values():  # a generator of the user's own (randn(generator=g))
            generator.set_state(state)
        default_generator.set_state(generator_state)
        tracer.release()
    return captured


def _call_traced(fn: Callable, args: tuple, kwargs: dict) -> Any:
    """``fn`` called in the trace. An exception of its own runs the call eagerly, where it is raised
    again after the effects eager mode has before it (a ``.grad`` set, a write), which the trace gave
    back: until 2026-11-28 it came out of the trace with none of them."""
    try:
        return fn(*args, **kwargs)
    except (TraceError, Specialize, Unsupported):
        raise
    except TraceRefused as error:  # an op no graph can hold (a SciPy or LAPACK forward...): eager, said
        raise Unsupported(str(error)) from error
    except Exception as error:
        raise RaisedWhileTraced(error) from error


@contextmanager
def _symbols_in_place(placed: list[tuple[Source, SymbolicNumber, Any]], args: tuple,
                      kwargs: dict) -> Iterator[None]:
    """Puts each free run-time number's ``SymbolicNumber`` where the function reads it (a parameter
    group's ``lr``; an item of a tuple, Adam's ``betas``, by a tuple of them in the tuple's place)
    while it runs, and the number back afterwards, before side effects are looked for. A function that
    sets such a number itself (``group["lr"] *= 0.9``) makes a change a compiled call would not make
    again: it is undone too, and refused."""
    stored: dict[Source, tuple[Any, Any]] = {}   # where -> (what was there, what the trace put there)
    tuples: dict[Source, list] = {}
    for source, symbol, value in placed:
        parent = source.parent()
        if source.steps[-1][0] == "item" and type(parent.read(args, kwargs)) is tuple:
            items = tuples.setdefault(parent, list(parent.read(args, kwargs)))
            items[source.steps[-1][1]] = symbol
        else:
            stored[source] = (value, symbol)
    for parent, items in tuples.items():
        stored[parent] = (parent.read(args, kwargs), tuple(items))
    changed: list[Source] = []
    try:
        for source, (_, symbol) in stored.items():
            source.store(symbol, args, kwargs)
        yield
    finally:
        for source, (value, symbol) in stored.items():
            try:
                if source.read(args, kwargs) is not symbol:
                    changed.append(source)
            except READ_ERRORS:
                changed.append(source)
            source.store(value, args, kwargs)
    if changed:
        raise Unsupported("the function sets " + ", ".join(s.describe() for s in changed) + ", a run-time "
                          "number a compiled call reads but would not set again; set it outside the function",
                          where=user_line())


def _check_draws(tracer: Tracer, before: np.ndarray) -> int:
    """The elements the function drew; a call feeds them the generator's state and moves it past them,
    which is what the function did only if it left the seed alone (a ``manual_seed`` inside it would
    have to happen at every call)."""
    draws = tracer.draws
    count = 0 if draws is None else draws.count
    expected = before + np.array([0, count], dtype=np.int64)
    if (draws is not None and not np.array_equal(draws.start, before)) or \
            not np.array_equal(default_generator.peek(), expected):
        raise Unsupported("the function seeds or sets the state of the random generator, which a compiled call "
                          "would not do again; seed it outside the function")
    return count


def _refuse_numbers(tracer: Tracer, result: Any) -> None:
    """A run-time number the function returns would have to come back as a Python number: it is
    needed by value."""
    for value in iter_leaves(result, SymbolicNumber):
        tracer.specialize(value, "returning it")


def _containers(args: tuple, kwargs: dict) -> list[tuple[Source, Any]]:
    """The lists and dicts among the call's arguments, at any depth, with their sources."""
    found: list[tuple[Source, Any]] = []

    def walk(value: Any, source: Source) -> None:
        if type(value) in (list, dict):
            found.append((source, value))
        if isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                walk(item, source.item(i))
        elif type(value) is dict:
            for key, item in value.items():
                walk(item, source.entry(key))
    for i, a in enumerate(args):
        walk(a, Source("arg", None, i))
    for key, value in kwargs.items():
        walk(value, Source("kwarg", None, key))
    return found


class TraceInputs:
    """The graph's inputs as the trace left them: each placeholder (tangents aside) with its value
    (a borrowed tensor, a numpy array, or a run-time Python number) and its ``GraphInput``, in
    placeholder order."""

    def __init__(self, tracer: Tracer, free: FreeVariables, argument_sources: dict[int, list[Source]],
                 numbers: dict[Node, tuple[Source, Any]]) -> None:
        values: dict[Node, Any] = {node: value for node, (_, value) in numbers.items()}
        for tensor in tracer.loans_in_order():
            node = tracer.placeholder_of(tensor)
            if node is not None:
                values[node] = tensor
        for node, value in tracer.lifted:  # numpy arrays read from outside
            values[node] = value
        if tracer.draws is not None:
            values[tracer.draws.node] = tracer.draws.start
        self.nodes = [p for p in tracer.graph.placeholders if not is_backward(p)]
        self.values = [values[p] for p in self.nodes]
        position = {id(v): i for i, v in enumerate(self.values) if isinstance(v, (Tensor, np.ndarray))}
        self.inputs = []
        for node, value in zip(self.nodes, self.values):
            owner = tracer.grad_of.get(id(value)) if isinstance(value, Tensor) else None
            if node in numbers:
                self.inputs.append(GraphInput(node.name, [numbers[node][0]], number=True))
            elif tracer.draws is not None and node is tracer.draws.node:
                self.inputs.append(GraphInput(node.name, [], random=True))
            elif owner is not None:
                self.inputs.append(GraphInput(node.name, [], grad_of=position[id(owner)]))
            else:
                sources = argument_sources.get(id(value), []) + (free.sources_of(value) or [])
                self.inputs.append(GraphInput(node.name, sources, array=not isinstance(value, Tensor)))

    @property
    def tensors(self) -> list[Tensor]:
        return [v for v in self.values if isinstance(v, Tensor)]


def _finish(tracer: Tracer, free: FreeVariables, result: Any, argument_sources: dict[int, list[Source]],
            numbers: dict[Node, tuple[Source, Any]]) -> Captured:
    """After the function returned, inside the trace: what the graph returns, and its inputs."""
    graph = tracer.graph
    # A .grad read without its tensor (x * w.grad): a call finds the gradient through its tensor, which
    # is then an input of the graph too (its placeholder unread).
    for grad_id, owner in list(tracer.grad_of.items()):
        if tracer.placeholder_of(owner) is None and tracer.placeholder_of(tracer.loans[grad_id].tensor) is not None:
            tracer.node_of(owner)
    inputs = TraceInputs(tracer, free, argument_sources, numbers)
    check_retained(tracer, result, tracer.lines)
    differentiated = any(is_backward(n) for n in graph.nodes)
    check_borrowed(tracer, inputs.tensors, differentiated)
    check_returned_objects(result)
    leaves = tensor_leaves(result)
    if len(leaves) > 1 and share_memory(leaves, inputs.tensors):
        raise Unsupported("the function returns tensors that share memory (y and y[0], or y.detach()), which "
                          "eager mode returns as views of one another and a compiled function as separate copies")
    needs_grad = grad_mode.is_grad_enabled() and any(t._requires_grad for t in leaves)
    if not grad_mode.is_grad_enabled() and any(t._grad_fn is not None for t in leaves):
        raise Unsupported("the function turns grad mode on (enable_grad, set_grad_enabled) for a result it returns "
                          "while it is off at the call: a compiled call would return it without its graph")
    if needs_grad and not differentiated:
        grads, writes = step_outputs(tracer, inputs)
        if writes or grads:
            raise Unsupported("the function writes into its inputs (in place, or their .grad) and returns "
                              "outputs that require grad; compile the whole step (with backward() inside)")
        placeholders = set(inputs.nodes)
        if any(viewed_node(tracer.node_of(t))[0] in placeholders for t in leaves):
            raise Unsupported("a result is an input or a view of one (x.t(), w[0], x.detach()), which eager mode "
                              "returns sharing the input's memory and a compiled loss would return as a copy")
        if any(t._requires_grad and t._grad_fn is None for t in leaves):
            raise Unsupported("a result is a leaf that requires grad made inside (nn.Parameter(...), "
                              "x.detach().requires_grad_()), which eager mode returns as a leaf whose .grad a "
                              "backward fills, and a compiled loss would return with its own backward")
        wanted = [i for i, (inp, value) in enumerate(zip(inputs.inputs, inputs.values))
                  if isinstance(value, Tensor) and inp.grad_of is None and value._requires_grad]
        gradients = differentiate(tracer, result, [inputs.values[i] for i in wanted])
        graph.output((tracer.as_arg(result), tuple(tracer.as_arg(g) for g in gradients)))
        late = TraceInputs(tracer, free, argument_sources, numbers)  # a backward may have read more of them
        if len(late.inputs) != len(inputs.inputs):
            raise Unsupported("the backward of the function reads tensors from outside it that its forward "
                              "does not (a custom Function's backward?); pass them as arguments")
        return Captured("loss", graph, inputs.inputs, free, tuple_types(result), tracer.lines,
                        [t._requires_grad for t in leaves], wanted)
    if needs_grad and any(t._requires_grad and graph_outlives_the_call(t) for t in leaves):
        raise Unsupported("the function returns a tensor whose graph a backward outside it could still run "
                          "through (create_graph=True or retain_graph=True inside, or a graph no backward inside "
                          "freed), which a compiled step returns without its graph; return .detach() of it, or "
                          "compile the loss alone (with backward() outside)")
    value = tracer.as_arg(result)
    while True:  # reading the result or the new .grads may make more inputs (a .grad read at last)
        inputs = TraceInputs(tracer, free, argument_sources, numbers)
        grads, writes = step_outputs(tracer, inputs)
        if len(TraceInputs(tracer, free, argument_sources, numbers).inputs) == len(inputs.inputs):
            break
    graph.output((value, grads, writes))
    captured = Captured("step", graph, inputs.inputs, free, tuple_types(result), tracer.lines)
    captured.grads_added_into = grads_added_into(tracer, inputs, grads)
    captured.rebound = [i for i in writes if rebound(tracer, inputs.values[i], inputs.nodes[i])]
    returned = tensor_leaves(result)
    captured.host_results = any(isinstance(t._data, np.ndarray) for t in returned)
    captured.returned = [next((i for i, v in enumerate(inputs.values) if v is t), None) for t in returned]
    captured.returned_grad = [next((i for i, v in enumerate(inputs.values) if isinstance(v, Tensor) and v._grad is t),
                                   None) for t in returned]
    captured.returned_requires_grad = [_requires_grad(t) for t in returned]
    return captured


def _requires_grad(tensor: Tensor) -> bool | type:
    """Whether a step's result requires grad: the class it has outside a trace where it is a leaf
    (``nn.Parameter(...)`` made inside), which a call's result is made as."""
    if not tensor._requires_grad:
        return False
    if tensor._grad_fn is not None:
        return True
    return next(kind for kind in type(tensor).__mro__ if not issubclass(kind, TracedTensor))


__all__ = ["Captured", "EagerThisCall", "GraphInput", "NeedsValues", "TraceInputs", "TraceError", "Unsupported", "capture"]
