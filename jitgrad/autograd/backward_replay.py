"""Replays the fast path's routing for a graph shaped like one it has run before.

A training loop builds the same graph every step. The fast path (``fast_backward``) finds its order
again each time: a heap of nodes by sequence number, a buffer per node, and for every edge a check of
the gradient's shape and dtype against the slot it reaches. On W1 (126 nodes) that bookkeeping cost
more than the nodes' own formulas. Once a graph has run, a *program* is written for its shape: Python
source naming every node, with the order, the summing of gradients that meet in a slot, and the
shape and dtype fixes of ``fast_backward._route`` written out as straight-line code.

A program checks as it goes that the graph it walks is the one it was written for, and gives up at
the first difference (returns None, or raises where an expression no longer fits; nothing has
changed either way) and the fast path runs as before. It checks everything the routing depends on:

- each node's class and number of edges, the slot each edge names, and the node or leaf it reaches:
  the same object wherever the traced graph had the same one, and another wherever it had another
  (nodes must run in strictly descending sequence number, and no leaf may be reached as two);
- each node's input metadata: the shape, dtype and device its gradient slots expect;
- hooks and ``retain_grad`` on every node, and hooks on every leaf (``fast_backward``);
- each gradient a formula returns: None where it was None, else of the same shape and dtype.

The formulas themselves run through each node's ``apply_arrays``, with their own guards. The order
is a topological order of the traced graph, so of any graph of the same shape, and gradients that
meet in a slot are summed in the same order: the results are the fast path's, bit for bit.

A program keeps classes, shapes and dtypes, never a node or an array: it keeps no graph alive. While
it runs it drops each gradient once its node has run, as a hand-written step drops its temporaries:
W2's six 64x256 gradients held to the end took memory the later matrix products' packing then
found cold in the cache.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import provided
from .graph import FORMULA_MISS, AccumulateGrad, Node, add_arrays

MAX_NODES = 4096  # a larger graph is left to the fast path: its program would take long to compile
MAX_PROGRAMS_PER_KEY = 4  # graphs of one root kind and seed tried in turn; a new one replaces the oldest
MAX_SIGHTINGS = 1024


class Program:
    """A generated replay: ``run(root, seed)`` returns ``(leaves, grads, executed)`` or None.
    ``complete`` when every edge of the traced graph carried a gradient (so each node run has a path
    to a leaf reached: ``fast_backward`` needs no walk to know which nodes to free)."""

    __slots__ = ("run", "source", "complete")

    def __init__(self, run: Callable[..., Any], source: str, complete: bool) -> None:
        self.run = run
        self.source = source
        self.complete = complete


class _Cache:
    """Programs by (root class, seed shape, seed dtype); how often each such key ran a graph of each
    size without a program; and the keys whose next run is traced to write one.

    Writing a program costs a few hundred times what it saves a step (W1: about 30 ms of writing
    and compiling, 0.15 ms saved a step), so only a graph that comes back is worth it: a key's run
    is traced once it ran a graph of the same number of nodes twice without a program."""

    def __init__(self) -> None:
        self.programs: dict[tuple, list[Program]] = {}
        self.sightings: dict[tuple, int] = {}
        self.tracing: set[tuple] = set()

    def clear(self) -> None:
        self.programs.clear()
        self.sightings.clear()
        self.tracing.clear()


cache = _Cache()


def key_of(root: Node, seed: np.ndarray) -> tuple:
    return type(root), seed.shape, seed.dtype


def replay(root: Node, seed: np.ndarray) -> tuple[list, list, list, bool] | None:
    """Runs the program written for a graph of this shape: the leaves reached, the gradient each
    received (in the order of ``leaves``), the nodes run, oldest last, and the program's ``complete``;
    None when no program fits."""
    for program in cache.programs.get(key_of(root, seed), ()):
        done = program.run(root, seed)
        if done is not None and len(set(done[0])) == len(done[0]):  # one leaf where it saw two: not its graph
            return (*done, program.complete)
    return None


def traces(root: Node, seed: np.ndarray) -> bool:
    """Whether the fast path should trace its run from ``root`` (for ``learn``)."""
    return key_of(root, seed) in cache.tracing


def learn(root: Node, seed: np.ndarray, executed: Sequence[Node],
          trace: Sequence[tuple[Node, list, Any]] | None) -> None:
    """After a fast run the programs did not replay: writes the program of its graph from ``trace``
    (each node run, in order, with the (shape, dtype) of each gradient it returned, None where it
    returned none, and its ``array_formula``), or counts the graph's size towards tracing a later run."""
    key = key_of(root, seed)
    if trace is None:
        size = (key, len(executed))
        if len(cache.sightings) >= MAX_SIGHTINGS:
            cache.sightings.clear()
        seen = cache.sightings[size] = cache.sightings.get(size, 0) + 1
        if seen >= 2 and len(executed) <= MAX_NODES:
            del cache.sightings[size]
            cache.tracing.add(key)
        return
    cache.tracing.discard(key)
    if not trace or trace[0][0] is not root:
        return
    program = _Writer(trace, seed).program()
    if program is not None:
        programs = cache.programs.setdefault(key, [])
        if len(programs) >= MAX_PROGRAMS_PER_KEY:
            del programs[0]
        programs.append(program)


class _Unwritable(Exception):
    """The run took a turn a program does not write out (it stays with the fast path)."""


class _Writer:
    """Writes a program: a few lines a node, checks first. A gradient or node that is not what the
    trace saw fails a check (``return None``); one that breaks an expression (a formula that answers
    None where it answered arrays) raises, and the engine runs the backward, as the fast path would
    have sent it there too."""

    def __init__(self, trace: Sequence[tuple[Node, list, Any]], seed: np.ndarray) -> None:
        self.trace = trace
        self.seed = seed
        self.index = {node: i for i, (node, _, _) in enumerate(trace)}
        self.leaves: dict[AccumulateGrad, int] = {}
        self.found = {0}  # nodes the program has a variable for (the root is its argument)
        self.slots: dict[tuple, str] = {}  # (node index or "l", slot) -> variable holding its gradient
        self.lines: list[str] = []
        self.globals: dict[str, Any] = {"AccumulateGrad": AccumulateGrad, "add": add_arrays, "add_into": np.add,
                                        "reduce": np.add.reduce, "inf": float("inf"),
                                        "MISS": FORMULA_MISS}
        self.names: dict[Any, str] = {}
        self.owned: set[str] = set()  # slot variables holding a sum made here, in memory of their own
        self.complete = True  # no edge without a gradient so far

    def constant(self, value: Any) -> str:
        name = self.names.get(value)
        if name is None:
            name = self.names[value] = f"K{len(self.names)}"
            self.globals[name] = value
        return name

    def program(self) -> Program | None:
        root = self.trace[0][0]
        meta = root._input_metadata
        if len(meta) != 1 or meta[0].shape != self.seed.shape or meta[0].dtype is not self.seed.dtype:
            return None  # a seed the fast path casts or sums: rare, left to it
        self.lines.append("def replay(n0, seed):")
        root_class = self.constant(type(root))
        self.lines.append(f"    if type(n0) is not {root_class} or {self._metadata_differs('n0', root)}: return None")
        self.slots[0, 0] = "seed"
        self.lines.append("    s = inf")
        try:
            for i, (node, returned, formula) in enumerate(self.trace):
                self._node(i, node, returned, formula)
        except _Unwritable:
            return None
        leaves = ", ".join(f"l{m}" for m in range(len(self.leaves)))
        grads = ", ".join(self.slots["l", m] for m in range(len(self.leaves)))
        nodes = ", ".join(f"n{i}" for i in range(len(self.trace)))
        self.lines.append(f"    return [{leaves}], [{grads}], [{nodes}]")
        source = "\n".join(self.lines) + "\n"
        namespace = dict(self.globals)
        exec(compile(source, "<backward replay>", "exec"), namespace)  # noqa: S102 - our own generated code
        return Program(namespace["replay"], source, self.complete)

    def _metadata_differs(self, variable: str, node: Node) -> str:
        """The test that a node's gradient slots expect other shapes, dtypes or devices than in the
        traced graph (one-output nodes and CPU leaves share their metadata tuple: identity is the
        common answer)."""
        meta = self.constant(tuple(node._input_metadata))
        return f"{variable}._input_metadata is not {meta} and {variable}._input_metadata != {meta}"

    def _node(self, i: int, node: Node, returned: list, formula: Any) -> None:
        """A node's lines: its checks, its formula (the one it ran, called directly, with
        ``apply_arrays`` where that answers ``MISS``) and the routing of what it returns."""
        emit = self.lines.append
        edges = node._next_edges
        if i not in self.found or len(returned) != len(edges):
            raise _Unwritable
        n = f"n{i}"
        emit(f"    e = {n}._next_edges")
        emit(f"    if {n}._sequence_nr >= s or {n}._pre_hooks or {n}._post_hooks or {n}._tensor_pre_hooks "
             f"or {n}._retains_grad or len(e) != {len(edges)}: return None")
        names = [self.slots[i, s] for s in range(len(node._input_metadata)) if (i, s) in self.slots]
        grads = ", ".join(self.slots.get((i, s), "None") for s in range(len(node._input_metadata)))
        if formula is None:
            emit(f"    s = {n}._sequence_nr; o = {n}.apply_arrays([{grads}])")
        else:  # past the root, every gradient is checked on its way to the node: the formula need not
            call = f"{self.constant(getattr(formula, 'routed', formula) if i else formula)}([{grads}], {n})"
            emit(f"    s = {n}._sequence_nr; o = {call}")
            emit(f"    if o is MISS: o = {n}.apply_arrays([{grads}])")
        if names:  # their last use: freed with the next node's ``x``, as a hand-written step frees them
            emit(f"    del {', '.join(names)}")
        for k, (edge, got) in enumerate(zip(edges, returned)):
            if edge is None:
                emit(f"    if e[{k}] is not None: return None")
            elif got is None:
                self.complete = False
                emit(f"    if o[{k}] is not None: return None")
            else:
                self._route(k, edge, got)

    def _route(self, k: int, edge: tuple[Node, int], got: tuple) -> None:
        """Gradient ``k`` of the node to the slot its edge names, checked, and fixed as
        ``fast_backward._route`` fixes it, into that slot's variable."""
        emit = self.lines.append
        target, slot = edge
        shape, dtype = got
        checks = [f"a.shape != {self.constant(shape)}", f"a.dtype is not {self.constant(dtype)}", f"t[1] != {slot}"]
        is_leaf = type(target) is AccumulateGrad
        number = self.leaves.get(target) if is_leaf else self.index.get(target)
        if number is None and not is_leaf:
            raise _Unwritable  # a gradient went to a node that did not run
        if is_leaf and number is None or not is_leaf and number not in self.found:
            if is_leaf:
                number = self.leaves[target] = len(self.leaves)
            else:
                self.found.add(number)
            variable = f"l{number}" if is_leaf else f"n{number}"
            emit(f"    a = o[{k}]; t = e[{k}]; {variable} = t[0]")
            checks.append(f"type({variable}) is not {self.constant(type(target))}")
            checks.append(self._metadata_differs(variable, target))
        else:
            variable = f"l{number}" if is_leaf else f"n{number}"
            emit(f"    a = o[{k}]; t = e[{k}]")
            checks.append(f"t[0] is not {variable}")
        emit(f"    if {' or '.join(checks)}: return None")
        want_shape, want_dtype, _ = target._input_metadata[slot]
        if shape != want_shape:  # provided.sum_to_array's numpy calls, written out for these shapes
            dims = provided.summed_dims(shape, want_shape)
            if dims:
                emit(f"    a = reduce(a, {self.constant(dims)}, None, None, True)")
            if tuple(1 if d in dims else n for d, n in enumerate(shape)) != want_shape:
                emit(f"    a = a.reshape({self.constant(want_shape)})")
        if dtype != want_dtype:
            emit(f"    a = a.astype({self.constant(want_dtype)})")
        place = ("l", number) if is_leaf else (number, slot)
        name = self.slots.get(place)
        if name is None:
            name = self.slots[place] = f"g{place[0]}_{place[1]}"
            emit(f"    {name} = a")
        elif name in self.owned:  # a sum this program made: nothing else can see it, add in place
            emit(f"    add_into({name}, a, out={name})")
        else:
            self.owned.add(name)
            emit(f"    {name} = add({name}, a)")

