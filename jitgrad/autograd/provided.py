"""What autograd runs of the ops layer above it, handed down by ``jitgrad.ops`` when that is imported.

Every op records a backward node, so ``jitgrad.ops`` builds on autograd and autograd must not import it.
Yet a few of autograd's own steps must be ops, recorded under ``create_graph`` and seen by a tracer like
any other: the engine sums a broadcast gradient back to its input's shape (``sum_to``), ``functional``
stacks a Jacobian's rows (``stack``), and a view given a new history tells the observers of ops (a
tracer, forward mode) that it now holds the replayed value (``note_alias``). ``jitgrad.ops`` hands them
over with ``provide``. Everything else autograd computes on tensors goes through ``Tensor``'s methods and
operators (``grad.to(dtype)``, ``a + b``), which ``jitgrad.ops.methods`` attaches.

Read them as ``provided.sum_to(...)`` at the time of the call, never ``from .provided import sum_to``,
which would keep the placeholder.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, NoReturn, Sequence

if TYPE_CHECKING:
    import numpy as np

    from ..tensor import Tensor


def _not_provided(*args: object, **kwargs: object) -> NoReturn:
    raise RuntimeError("jitgrad.autograd runs ops that jitgrad.ops provides when it is imported; "
                       "import jitgrad (or jitgrad.ops) first")


sum_to: Callable[["Tensor", tuple[int, ...]], "Tensor"] = _not_provided
sum_to_array: Callable[["np.ndarray", tuple[int, ...]], "np.ndarray"] = _not_provided
summed_dims: Callable[[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = _not_provided
stack: Callable[[Sequence["Tensor"]], "Tensor"] = _not_provided
note_alias: Callable[["Tensor", "Tensor"], None] = _not_provided
observed: Callable[[], bool] = _not_provided


def provide(*, sum_to: Callable[["Tensor", tuple[int, ...]], "Tensor"],
            sum_to_array: Callable[["np.ndarray", tuple[int, ...]], "np.ndarray"],
            summed_dims: Callable[[tuple[int, ...], tuple[int, ...]], tuple[int, ...]],
            stack: Callable[[Sequence["Tensor"]], "Tensor"],
            note_alias: Callable[["Tensor", "Tensor"], None], observed: Callable[[], bool]) -> None:
    """Called once by ``jitgrad.ops``: ``sum_to(tensor, shape)`` undoes broadcasting (``sum_to_array`` on
    an array, with the same numpy calls, for the fast path: ``np.add.reduce`` over
    ``summed_dims(shape, target)`` with keepdim, then a reshape to the target), ``stack(tensors)``
    joins tensors along a new first dimension, ``note_alias(tensor, source)`` tells observers that
    ``tensor`` now holds ``source``'s value, ``observed()`` says whether a tracer watches this thread's
    ops (then the engine's fast path, which runs no ops, stays out of its way)."""
    globals().update(sum_to=sum_to, sum_to_array=sum_to_array, summed_dims=summed_dims, stack=stack,
                     note_alias=note_alias, observed=observed)
