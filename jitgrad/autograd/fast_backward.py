"""The engine's fast path: ``backward()`` and ``autograd.grad`` over arrays when nothing can observe how
they run.

When no one can see the backward's intermediate steps — no ``create_graph``, no hook or
``retain_grad`` on a node it reaches, no anomaly mode, no reentrant backward, no forward-mode level, no
tracer, no CUDA tensor — the engine's bookkeeping (a graph task, dependency counts, tensor-wrapped
gradients, a check per edge on the way) buys nothing. This loop runs the same nodes on arrays instead:
each node's ``apply_arrays`` (staged formulas, ``jitgrad.ops.staged_backward``) in descending
``sequence_nr``, which is a topological order of a graph recorded on one thread, since every edge
points to a node made earlier. Gradients for a slot are summed in the order the engine sums them, so
the results are the engine's, bit for bit.

A graph that comes back every step (a training loop) is run instead by a program written for its
shape (``backward_replay``), which checks the graph as it goes and hands over to the loop here at the
first difference.

It is all or nothing: gradients for the leaves collect apart and are written to ``.grad`` only once
every node has run. Whatever it does not handle — a node without ``apply_arrays``, a hook found on the
way, a saved value that was freed or modified, an edge against the order, a gradient of the wrong
shape, any exception — makes it give up with nothing changed, and the engine runs the whole backward
as it always does (which also raises the error the user should see).
"""
from __future__ import annotations

import heapq
import sys
from collections import deque
from itertools import repeat
from operator import is_, itemgetter, methodcaller
from typing import Sequence

import numpy as np

from ..tensor import Tensor
from . import anomaly_mode, backward_replay, forward_ad, provided
from .graph import AccumulateGrad, Edge, Node, add_arrays, add_in_place, first_grad

# sys.getrefcount of an array held by one local variable (and by getrefcount's own argument)
_ONLY_HERE = 2
_DONE = object()  # a node's buffer once it has run: a gradient arriving later means the order was wrong
_DROPPED = object()  # what a leaf that is not wanted "receives"
_BEFORE_EVERY_NODE = float("inf")  # the place of the roots' seeds in the order
_ONLY_LEAVES = {AccumulateGrad}
_node_of = itemgetter(0)  # an edge's node
_release = methodcaller("release_variables")


def usable(depth: int, devices_active: bool) -> bool:
    """Whether nothing outside the nodes could observe a backward run on this thread now."""
    return (depth == 0 and not devices_active and not anomaly_mode.state.enabled
            and forward_ad.state.level is None and not provided.observed())


def run(roots: Sequence[Edge], seeds: Sequence[Tensor], keep_graph: bool, inputs: Sequence[Edge] | None,
        accumulate: bool) -> list[Tensor | None] | None:
    """Runs the backward from ``roots`` seeded with ``seeds``: into the ``.grad`` of every leaf (or of
    the leaves ``inputs`` names) when ``accumulate``, else returning the gradients that reach
    ``inputs`` (``autograd.grad``). None, with nothing changed, when it must be left to the engine,
    which also takes every ``inputs`` that is not a leaf."""
    wanted = None
    if inputs:
        wanted = set(map(_node_of, inputs))  # in C: autograd.grad pays this on every call
        if set(map(type, wanted)) != _ONLY_LEAVES:
            return None
    try:
        done = _run(roots, seeds, wanted)
    except Exception:  # the engine runs it again and reports the error with its context
        return None
    if done is None:
        return None
    leaves, executed, all_lead = done
    if accumulate:
        _commit(leaves)
        captured = []
    else:
        grads = list(map(leaves.get, map(_node_of, inputs), repeat(_DROPPED)))
        if any(map(is_, grads, repeat(_DROPPED))):
            grads = [None if grad is _DROPPED else grad for grad in grads]
            captured = [None if grad is None else Tensor._make(grad) for grad in grads]
        else:  # every input reached (autograd.grad of a loss over its parameters): no test per gradient
            captured = list(map(Tensor._make, grads))
    if not keep_graph:
        deque(map(_release, executed if wanted is None or all_lead else _leading_to(wanted, executed)), 0)
    return captured


def _leading_to(wanted: set, executed: list) -> list:
    """The nodes of ``executed`` with a path to a leaf of ``wanted``: the engine runs, and frees, only
    those for ``autograd.grad`` (the others keep their saved values for a later backward). Oldest first,
    every node's next nodes are judged before it."""
    leading = set(wanted)
    for node in reversed(executed):  # a loop, not any() over a generator: W4 runs this for 200 nodes a step
        for edge in node._next_edges:
            if edge is not None and edge[0] in leading:
                leading.add(node)
                break
    return [node for node in executed if node in leading]


def _run(roots: Sequence[Edge], seeds: Sequence[Tensor], wanted: set | None) -> tuple[dict, list, bool] | None:
    """The leaves' gradients, the nodes run (newest first) and whether each of those has a path to a
    leaf of ``wanted`` (then ``run`` frees them all without ``_leading_to``'s walk), or None."""
    trace = None
    one_root = len(roots) == 1 and roots[0][1] == 0  # what replay programs are written for
    if one_root:
        root, first_seed = roots[0][0], seeds[0]._data
        try:
            replayed = backward_replay.replay(root, first_seed)
        except Exception:  # a graph its checks let through but its code does not fit: the loop below
            replayed = None
        if replayed is not None:
            return _replayed(*replayed, wanted)
        if backward_replay.traces(root, first_seed):
            trace = []
    buffers: dict[Node, object] = {}
    leaves: dict[AccumulateGrad, np.ndarray | object] = {}
    heap: list = []
    if not _route(roots, [seed._data for seed in seeds], _BEFORE_EVERY_NODE, buffers, leaves, heap, wanted):
        return None
    executed = []
    pop = heapq.heappop
    while heap:
        priority, node = pop(heap)
        grads = buffers[node]
        buffers[node] = _DONE
        if node._pre_hooks or node._post_hooks or node._tensor_pre_hooks or node._retains_grad:
            return None
        answer = node.apply_arrays(grads)
        if answer is None or not _route(node._next_edges, answer, -priority, buffers, leaves, heap, wanted):
            return None
        executed.append(node)
        if trace is not None:
            shapes = [None if a is None else (a.shape, a.dtype) for a in answer]
            trace.append((node, shapes, node.array_formula(grads)))
    if one_root:
        backward_replay.learn(root, first_seed, executed, trace)
    return leaves, executed, False


def _replayed(reached: list, grads: list, executed: list, complete: bool,
              wanted: set | None) -> tuple[dict, list, bool] | None:
    """What ``_run`` returns, from a replay (``backward_replay``): leaves outside ``wanted`` dropped as
    ``_first_into_leaf`` drops them; None for a leaf with hooks, as there. When the program saw every
    edge carry a gradient (``complete``), each node it ran has a path to a leaf it reached, so with
    every such leaf wanted, every node leads to one."""
    if wanted is None or wanted.issuperset(reached):  # every leaf reached is kept: no test per leaf
        for leaf in reached:
            variable = leaf.variable
            if leaf._pre_hooks or leaf._post_hooks or leaf._tensor_pre_hooks or leaf._retains_grad \
                    or variable._hooks or variable._post_accumulate_grad_hooks:  # leaf.hooked(), inline
                return None
        return dict(zip(reached, grads)), executed, complete
    leaves: dict = {}
    for leaf, grad in zip(reached, grads):
        if leaf not in wanted:
            leaves[leaf] = _DROPPED
        elif leaf.hooked():
            return None
        else:
            leaves[leaf] = grad
    return leaves, executed, False


def _route(edges: Sequence[Edge | None], grads: Sequence[np.ndarray | None], sequence_nr: float, buffers: dict,
           leaves: dict, heap: list, wanted: set | None) -> bool:
    """Hands each gradient to the slot its edge names, from a node numbered ``sequence_nr`` (the roots'
    seeds come before every node): checked, summed back to the slot's shape and cast to its dtype as the
    engine's ``validate_outputs`` does, added to what the slot has, and the node it reaches queued.
    False where the engine must take over."""
    push = heapq.heappush
    for edge, grad in zip(edges, grads):
        if edge is None or grad is None:
            continue
        target, slot = edge
        shape, dtype, _ = target._input_metadata[slot]
        if grad.shape != shape:
            if not expandable(shape, grad.shape):
                return False
            grad = provided.sum_to_array(grad, shape)
        if grad.dtype is not dtype and grad.dtype != dtype:
            grad = grad.astype(dtype)
        if type(target) is AccumulateGrad:
            old = leaves.get(target)
            if old is None:
                if not _first_into_leaf(target, grad, leaves, wanted):
                    return False
            elif old is not _DROPPED:
                leaves[target] = add_arrays(old, grad)
            continue
        buffer = buffers.get(target)
        if buffer is None:
            if target._sequence_nr >= sequence_nr:
                return False  # not made before this node: the order is not topological (other threads)
            buffer = buffers[target] = [None] * len(target._input_metadata)
            push(heap, (-target._sequence_nr, target))  # equal numbers (two threads): nodes compare, TypeError
        elif buffer is _DONE:
            return False
        old = buffer[slot]
        buffer[slot] = grad if old is None else add_arrays(old, grad)
    return True


def _first_into_leaf(leaf: AccumulateGrad, grad: np.ndarray, leaves: dict, wanted: set | None) -> bool:
    """Takes the first gradient a leaf receives; False for a leaf with hooks. A leaf outside ``wanted``
    drops it and those after it: the engine would not run its AccumulateGrad, nor its hooks."""
    if wanted is not None and leaf not in wanted:
        leaves[leaf] = _DROPPED
        return True
    if leaf.hooked():
        return False
    leaves[leaf] = grad
    return True


def _commit(leaves: dict) -> None:
    """Writes the leaves' gradients. An array that owns its memory and that nothing but ``leaves``
    refers to (no tensor, saved value, view, other leaf or caller: the reference count tells, as
    PyTorch's AccumulateGrad tells by the use count) becomes ``.grad`` as it is; any other is copied,
    so that writing into ``.grad`` can never change another value."""
    while leaves:
        leaf, grad = leaves.popitem()
        variable = leaf.variable
        if grad is _DROPPED or not variable._requires_grad:  # requires_grad_(False) since: as AccumulateGrad
            continue
        with leaf._lock:
            old = variable._grad
            if old is not None:
                if not (leaf.in_place and add_in_place(old, grad)):
                    variable._grad = Tensor._make(add_arrays(old._data, grad))
            else:
                owned = _private(grad)  # before ``grad`` is an argument of another call: it counts references
                variable._grad = Tensor._make(first_grad(grad, variable._data, copy=not owned))


def _private(grad: np.ndarray) -> bool:
    """Whether ``grad``'s memory is reachable through ``grad`` alone: an array that owns it, or a
    writeable view of the same size over an array that nothing but the view holds (a bias's gradient,
    summed with keepdim and reshaped). Only ``_commit``'s variable refers to ``grad`` itself then."""
    if sys.getrefcount(grad) != _ONLY_HERE + 1:
        return False
    base = grad.base
    if base is None:
        return True
    # ``base`` is held by the view and by the local name here: nothing else
    return (type(base) is np.ndarray and base.base is None and base.size == grad.size and grad.flags.writeable
            and sys.getrefcount(base) == _ONLY_HERE + 1)


def expandable(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether a gradient of shape ``target`` can be summed back to ``shape`` (undoing a broadcast)."""
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(target)))
