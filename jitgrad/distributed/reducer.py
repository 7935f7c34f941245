"""The reducer: DistributedDataParallel's gradient buckets and the all-reduces that average them.

It lives here, with the collectives, rather than beside the wrapper in ``nn.parallel``: its state
changes at every backward, and ``jitgrad.compile`` guards what it finds in the user's objects
(``jitgrad.nn``'s included) but does not enter the library's own, so a loss compiled over
``ddp.module`` does not recompile because the reducer moved on.

Parameters are grouped into buckets in reverse registration order (the order backward usually
produces their gradients), at most ``bucket_cap_mb`` each, the first at most 1 MiB so that
communication starts early, as PyTorch groups them. A post-accumulate-grad hook on every parameter
tells the reducer when a gradient is final for this backward; the bucket whose last gradient that
was is copied into one flat host array and its non-blocking all-reduce (``Iallreduce``) starts while
backward goes on. Buckets start in order — every rank must issue MPI's collectives in the same
order — so a bucket whose gradients are ready waits for the ones before it.

The first hook of a backward queues a callback with the engine (``queue_callback``), which runs once
the last node has: it waits for every bucket, divides by the number of ranks and writes the
averages into ``.grad``, so that ``backward()`` returns with the gradients reduced.

Each backward's timeline is kept in ``events`` (``ReductionEvent``s with ``time.perf_counter()``
times): when each gradient was ready, when each bucket's all-reduce started, when backward's last
node had run, and when the averages were written.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import numpy as np

from ..autograd.engine import current_graph_task, queue_callback
from ..autograd.graph import AccumulateGrad
from ..device import copy_into, empty_device_array, to_device, to_host
from ..hooks import RemovableHandle
from ..tensor import Tensor
from .collectives import Work, all_reduce
from .process_group import ProcessGroup, ReduceOp

FIRST_BUCKET_BYTES = 1024 * 1024


class ReductionEvent(NamedTuple):
    """One moment of a backward's reduction: ``kind`` is ``"ready"`` (parameter ``index``'s gradient
    was accumulated), ``"all_reduce"`` (bucket ``index``'s all-reduce started), ``"backward_end"``
    (the engine had run its last node) or ``"reduced"`` (bucket ``index``'s average was written)."""
    kind: str
    index: int
    time: float


class Bucket:
    """Parameters whose gradients travel in one all-reduce, and where each sits in the flat array."""

    def __init__(self, indices: list[int], params: list[Tensor]) -> None:
        self.indices = indices
        self.params = params
        sizes = [p._data.size for p in params]
        self.offsets = np.cumsum([0, *sizes]).tolist()
        self.dtype = params[0]._data.dtype
        self.on_host = type(params[0]._data) is np.ndarray
        self.flat = np.empty(0, self.dtype)
        self.pending = len(params)
        self.work: Work | None = None

    def pieces(self) -> Iterator[tuple[int, Tensor, np.ndarray]]:
        """Each parameter's index, the parameter, and its place in the flat array (shaped as it)."""
        for index, param, start, stop in zip(self.indices, self.params, self.offsets, self.offsets[1:]):
            yield index, param, self.flat[start:stop].reshape(param._data.shape)

    def fill(self, has_grad: np.ndarray) -> None:
        """Copies the parameters' gradients into a new flat array (a CPU bucket one by one, a CUDA
        bucket gathered on the device and copied to the host once) and notes in ``has_grad`` which had
        one. A parameter without a gradient (unused on this rank) contributes zeros; one unused in this
        backward but with a gradient from earlier ones (accumulated under ``no_sync``) contributes it.
        The array is new at every backward because the averaged ``.grad``s become views of it."""
        for param in self.params:
            data = param._data
            if data.dtype != self.dtype or (type(data) is np.ndarray) != self.on_host:
                raise RuntimeError(
                    f"DistributedDataParallel: a parameter is now {param.dtype!r} on {param.device}, but its bucket was "
                    f"made for {self.dtype} {'CPU' if self.on_host else 'CUDA'} parameters: cast or move the module "
                    "(.double(), .to('cuda')) before wrapping it, as with PyTorch's")
        self.flat = np.empty(self.offsets[-1], self.dtype)
        if self.on_host:
            for index, param, place in self.pieces():
                grad = param._grad
                has_grad[index] = grad is not None
                place[...] = 0 if grad is None else grad._data
            return
        device_flat = empty_device_array((self.offsets[-1],), self.dtype)
        for index, param, start, stop in zip(self.indices, self.params, self.offsets, self.offsets[1:]):
            grad = param._grad
            has_grad[index] = grad is not None
            piece = grad._data if grad is not None else to_device(np.zeros(param._data.shape, self.dtype))
            copy_into(device_flat[start:stop].reshape(param._data.shape), piece)
        self.flat[...] = to_host(device_flat)

    def write_back(self, world_size: int, has_grad: np.ndarray | None) -> None:
        """The flat sum divided by ``world_size`` becomes each parameter's ``.grad``: on the CPU a view
        of the flat array (no copy), on a CUDA device written into ``.grad`` with one copy of the
        bucket to the device. A parameter with no gradient on any rank (``has_grad``, summed over the
        ranks) keeps ``.grad`` None."""
        np.divide(self.flat, world_size, out=self.flat)
        device_flat = None if self.on_host else to_device(self.flat)
        for index, param, start, stop in zip(self.indices, self.params, self.offsets, self.offsets[1:]):
            if has_grad is not None and not has_grad[index]:
                continue
            shape = param._data.shape
            if self.on_host:
                param.grad = Tensor._make(self.flat[start:stop].reshape(shape))
                continue
            if param._grad is None:
                param.grad = Tensor._make(to_device(np.zeros(shape, self.dtype)))
            copy_into(param._grad._data, device_flat[start:stop].reshape(shape))


def assign_buckets(params: Sequence[Tensor], cap_bytes: int, first_cap_bytes: int) -> list[list[int]]:
    """Indices of ``params`` grouped into buckets: reverse order, one dtype and device per bucket, a
    bucket closed once it holds ``cap_bytes`` (``first_cap_bytes`` for the first)."""
    open_buckets: dict[tuple, list[int]] = {}
    sizes: dict[tuple, int] = {}
    closed: list[list[int]] = []
    for index in reversed(range(len(params))):
        data = params[index]._data
        key = (data.dtype, str(type(data)))
        bucket = open_buckets.setdefault(key, [])
        bucket.append(index)
        sizes[key] = sizes.get(key, 0) + data.nbytes
        if sizes[key] >= (first_cap_bytes if not closed else cap_bytes):
            closed.append(open_buckets.pop(key))
            sizes[key] = 0
    closed += [bucket for bucket in open_buckets.values() if bucket]
    return sorted(closed, key=lambda bucket: -bucket[0])


class Reducer:
    """Drives the buckets of one DistributedDataParallel from its parameters' hooks."""

    def __init__(self, named_params: list[tuple[str, Tensor]], group: ProcessGroup, cap_bytes: int,
                 first_cap_bytes: int, find_unused_parameters: bool, sync_enabled: Callable[[], bool]) -> None:
        self.names = [name for name, _ in named_params]
        self.params = [param for _, param in named_params]
        self.group = group
        self.sync_enabled = sync_enabled
        self.find_unused_parameters = find_unused_parameters
        self.buckets = [Bucket(indices, [self.params[i] for i in indices])
                        for indices in assign_buckets(self.params, cap_bytes, first_cap_bytes)]
        self.bucket_of = {index: b for b, bucket in enumerate(self.buckets) for index in bucket.indices}
        self.events: list[ReductionEvent] = []
        # Whether a forward of the wrapper outside no_sync() ran since the last reduced backward. A
        # backward is reduced when one did or when it runs outside no_sync(): a compiled loss replays
        # the module's forward without calling the wrapper, and a stale answer must never leave
        # gradients unreduced (reducing once more is harmless: averaged gradients are equal on every
        # rank, so the next average keeps them).
        self.forward_synced = False
        self.unused: list[int] = []  # found by that forward (find_unused_parameters)
        self._reset()
        self.handles: list[RemovableHandle] = [
            param.register_post_accumulate_grad_hook(self._hook_for(index)) for index, param in enumerate(self.params)]

    def _reset(self) -> None:
        self.ready = np.zeros(len(self.params), bool)
        self.has_grad = np.zeros(len(self.params), np.int32)
        self.next_bucket = 0
        self.started = False
        self.task: Any = None  # the engine's task of the backward being reduced
        for bucket in self.buckets:
            bucket.pending = len(bucket.params)
            bucket.work = None

    def _hook_for(self, index: int) -> Any:
        def gradient_ready(param: Tensor) -> None:
            if self.started and current_graph_task() is not self.task:
                self._reset()  # the backward that started failed before its end: its buckets are dropped
            if not (self.started or self.forward_synced or self.sync_enabled()):
                return  # no_sync(): the gradient stays local
            if not self.started:
                self._begin_backward()
            if self.ready[index]:
                self._reset()
                raise RuntimeError(
                    f"DistributedDataParallel: parameter {self.names[index]} received a gradient, but the forward's "
                    "outputs did not reach it, so find_unused_parameters=True had reduced it as unused: its "
                    "gradient would be lost. The wrapper looks for the parameters through the tensors its forward "
                    "returns (in tuples, lists and dicts); return the tensors the loss is computed from")
            self.mark_ready(index)
        return gradient_ready

    def prepare_for_backward(self, outputs: Any, sync: bool) -> None:
        """Called by each forward of the wrapper: whether its backward is reduced, and with
        ``find_unused_parameters`` the parameters its outputs' graph does not reach, marked ready
        when backward begins."""
        self.forward_synced = sync
        self.unused = []
        tensors = _tensors_in(outputs) if sync and self.find_unused_parameters else []
        if tensors:  # none found: the end of backward marks what got no gradient
            reached = _leaves_reached(tensors)
            self.unused = [i for i, param in enumerate(self.params) if id(param) not in reached]

    def mark_ready(self, index: int) -> None:
        self.ready[index] = True
        self.events.append(ReductionEvent("ready", index, time.perf_counter()))
        bucket = self.bucket_of[index]
        self.buckets[bucket].pending -= 1
        self._start_ready_buckets()

    def _begin_backward(self) -> None:
        self.started = True
        self.task = current_graph_task()
        self.events = []
        queue_callback(self.finalize)
        for index in self.unused:
            self.mark_ready(index)

    def _start_ready_buckets(self) -> None:
        """Starts, in order, every bucket whose gradients are all ready; asks the ones in flight to
        progress (MPI moves a non-blocking collective on when it is called)."""
        for bucket in self.buckets[:self.next_bucket]:
            bucket.work.is_completed()
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            bucket = self.buckets[self.next_bucket]
            bucket.fill(self.has_grad)
            bucket.work = all_reduce(Tensor._make(bucket.flat), ReduceOp.SUM, async_op=True)
            self.events.append(ReductionEvent("all_reduce", self.next_bucket, time.perf_counter()))
            self.next_bucket += 1

    def finalize(self) -> None:
        """The engine's callback after the backward's last node: every bucket reduced and averaged into
        ``.grad`` before ``backward()`` returns."""
        self.events.append(ReductionEvent("backward_end", -1, time.perf_counter()))
        try:
            missing = [i for i in range(len(self.params)) if not self.ready[i]]
            if missing and not self.find_unused_parameters:
                names = ", ".join(self.names[i] for i in missing)
                raise RuntimeError(
                    "DistributedDataParallel: backward produced no gradient for parameters of the model, so their "
                    "buckets were never reduced. This error indicates that your module has parameters that were "
                    "not used in producing loss. You can enable unused parameter detection by passing the keyword "
                    "argument `find_unused_parameters=True` to `jitgrad.nn.parallel.DistributedDataParallel`, and "
                    "by making sure all `forward` function outputs participate in calculating loss. Parameters "
                    f"that did not receive grad: {names}")
            for index in missing:
                self.mark_ready(index)
            has_grad_work = None
            if self.find_unused_parameters:  # which parameters have a gradient on some rank
                has_grad_work = all_reduce(Tensor._make(self.has_grad), ReduceOp.SUM, async_op=True)
            for bucket in self.buckets:
                bucket.work.wait()
            if has_grad_work is not None:
                has_grad_work.wait()
            has_grad = self.has_grad if self.find_unused_parameters else None
            for b, bucket in enumerate(self.buckets):
                bucket.write_back(self.group.size(), has_grad)
                self.events.append(ReductionEvent("reduced", b, time.perf_counter()))
        finally:
            self.forward_synced = False
            self.unused = []
            self._reset()


def _leaves_reached(tensors: list[Tensor]) -> set[int]:
    """The ids of the leaf tensors whose AccumulateGrad the graph of ``tensors`` reaches."""
    stack = [t.grad_fn for t in tensors if t.grad_fn is not None]
    seen: set[int] = set()
    reached = {id(t) for t in tensors if t.grad_fn is None and t.requires_grad}
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            reached.add(id(node.variable))
            continue
        stack.extend(next_node for next_node, _ in node.next_functions if next_node is not None)
    return reached


def _tensors_in(value: Any) -> list[Tensor]:
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors_in(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors_in(item)]
    return []


__all__ = ["FIRST_BUCKET_BYTES", "Bucket", "ReductionEvent", "Reducer", "assign_buckets"]
