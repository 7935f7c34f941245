"""Collectives on tensors, as ``torch.distributed`` spells them: ``all_reduce``, ``broadcast``,
``all_gather``, ``barrier``, each blocking or, with ``async_op=True``, returning a ``Work`` to wait on.

Every collective is MPI's non-blocking form (``Iallreduce``, ``Ibcast``...) on a host buffer: a CPU
tensor's own contiguous array (no copy), a copy for a non-contiguous one, and for a CUDA tensor one
copy to the host and one back (until a CUDA-aware MPI can read device memory). A blocking call is
the non-blocking one waited on, so that every wait has the group's deadline. The tensors written
are changed in place and their version counters bumped, as any in-place op's.
"""
from __future__ import annotations

import datetime
from typing import Any, Callable, Sequence

import numpy as np

from ..autograd.versions import increment_version
from ..device import copy_into, to_device, to_host
from ..ops.host_reads import TraceRefused
from ..ops.registry import observed
from ..tensor import Tensor
from .process_group import ProcessGroup, ReduceOp, check_group

_MPI_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD", ReduceOp.MIN: "MIN",
            ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND", ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}


class Work:
    """An MPI request in flight; ``wait()`` ends it (within the group's timeout) and then writes its
    result into the tensors (``finish``), once."""

    __slots__ = ("group", "request", "what", "finish", "done")

    def __init__(self, group: ProcessGroup, request: Any, what: str,
                 finish: Callable[[], None] | None = None) -> None:
        self.group, self.request, self.what, self.finish, self.done = group, request, what, finish, False

    def is_completed(self) -> bool:
        """Whether the collective has ended (asking also lets MPI move it on)."""
        if not self.done and self.request.Test():
            self._complete()
        return self.done

    def wait(self, timeout: datetime.timedelta | None = None) -> bool:
        """Ends the collective; ``timeout`` (a ``timedelta``) bounds this wait instead of the group's."""
        if not self.done:
            self.group.wait(self.request, self.what, timeout)
            self._complete()
        return True

    def _complete(self) -> None:
        self.done = True
        if self.finish is not None:
            self.finish()


def _check_tensor(tensor: Any, op: str, argument: str = "tensor") -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{op}: {argument} must be a jitgrad.Tensor, not {type(tensor).__name__}")
    check_not_traced(op)
    return tensor


def check_not_traced(what: str) -> None:
    """Refuses communication while a tracer (``jitgrad.compile``) records the thread's ops: it would
    happen once, at trace time, and never in the compiled calls (``jitgrad.compile`` then runs the call
    eagerly, with a warning that names it)."""
    if observed():
        raise TraceRefused(f"jitgrad.distributed: {what} cannot run inside a function jitgrad.compile traces: a "
                           "compiled call would not communicate. Call it outside the compiled function")


def host_buffer(tensor: Tensor, op: str, writes: bool) -> tuple[np.ndarray, Callable[[], None] | None]:
    """A contiguous host array holding ``tensor``'s values for MPI, and (when the values MPI writes
    there must be copied back into the tensor) the function that copies them back."""
    data = tensor._data
    if type(data) is not np.ndarray:  # a CUDA tensor: through the host
        host = to_host(data)
        return host, (lambda: copy_into(data, to_device(host))) if writes else None
    if writes and not data.flags.writeable:
        raise RuntimeError(f"{op}: the tensor's memory is read-only ({tensor.dtype!r}{list(data.shape)}); "
                           "pass a tensor that owns writable memory (e.g. tensor.clone())")
    if data.flags.c_contiguous:
        return data, None
    host = np.array(data, order="C")

    def write_back() -> None:
        data[...] = host
    return host, write_back if writes else None


def _finisher(*steps: Callable[[], None] | None) -> Callable[[], None]:
    def finish() -> None:
        for step in steps:
            if step is not None:
                step()
    return finish


def _result(work: Work, async_op: bool) -> Work | None:
    if async_op:
        return work
    work.wait()
    return None


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: Any = None, async_op: bool = False) -> Work | None:
    """Combines ``tensor`` across the ranks with ``op`` and leaves the result in ``tensor`` on every rank."""
    tensor = _check_tensor(tensor, "all_reduce")
    if not isinstance(op, ReduceOp):
        raise TypeError(f"all_reduce: op must be a jitgrad.distributed.ReduceOp, not {op!r}")
    if op is ReduceOp.AVG and not tensor.is_floating_point():
        raise RuntimeError(f"all_reduce: ReduceOp.AVG needs a floating tensor, got {tensor.dtype!r}")
    pg = check_group(group)
    buffer, write_back = host_buffer(tensor, "all_reduce", writes=True)
    request = pg.comm.Iallreduce(pg.mpi.IN_PLACE, buffer, op=getattr(pg.mpi, _MPI_OPS[op]))
    average = (lambda: np.divide(buffer, pg.size(), out=buffer)) if op is ReduceOp.AVG else None
    finish = _finisher(average, write_back, lambda: increment_version(tensor))
    return _result(Work(pg, request, "all_reduce", finish), async_op)


def broadcast(tensor: Tensor, src: int, group: Any = None, async_op: bool = False) -> Work | None:
    """Copies rank ``src``'s ``tensor`` into ``tensor`` on every other rank."""
    tensor = _check_tensor(tensor, "broadcast")
    pg = check_group(group)
    if not 0 <= src < pg.size():
        raise ValueError(f"broadcast: src={src} is not a rank of the group (0 to {pg.size() - 1})")
    receives = pg.rank() != src
    buffer, write_back = host_buffer(tensor, "broadcast", writes=receives)
    request = pg.comm.Ibcast(buffer, root=src)
    finish = _finisher(write_back, lambda: increment_version(tensor)) if receives else None
    return _result(Work(pg, request, "broadcast", finish), async_op)


def all_gather(tensor_list: Sequence[Tensor], tensor: Tensor, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Fills ``tensor_list[r]`` with rank ``r``'s ``tensor``, on every rank."""
    tensor = _check_tensor(tensor, "all_gather")
    pg = check_group(group)
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors; it needs one per rank "
                         f"({pg.size()})")
    for i, out in enumerate(tensor_list):
        _check_tensor(out, "all_gather", f"tensor_list[{i}]")
        if out._data.shape != tensor._data.shape or out._data.dtype != tensor._data.dtype:
            raise ValueError(f"all_gather: tensor_list[{i}] is {out.dtype!r}{list(out.shape)} but the tensor is "
                             f"{tensor.dtype!r}{list(tensor.shape)}; each must match it")
    send, _ = host_buffer(tensor, "all_gather", writes=False)
    gathered = np.empty((pg.size(), *send.shape), send.dtype)
    request = pg.comm.Iallgather(send, gathered)

    def scatter_into_list() -> None:
        for out, value in zip(tensor_list, gathered):
            data = out._data
            if type(data) is np.ndarray:
                data[...] = value
            else:
                copy_into(data, to_device(value))
            increment_version(out)
    return _result(Work(pg, request, "all_gather", scatter_into_list), async_op)


def barrier(group: Any = None, async_op: bool = False) -> Work | None:
    """Returns once every rank has reached its ``barrier``."""
    pg = check_group(group)
    check_not_traced("barrier")
    return _result(Work(pg, pg.comm.Ibarrier(), "barrier"), async_op)


__all__ = ["Work", "all_gather", "all_reduce", "barrier", "broadcast", "check_not_traced", "host_buffer"]
