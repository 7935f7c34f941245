"""Activation checkpointing, as ``torch.utils.checkpoint``: trade compute for memory.

``checkpoint(fn, *args)`` runs ``fn`` with its graph recorded as usual, but every tensor its ops save
for backward is stored as a number (saved-tensor hooks, ``autograd.graph.saved_tensors_hooks``), so
the activations inside ``fn`` are freed as soon as the forward moves on. When backward first asks for
one of them, ``fn`` runs again on the same inputs (the random generator put back to where it was
before the forward, with ``preserve_rng_state``), recording which tensors its ops save, in the same
order, and backward takes the i-th of them for the i-th number. That is PyTorch's non-reentrant
design, so gradients reach every tensor ``fn`` uses (its arguments, a module's parameters read
inside), ``autograd.grad`` works through it, and so does a double backward: the recomputation records
its own graph to the inputs when grad mode is on.

Inside ``jitgrad.compile`` there is nothing to recompute by hand: the compiled program keeps or
recomputes activations as its memory planner and rematerialization pass decide, so ``fn`` is traced
and compiled as a plain call, with a warning that says so.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

from ..autograd import enable_grad, is_grad_enabled
from ..autograd.graph import saved_tensors_hooks
from ..ops.registry import observed
from ..random import get_rng_state, set_rng_state
from ..tensor import Tensor

COMPILED_WARNING = ("jitgrad.utils.checkpoint inside jitgrad.compile (or fx.trace): the checkpointed function "
                    "is compiled as a plain call, without recomputation in backward; the compiled program's "
                    "memory planner and rematerialization pass decide which activations it keeps")


class _Recomputation:
    """The saved tensors of one checkpointed call: the forward leaves numbers, backward asks for them
    back, and the first ask reruns the function to make them."""

    def __init__(self, function: Callable, args: tuple, kwargs: dict, rng_state: Tensor | None) -> None:
        self.function, self.args, self.kwargs, self.rng_state = function, args, kwargs, rng_state
        self.count = 0
        self.shapes: list[tuple] = []
        self.recomputed: dict[int, Tensor] = {}

    def pack(self, tensor: Tensor) -> int:
        self.shapes.append((tuple(tensor.shape), tensor.dtype))
        self.count += 1
        return self.count - 1

    def unpack(self, index: int) -> Tensor:
        if index not in self.recomputed:
            self._recompute()
        return self.recomputed.pop(index)

    def _recompute(self) -> None:
        """Runs the function again and keeps what its ops save. A second backward (retain_graph)
        recomputes again: entries are dropped as backward takes them, so memory is freed as it goes."""
        saved: list[Tensor] = []

        def keep(tensor: Tensor) -> int:
            saved.append(tensor)
            return len(saved) - 1

        outer_state = get_rng_state() if self.rng_state is not None else None
        try:
            if self.rng_state is not None:
                set_rng_state(self.rng_state)
            with enable_grad(), saved_tensors_hooks(keep, saved.__getitem__):
                self.function(*self.args, **self.kwargs)
        finally:
            if outer_state is not None:
                set_rng_state(outer_state)
        found = [(tuple(t.shape), t.dtype) for t in saved]
        if found != self.shapes:
            raise RuntimeError(
                "jitgrad.utils.checkpoint: Recomputed values for the following tensors have different metadata "
                f"than during the forward pass: the forward saved {len(self.shapes)} tensors "
                f"{self.shapes}, the recomputation {len(found)} tensors {found}. The checkpointed function "
                "must run the same ops on the same shapes each time (no data-dependent branches on values "
                "that change between forward and backward).")
        self.recomputed = dict(enumerate(saved))


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = False, context_fn: Any = None,
               determinism_check: str = "default", debug: bool = False, preserve_rng_state: bool = True,
               **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` without keeping its activations: backward recomputes them (the
    module's docstring). Gradients equal those of the plain call. ``use_reentrant=True`` is accepted
    and runs the same non-reentrant mechanism (which supports everything the reentrant one does, and
    ``autograd.grad`` besides); ``context_fn`` and ``debug`` are PyTorch's options this does not have."""
    if context_fn is not None:
        raise NotImplementedError("jitgrad.utils.checkpoint: context_fn is not supported")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    if observed():
        warnings.warn(COMPILED_WARNING, stacklevel=2)
        return function(*args, **kwargs)
    if not is_grad_enabled():
        return function(*args, **kwargs)
    frame = _Recomputation(function, args, kwargs, get_rng_state() if preserve_rng_state else None)
    with saved_tensors_hooks(frame.pack, frame.unpack):
        return function(*args, **kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Any, use_reentrant: bool | None = False,
                          **kwargs: Any) -> Any:
    """Runs a ``Sequential`` (or a list of modules or functions) in ``segments`` chunks, each but the
    last checkpointed, as ``torch.utils.checkpoint.checkpoint_sequential``."""
    funcs: Sequence[Callable] = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if not 0 < segments <= max(len(funcs), 1):
        raise ValueError(f"checkpoint_sequential: segments must be between 1 and {len(funcs)}, got {segments}")
    size = len(funcs) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(_run_segment(funcs[start:end + 1]), input, use_reentrant=use_reentrant, **kwargs)
    return _run_segment(funcs[end + 1:])(input)


def _run_segment(funcs: Sequence[Callable]) -> Callable:
    def run(value: Any) -> Any:
        for f in funcs:
            value = f(value)
        return value
    return run
