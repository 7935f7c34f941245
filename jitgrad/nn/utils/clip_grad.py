"""Gradient clipping, between ``backward()`` and ``optimizer.step()``: recurrent networks need it, since a
gradient through many steps can grow without bound.

The gradients are scaled in place (under ``no_grad``, as an optimizer updates parameters), so the
optimizer's references to the ``.grad`` tensors stay valid. The norm and the scale are computed with
registry ops on the gradients' device, as PyTorch computes them, and never read back as a Python
number (but for ``error_if_nonfinite``'s check): so a compiled training step that clips compiles.
(Until 2026-11-28 the norm was read with ``.item()``, which made such a step run eagerly.)
"""
from __future__ import annotations

import math
from typing import Iterable

from ...autograd import no_grad
from ...factories import tensor
from ...ops import stack
from ...tensor import Tensor


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p.grad for p in parameters if p.grad is not None]


def _vector_norm(values: Tensor, norm_type: float) -> Tensor:
    """The ``norm_type`` norm of all of ``values``: ``inf`` the largest magnitude, ``-inf`` the
    smallest, 0 the count of nonzeros, otherwise ``sum(|v| ** p) ** (1 / p)``. The total norm is
    this norm of the per-gradient norms, as PyTorch computes it: the same as the norm of all the
    gradients as one vector, except for 0, which counts the gradients that are not all zeros."""
    if norm_type == math.inf:
        return values.abs().max()
    if norm_type == -math.inf:
        return values.abs().min()
    if norm_type == 0.0:
        return (values != 0).to(values.dtype).sum()
    return (values.abs() ** norm_type).sum() ** (1.0 / norm_type)


def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:  # noqa: ARG001
    """The ``norm_type`` norm of all of ``tensors`` as one vector (``inf``, ``-inf`` and 0 too): the norm
    of their norms, as PyTorch's; 0 for none."""
    tensors = [tensors] if isinstance(tensors, Tensor) else [t for t in tensors if t is not None]
    if not tensors:
        return tensor(0.0)
    norm_type = float(norm_type)
    total = _vector_norm(stack([_vector_norm(t, norm_type) for t in tensors]), norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:  # noqa: ARG001
    """Scales the gradients in place by ``max_norm / (total_norm + 1e-6)``, capped at 1, as PyTorch's:
    the second half of ``clip_grad_norm_``, for a norm computed apart (``get_total_norm``)."""
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        scale = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(scale)


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Scales the gradients so that their total norm (the norm of all of them as one vector) is at
    most ``max_norm``; returns the total norm before scaling. ``norm_type`` may be ``inf``, ``-inf``
    or 0. The scale is ``max_norm / (norm + 1e-6)``, capped at 1, as PyTorch's."""
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float,
                     foreach: bool | None = None) -> None:  # noqa: ARG001
    """Clamps every gradient element into ``[-clip_value, clip_value]``, in place."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
