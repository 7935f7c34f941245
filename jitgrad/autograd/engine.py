"""The backward engine, after PyTorch's ``torch/csrc/autograd/engine.cpp``.

A backward call becomes a ``GraphTask``: dependencies are counted by walking the graph from the roots,
gradients for a node collect in its ``InputBuffer`` (several edges into one slot are summed), and a node
whose dependencies reach zero goes on the thread's ``ReadyQueue``, which pops the deepest reentrant task
first and then the node created last (highest ``sequence_nr``). For ``autograd.grad(outputs, inputs)``
``ExecInfo`` marks the nodes on a path to the inputs; only those run, and the inputs' gradients are
captured instead of accumulated.

Devices: each node's gradient slots record the device of the forward tensor (``InputMetadata``), and a
gradient is checked against it. Once a CUDA tensor exists, nodes go on a ready queue per device
(``ReadyQueues``), the CPU's being the thread's queue: a node is queued on the device of the gradients
it receives, and its kernels are launched on that device's stream. Gradients of an input arriving on
several edges are summed on its device. The CUDA streams of the leaves a backward accumulates into are
synchronised before it returns (``GraphTask.leaf_streams``), so ``.grad`` is never read half-written. A
CPU-only program never reaches any of this: one flag (``jitgrad.device.usage.active``) keeps it out.

A failed backward leaves nothing half done: every ``.grad`` it wrote is restored and the graph's saved
tensors are kept (they are freed only after a backward without ``retain_graph`` succeeds).
"""
from __future__ import annotations

import heapq
import itertools
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

import numpy as np

from ..device import CPU, copy_array, current_stream, device, device_of, set_current_stream
from ..device import usage as _devices
from ..tensor import Tensor
from . import anomaly_mode, fast_backward, grad_mode, provided
from .graph import AccumulateGrad, Edge, GraphRoot, Node


class InputBuffer:
    """The gradients arriving at one node, a slot per output of its forward op."""

    __slots__ = ("grads",)

    def __init__(self, size: int) -> None:
        self.grads: list[Tensor | None] = [None] * size

    def add(self, slot: int, grad: Tensor | None) -> None:
        if grad is None:
            return
        old = self.grads[slot]
        self.grads[slot] = grad if old is None else old + grad

    def device(self) -> device:
        """Where the node receiving these gradients runs: the device of its first gradient not on the
        CPU, else the CPU (PyTorch's ``InputBuffer::device``)."""
        for grad in self.grads:
            if grad is not None and type(grad._data) is not np.ndarray:
                return device_of(grad._data)
        return CPU


class ExecInfo:
    """Whether a node must run (``needed``) and which of its input slots feed ``autograd.grad``'s
    results (``captures``: pairs of slot and result index)."""

    __slots__ = ("needed", "captures")

    def __init__(self) -> None:
        self.needed = False
        self.captures: list[tuple[int, int]] = []

    def should_execute(self) -> bool:
        return self.needed or bool(self.captures)


class GraphTask:
    """The state of one backward call."""

    def __init__(self, keep_graph: bool, create_graph: bool, reentrant_depth: int) -> None:
        self.keep_graph = keep_graph
        self.create_graph = create_graph
        self.reentrant_depth = reentrant_depth
        self.dependencies: dict[Node, int] = {}
        self.not_ready: dict[Node, InputBuffer] = {}
        self.exec_info: dict[Node, ExecInfo] = {}
        self.captured: list[Tensor | None] = []
        self.outstanding_tasks = 0
        self.executed: list[Node] = []
        self.grad_journal: dict[int, tuple[Tensor, Tensor | None]] = {}
        self.leaf_streams: list = []  # the CUDA streams that accumulated into a leaf's .grad
        self.streams: dict[device, object] = {}  # the stream each device's nodes launch on
        self.final_callbacks: list = []  # queue_callback's: run once every node has run

    def stream_for(self, place: device) -> object:
        """The stream this task's nodes on ``place`` launch on: the one current when it first ran there."""
        stream = self.streams.get(place)
        if stream is None:
            stream = self.streams[place] = current_stream()
        return stream

    def record_leaf_stream(self, stream: object) -> None:
        if not any(s is stream for s in self.leaf_streams):
            self.leaf_streams.append(stream)

    def synchronize_leaf_streams(self) -> None:
        """Waits for the kernels writing the leaves' ``.grad`` (PyTorch's ``leaf_streams``)."""
        for stream in self.leaf_streams:
            stream.synchronize()

    def run_final_callbacks(self) -> None:
        """The callbacks ``queue_callback`` queued, in order (one may queue another), after the last node."""
        callbacks = self.final_callbacks
        while callbacks:
            callbacks.pop(0)()

    def record_grad(self, tensor: Tensor, in_place: bool = False) -> None:
        """Remembers ``tensor.grad`` as it was before this task first wrote it (for rollback), and its
        values where the write will add into its memory (``AccumulateGrad.in_place``)."""
        if id(tensor) not in self.grad_journal:
            old = tensor._grad
            values = old._data.copy() if in_place and old is not None and type(old._data) is np.ndarray else None
            self.grad_journal[id(tensor)] = (tensor, old, values)

    def roll_back(self) -> None:
        for tensor, old, values in self.grad_journal.values():
            tensor._grad = old
            if values is not None:
                old._data[...] = values

    def compute_dependencies(self, root: Node) -> None:
        dependencies, seen, stack = self.dependencies, {root}, [root]
        while stack:
            for edge in stack.pop()._next_edges:
                if edge is None:
                    continue
                fn = edge[0]
                dependencies[fn] = dependencies.get(fn, 0) + 1
                if fn not in seen:
                    seen.add(fn)
                    stack.append(fn)

    def init_to_execute(self, root: Node, outputs: Sequence[Edge], accumulate_grad: bool) -> None:
        """Marks the nodes on a path from ``root`` to the ``outputs`` edges (PyTorch's ExecInfo)."""
        exec_info = self.exec_info
        for index, edge in enumerate(outputs):
            function, input_nr = edge
            info = exec_info.setdefault(function, ExecInfo())
            if accumulate_grad:
                info.needed = True
            else:
                info.captures.append((input_nr, index))
        self.captured = [None] * len(outputs)
        # Iterative post-order walk: a node is needed when one of its next nodes should execute.
        visited, stack = {root}, [(root, iter(root._next_edges))]
        while stack:
            node, children = stack[-1]
            child = next((e[0] for e in children if e is not None and e[0] not in visited),
                         None)
            if child is not None:
                visited.add(child)
                stack.append((child, iter(child._next_edges)))
                continue
            stack.pop()
            info = exec_info.get(node)
            if info is not None and info.needed:  # a captured node runs on when an input lies past it
                continue
            if any(e is not None and e[0] in exec_info and exec_info[e[0]].should_execute()
                   for e in node._next_edges):
                exec_info.setdefault(node, ExecInfo()).needed = True


class ReadyQueue:
    """Nodes ready to run: deepest reentrant task first, then the highest sequence number."""

    def __init__(self) -> None:
        self._heap: list = []
        self._order = itertools.count()

    def push(self, task: GraphTask, fn: Node, inputs: InputBuffer) -> None:
        task.outstanding_tasks += 1
        heapq.heappush(self._heap, (-task.reentrant_depth, -fn._sequence_nr, next(self._order),
                                    task, fn, inputs))

    def pop(self) -> tuple[GraphTask, Node, InputBuffer]:
        return heapq.heappop(self._heap)[3:]

    def discard(self, task: GraphTask) -> None:
        """Drops the entries of a failed task."""
        self._heap = [entry for entry in self._heap if entry[3] is not task]
        heapq.heapify(self._heap)

    def head(self) -> tuple | None:
        """The order of the node ``pop`` would return next (None when empty)."""
        return self._heap[0][:3] if self._heap else None


class ReadyQueues:
    """A ready queue per device, the CPU's being the thread's own queue. A node is queued on the device
    of the gradients it receives (``InputBuffer.device``). One thread serves every queue: it pops the
    queue whose next node comes first in a single queue's order (deepest task, highest sequence number),
    so a backward runs its nodes in the order the CPU engine does; a node's queue decides the stream its
    kernels are launched on."""

    def __init__(self, cpu_queue: ReadyQueue) -> None:
        self.queues: dict[device, ReadyQueue] = {CPU: cpu_queue}

    def push(self, task: GraphTask, fn: Node, inputs: InputBuffer) -> None:
        place = inputs.device()
        queue = self.queues.get(place)
        if queue is None:
            queue = self.queues[place] = ReadyQueue()
        queue.push(task, fn, inputs)

    def pop(self) -> tuple[GraphTask, Node, InputBuffer]:
        best, first = None, None
        for queue in self.queues.values():
            head = queue.head()
            if head is not None and (first is None or head < first):
                best, first = queue, head
        return best.pop()

    def discard(self, task: GraphTask) -> None:
        for queue in self.queues.values():
            queue.discard(task)


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.ready_queue = ReadyQueue()
        self.device_queues = ReadyQueues(self.ready_queue)  # used once a CUDA tensor exists
        self.depth = 0  # how many backward calls are running on this thread
        self.task: GraphTask | None = None  # the task whose node is running
        self.watcher: Callable | None = None  # a trace's: sees each outermost backward call (``watching``)


def current_graph_task() -> GraphTask | None:
    """The backward call whose node this thread is running (for hooks that span several tensors)."""
    return _thread.task


_thread = _ThreadState()


def queue_callback(callback: Callable[[], None]) -> None:
    """Runs ``callback()`` when the backward call whose node (or hook) is running now has run its last
    node, before that call returns (PyTorch's ``Variable._execution_engine.queue_callback``): a hook
    that starts work, as DistributedDataParallel's all-reduce of a bucket, finishes it here."""
    task = _thread.task
    if task is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    task.final_callbacks.append(callback)


def running_backward() -> bool:
    """Whether this thread is inside a backward call (a tracer marks the ops it sees there)."""
    return _thread.depth > 0


@contextmanager
def watching(watcher: Callable[..., list]) -> Iterator[None]:
    """Inside the block, an outermost backward call on this thread (not one a hook or a custom
    ``Function``'s backward starts) is handed to ``watcher(roots, grads, keep_graph, create_graph,
    accumulate_grad, outputs)``, whose answer it returns: a tracer that checks a second trace against
    a first may bind a backward's results to the first trace's nodes rather than run it
    (``fx/backward_calls.py``), and runs it with ``execute(..., watched=False)`` otherwise."""
    previous, _thread.watcher = _thread.watcher, watcher
    try:
        yield
    finally:
        _thread.watcher = previous


def execute(roots: Sequence[Edge], grads: Sequence[Tensor], keep_graph: bool, create_graph: bool,
            accumulate_grad: bool, outputs: Sequence[Edge] | None = None, watched: bool = True) -> list[Tensor | None]:
    """Runs backward from ``roots`` seeded with ``grads``; returns the gradients captured at
    ``outputs`` (when given without ``accumulate_grad``). ``watched``: a watcher (``watching``) sees
    the call first."""
    if watched and _thread.watcher is not None and not _thread.depth:
        return _thread.watcher(roots, grads, keep_graph, create_graph, accumulate_grad, outputs)
    if accumulate_grad and not outputs and not create_graph and len(roots) == 1 \
            and not anomaly_mode.state.enabled and not _devices.active and _into_leaves(roots[0][0]):
        _execute_one_node(roots[0], validate_outputs(_ROOT, roots, [grads[0]])[0], keep_graph)
        return []
    if not create_graph and fast_backward.usable(_thread.depth, _devices.active):
        captured = fast_backward.run(roots, grads, keep_graph, outputs, accumulate_grad)
        if captured is not None:
            return captured
    task = GraphTask(keep_graph, create_graph, _thread.depth)
    root = GraphRoot(roots, grads)
    task.compute_dependencies(root)
    if outputs:
        task.init_to_execute(root, outputs, accumulate_grad)
    queue = _thread.device_queues if _devices.active else _thread.ready_queue
    queue.push(task, root, InputBuffer(0))
    previous_mode, previous_task = grad_mode.state.grad_enabled, _thread.task
    grad_mode.state.grad_enabled = create_graph
    _thread.depth += 1
    try:
        while task.outstanding_tasks:
            owner, fn, inputs = queue.pop()
            _thread.task = owner
            if _devices.active:
                _evaluate_on_device(owner, fn, inputs, queue)
            else:
                evaluate_function(owner, fn, inputs.grads, queue)
            owner.outstanding_tasks -= 1
        task.synchronize_leaf_streams()
        if task.final_callbacks:
            _thread.task = task
            task.run_final_callbacks()
    except BaseException:
        queue.discard(task)
        task.roll_back()
        raise
    finally:
        _thread.depth -= 1
        _thread.task = previous_task
        grad_mode.state.grad_enabled = previous_mode
    if not keep_graph:
        for fn in task.executed:
            fn.release_variables()
    return task.captured


def _evaluate_on_device(task: GraphTask, fn: Node, inputs: InputBuffer, queue: ReadyQueues) -> None:
    """``evaluate_function`` for a node of the queue of ``inputs``' device: a CUDA node launches its
    kernels on the task's stream for the device, and an AccumulateGrad records that stream as a leaf
    stream, synchronised before backward returns."""
    place = inputs.device()
    if place.type == "cpu":
        evaluate_function(task, fn, inputs.grads, queue)
        return
    stream = task.stream_for(place)
    if type(fn) is AccumulateGrad:
        task.record_leaf_stream(stream)
    previous = set_current_stream(stream)
    try:
        evaluate_function(task, fn, inputs.grads, queue)
    finally:
        set_current_stream(previous)


def _into_leaves(fn: Node) -> bool:
    """Whether a backward from ``fn`` is one node, then the leaves' AccumulateGrads, with no hook on
    the way and each leaf reached once: ``loss.backward()`` on a compiled loss, ``x.sum().backward()``."""
    if type(fn) is AccumulateGrad or fn.hooked():
        return False
    leaves = []
    for edge in fn._next_edges:
        if edge is None:
            continue
        leaf = edge[0]
        if type(leaf) is not AccumulateGrad or leaf.hooked():
            return False
        leaves.append(leaf)
    return len(leaves) < 2 or len(set(leaves)) == len(leaves)


_ROOT = GraphRoot((), ())  # names the start of a backward in validate_outputs' messages
_UNIT_SEEDS: dict[tuple, Tensor] = {}


def _unit_seed(shape: tuple[int, ...], dtype: np.dtype) -> Tensor:
    """The implicit gradient of a one-element output, shared and read-only: made once per shape and
    dtype, since a small loop's ``loss.backward()`` would otherwise spend a numpy call making it. The
    one-node path hands it only to a node without hooks, which reads it."""
    seed = _UNIT_SEEDS.get((shape, dtype))
    if seed is None:
        array = np.ones(shape, dtype)
        array.flags.writeable = False
        seed = _UNIT_SEEDS[shape, dtype] = Tensor._make(array)
    return seed


def backward_into_leaves(output: Tensor, keep_graph: bool) -> bool:
    """``output.backward()`` for a one-element output whose graph ``_into_leaves`` accepts, done by
    ``_execute_one_node``; False (nothing done) for any other graph, which takes the general path."""
    fn = output._grad_fn
    if fn is None or output._view is not None or output._data.size != 1 or anomaly_mode.state.enabled \
            or _devices.active:
        return False
    if not _into_leaves(fn):
        return False
    _execute_one_node((fn, output._output_nr), _unit_seed(output._data.shape, output._data.dtype), keep_graph)
    return True


def _execute_one_node(root: Edge, seed: Tensor, keep_graph: bool) -> None:
    """``execute`` for a graph ``_into_leaves`` accepts, given its checked seed: what the general loop
    does for it (the same node calls, checks and accumulation), without the graph task, dependency
    counts and ready queue a single node does not need. The node's gradients are all computed before
    any ``.grad`` changes, so a failure leaves them as they were."""
    fn, slot = root
    if slot == 0 and len(fn._input_metadata) < 2:
        grads: list = [seed]
    else:
        grads = [None] * max(len(fn._input_metadata), slot + 1)
        grads[slot] = seed
    outputs = fn.apply_unobserved(grads)
    if outputs is not None:
        _into_accumulators(fn, outputs, keep_graph)
        return
    previous_mode, previous_task = grad_mode.state.grad_enabled, _thread.task
    grad_mode.state.grad_enabled = False
    _thread.depth += 1
    _thread.task = None
    try:
        outputs = fn.apply(grads, None)
        if not fn.gradients_conform():
            outputs = validate_outputs(fn, fn._next_edges, outputs)
        _into_accumulators(fn, outputs, keep_graph)
    finally:
        _thread.depth -= 1
        _thread.task = previous_task
        grad_mode.state.grad_enabled = previous_mode


def _into_accumulators(fn: Node, outputs: list, keep_graph: bool) -> None:
    """The one node's gradients handed to the leaves' AccumulateGrads, its variables released first
    (as the general loop does) unless the graph is kept."""
    if not keep_graph:
        fn.release_variables()
    owned = not keep_graph and fn.hands_over_gradients()
    for edge, leaf_grad in zip(fn._next_edges, outputs):
        if edge is not None and leaf_grad is not None:
            edge[0].accumulate(leaf_grad, owned and leaf_grad._data.flags.writeable)


def _call_tensor_pre_hooks(task: GraphTask, fn: Node, grads: list) -> list:
    # Outputs in the order their first hook was registered, as PyTorch keeps one entry per tensor (before
    # 2026-11-28, in output order: split's second output's hooks ran second even when registered first).
    for slot, hooks in fn._tensor_hooks_by_output():
        if hooks and grads[slot] is not None:
            for hook in list(hooks.values()):
                result = hook(grads[slot])
                if result is not None:
                    grads[slot] = check_hook_result(hook, grads[slot], result)
    if fn._retains_grad:
        for slot, ref in fn._retains_grad.items():
            tensor, grad = ref(), grads[slot]
            if tensor is None or grad is None:
                continue
            task.record_grad(tensor)
            if tensor._grad is not None:
                tensor._grad = tensor._grad + grad
            else:  # with create_graph the retained gradient stays differentiable (a recorded copy)
                tensor._grad = grad.clone() if task.create_graph else _copied(grad)
    return grads


def _copied(grad: Tensor) -> Tensor:
    """A copy of ``grad`` on its device, outside the graph."""
    return Tensor._make(copy_array(grad._data))


def check_hook_result(hook: object, grad: Tensor, result: object) -> Tensor:
    """A hook may replace a gradient, but only with a tensor of the same shape and dtype."""
    name = getattr(hook, "__name__", type(hook).__name__)
    if not isinstance(result, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}' (hook '{name}': a "
                        "tensor hook returns a Tensor or None)")
    if result._data.shape != grad._data.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value: the gradient has shape "
                           f"{tuple(grad._data.shape)} but the hook returned {tuple(result._data.shape)}")
    if result._data.dtype != grad._data.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {grad.dtype!r} got "
                           f"{result.dtype!r})")
    return result


def check_node_hook_result(hook: object, grads: Sequence, result: object) -> list:
    """What a node's pre- or post-hook returned, checked as PyTorch checks it: a tuple of one entry per
    gradient, each None (that gradient dropped) or a tensor of the same shape and dtype in place of one
    that was not None. Before 2026-11-28 a shorter tuple left the missing gradients None and a number
    went into the formulas, silently."""
    if not isinstance(result, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(result).__name__}'")
    if len(result) != len(grads):
        raise RuntimeError(f"hook '{getattr(hook, '__name__', type(hook).__name__)}' has returned an "
                           f"incorrect number of values (got {len(result)}, but expected {len(grads)})")
    for grad, new in zip(grads, result):
        if new is None:
            continue
        if grad is None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
        if not isinstance(new, Tensor):
            raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
        check_hook_result(hook, grad, new)
    return list(result)


def evaluate_function(task: GraphTask, fn: Node, grads: list, queue: ReadyQueue) -> None:
    exec_info = task.exec_info
    info = exec_info.get(fn) if exec_info else None
    if info is not None and info.needed:
        # A captured node that also runs (an input lies past it) is captured before its tensor hooks,
        # which run with the node, as in PyTorch's engine; one that only captures, after them.
        for slot, index in info.captures:
            task.captured[index] = grads[slot]
    if fn._tensor_pre_hooks is not None or fn._retains_grad is not None or type(fn) is AccumulateGrad:
        grads = _call_tensor_pre_hooks(task, fn, grads)
    if exec_info:
        if info is None:
            return
        if not info.needed:
            for slot, index in info.captures:
                task.captured[index] = grads[slot]
            return
    if type(fn) is AccumulateGrad:
        task.record_grad(fn.variable, fn.in_place)
    if anomaly_mode.state.enabled:
        try:
            outputs = call_function(task, fn, grads)
            # a lone root's seed is checked where it arrives, as PyTorch, which has no GraphRoot for it
            if anomaly_mode.state.check_nan and (type(fn) is not GraphRoot or len(fn._next_edges) > 1):
                anomaly_mode.check_nan(fn, outputs)
        except Exception as error:
            anomaly_mode.report_error(fn, error)
            raise
    else:
        outputs = call_function(task, fn, grads)
    if not task.keep_graph:
        task.executed.append(fn)

    dependencies, not_ready = task.dependencies, task.not_ready
    for edge, grad in zip(fn._next_edges, outputs):
        if edge is None:
            continue
        next_fn = edge[0]
        remaining = dependencies[next_fn] - 1
        dependencies[next_fn] = remaining
        buffer = not_ready.get(next_fn)
        if buffer is None:
            if exec_info and (next_fn not in exec_info or not exec_info[next_fn].should_execute()):
                continue
            buffer = InputBuffer(next_fn.num_inputs())
            not_ready[next_fn] = buffer
        buffer.add(edge[1], grad)
        if remaining == 0:
            del not_ready[next_fn]
            queue.push(task, next_fn, buffer)


def call_function(task: GraphTask, fn: Node, grads: list) -> list:
    if fn._pre_hooks:
        for hook in list(fn._pre_hooks.values()):
            result = hook(tuple(grads))
            if result is not None:
                grads = check_node_hook_result(hook, grads, result)
    edges = fn._next_edges
    exec_info = task.exec_info
    needed = None
    if exec_info:
        needed = [e is not None and e[0] in exec_info and exec_info[e[0]].should_execute()
                  for e in edges]
    outputs = validate_outputs(fn, edges, fn.apply(grads, needed))
    if fn._post_hooks:
        for hook in list(fn._post_hooks.values()):
            result = hook(tuple(outputs), tuple(grads))
            if result is not None:
                outputs = validate_outputs(fn, edges, check_node_hook_result(hook, outputs, result))
    return outputs


def validate_outputs(fn: Node, edges: Sequence[Edge | None], grads: list) -> list:
    """Checks each gradient against the slot it goes to; sums broadcast gradients back to the slot's
    shape (the one place where unbroadcasting happens) and casts to the slot's dtype."""
    if len(grads) != len(edges):
        raise RuntimeError(f"Function {fn.name()} returned an invalid number of gradients - expected "
                           f"{len(edges)}, but got {len(grads)}")
    for i, edge in enumerate(edges):
        grad = grads[i]
        if edge is None or grad is None:
            continue
        if not isinstance(grad, Tensor):
            raise TypeError(f"Function {fn.name()} returned a {type(grad).__name__} as gradient {i}; "
                            "gradients must be Tensors or None")
        shape, dtype, place = edge[0]._input_metadata[edge[1]]
        if _devices.active:
            grad = _on_device(fn, i, grad, place)
        if grad._data.shape != shape:
            if not fast_backward.expandable(shape, grad._data.shape):
                raise RuntimeError(f"Function {fn.name()} returned an invalid gradient at index {i} - got "
                                   f"{list(grad._data.shape)} but expected shape compatible with "
                                   f"{list(shape)}")
            grad = provided.sum_to(grad, shape)
        if grad._data.dtype is not dtype and grad._data.dtype != dtype:
            grad = grad.to(dtype)
        grads[i] = grad
    return grads


def _on_device(fn: Node, index: int, grad: Tensor, place: device) -> Tensor:
    """``grad`` on the device of its slot: a 0-d gradient is moved there, any other on another device is
    an error, as in PyTorch: gradients never cross devices silently."""
    grad_device = CPU if type(grad._data) is np.ndarray else device_of(grad._data)
    if grad_device == place:
        return grad
    if grad._data.ndim == 0:
        return grad.to(place)
    raise RuntimeError(f"Function {fn.name()} returned an invalid gradient at index {index} - expected device "
                       f"{place} but got {grad_device}")
