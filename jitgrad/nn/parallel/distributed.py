"""``DistributedDataParallel``: one model per rank, each on its shard of the batch, gradients averaged
over the ranks while backward runs (PyTorch's ``torch.nn.parallel.DistributedDataParallel``).

At construction every rank checks that the others hold a model of the same shapes and takes rank
0's parameters and buffers, so all start equal; afterwards the same averaged gradients keep them
equal. A forward and backward inside ``no_sync()`` only accumulate locally; the next synchronised
backward averages the sum. ``jitgrad/distributed/reducer.py`` holds the buckets and
their all-reduces.
"""
from __future__ import annotations

import contextlib
import zlib
from typing import Any, Iterator, Sequence

import numpy as np

from ...autograd import is_grad_enabled, no_grad
from ...distributed import all_gather, broadcast
from ...distributed.collectives import check_not_traced
from ...distributed.process_group import check_group
from ...tensor import Tensor
from ..modules.module import Module
from ...distributed.reducer import FIRST_BUCKET_BYTES, ReductionEvent, Reducer


class DistributedDataParallel(Module):
    """Wraps ``module`` (``self.module``) so that ``backward()`` on a loss computed through it
    returns with every parameter's ``.grad`` averaged over the ranks.

    ``bucket_cap_mb``: the most a bucket of gradients holds (one all-reduce each); smaller buckets
    start communicating earlier, larger ones pay MPI's per-message latency fewer times.
    ``find_unused_parameters``: parameters the forward's outputs do not reach are reduced anyway
    (with zeros from the ranks that did not use them); without it such a parameter is an error at
    the end of backward. ``broadcast_buffers``: rank 0's buffers (BatchNorm's running statistics)
    are copied to every rank before each forward. ``device_ids``/``output_device`` are accepted for
    PyTorch's spelling: a jitgrad process drives its one device, the one the module is on."""

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None, output_device: Any = None,
                 dim: int = 0, broadcast_buffers: bool = True, process_group: Any = None,
                 bucket_cap_mb: float | None = 25, find_unused_parameters: bool = False) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel wraps a jitgrad.nn.Module, not {type(module).__name__}")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element: one process drives one "
                             "device")
        if dim != 0:
            raise ValueError(f"dim={dim}: DistributedDataParallel splits nothing itself; each rank passes its "
                             "own batch")
        group = check_group(process_group)
        named = [(name, p) for name, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.world_size = group.size()
        cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        if cap <= 0:
            raise ValueError(f"bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self._check_same_model(named)
        self._sync_module_states()
        self.reducer = Reducer(named, group, cap, min(cap, FIRST_BUCKET_BYTES), find_unused_parameters,
                               lambda: self.require_backward_grad_sync)

    def _check_same_model(self, named: list[tuple[str, Tensor]]) -> None:
        """Every rank must wrap a model of the same parameters: compared through a digest of their
        shapes and dtypes, gathered from every rank."""
        text = ";".join(f"{tuple(p.shape)}{p.dtype}" for _, p in named)
        digest = Tensor._make(np.array([len(named), sum(p.numel() for _, p in named), zlib.crc32(text.encode())],
                                       np.int64))
        gathered = [Tensor._make(np.zeros(3, np.int64)) for _ in range(self.world_size)]
        all_gather(gathered, digest)
        differing = [rank for rank, other in enumerate(gathered) if not np.array_equal(other._data, digest._data)]
        if differing:
            raise RuntimeError(f"DistributedDataParallel: ranks {differing} hold a model whose parameters differ in "
                               f"number, shape or dtype from this rank's ({len(named)} parameters, "
                               f"{int(digest._data[1])} elements): every rank must build the same model")

    def _sync_module_states(self) -> None:
        """Rank 0's parameters and buffers, copied into every rank's."""
        if self.world_size == 1:
            return
        with no_grad():
            for param in self.module.parameters():
                broadcast(param, 0)
            self._sync_buffers()

    def _sync_buffers(self) -> None:
        for buffer in self.module.buffers():
            broadcast(buffer, 0)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self.broadcast_buffers and self.world_size > 1 and any(True for _ in self.module.buffers()):
            check_not_traced("DistributedDataParallel's forward, which broadcasts rank 0's buffers (construct it "
                             "with broadcast_buffers=False, or compile a function of ddp.module),")
            self._sync_buffers()
        output = self.module(*inputs, **kwargs)
        if is_grad_enabled():
            self.reducer.prepare_for_backward(output, self.require_backward_grad_sync)
        return output

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """A forward and its backward both inside only accumulate into ``.grad`` (gradient
        accumulation); the first synchronised backward after them reduces the sum. Unlike PyTorch, a
        backward run outside ``no_sync()`` is reduced even if its forward ran inside (a compiled loss
        calls no wrapper's forward, so the state at backward decides too); the result is the same."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    @property
    def reduction_events(self) -> list[ReductionEvent]:
        """The last synchronised backward's timeline (see ``reducer.ReductionEvent``)."""
        return list(self.reducer.events)

    @property
    def bucket_indices(self) -> list[list[int]]:
        """The parameters (indices into ``module.parameters()`` that require grad) in each bucket."""
        return [list(bucket.indices) for bucket in self.reducer.buckets]


__all__ = ["DistributedDataParallel"]
