"""``nll_loss``: the negative log-likelihood of class indices, as PyTorch's ``nll_loss`` (what
``cross_entropy`` with class-index targets computes after ``log_softmax``; node ``NllLossBackward0``).

The targets are an input of the op, an integer tensor, so that a compiled loss takes them as an
argument like any other tensor; reading them as numbers to index with would make every batch of labels
part of the traced program. Its gradient, ``nll_loss_backward``, is an op of its own (as in PyTorch),
linear in the incoming gradient, and its own gradient is ``nll_loss`` again: gradients of any order.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .lowering import intrinsic
from .meta_rules import TensorMeta, given
from .registry import defop

REDUCTIONS = ("mean", "sum", "none")


def _check(log_probs: np.ndarray, target: np.ndarray, reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction (use 'mean', 'sum' or 'none')")
    if target.dtype.kind not in "iu":
        raise TypeError(f"expected class indices of an integer dtype (int64), got {target.dtype}: "
                        f"pass class probabilities to cross_entropy instead, or convert with .long()")
    if log_probs.ndim != 2 or target.ndim != 1:
        raise ValueError(f"expected input of shape (N, C) and target of shape (N,), got {list(log_probs.shape)} "
                         f"and {list(target.shape)}")
    if log_probs.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({log_probs.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    outside = (target < 0) | (target >= log_probs.shape[1])
    if outside.any():
        raise IndexError(f"Target {int(target[outside][0])} is out of bounds for {log_probs.shape[1]} classes.")


def _nll_forward(self: np.ndarray, target: np.ndarray, reduction: str) -> np.ndarray:
    _check(self, target, reduction)
    picked = -self[np.arange(target.shape[0]), target]
    if reduction == "none":
        return picked
    total = picked.sum(dtype=self.dtype)
    return np.asarray(total / self.dtype.type(target.shape[0]) if reduction == "mean" else total)


def _nll_backward_forward(grad: np.ndarray, target: np.ndarray, shape: tuple[int, int],
                          reduction: str) -> np.ndarray:
    out = np.zeros(shape, grad.dtype)
    n = target.shape[0]
    scale = -grad if reduction == "none" else np.full(n, -grad / (grad.dtype.type(n) if reduction == "mean" else 1),
                                                       grad.dtype)
    out[np.arange(n), target] = scale
    return out


def _nll_meta(self, target, reduction):
    """A loss per row for ``reduction="none"``, else one: of the log-probabilities' dtype."""
    return TensorMeta(self.shape[:1] if reduction == "none" else (), self.dtype)


_nll_loss = defop("nll_loss", ("self", "target"), _nll_forward, "NllLossBackward0", meta=_nll_meta,
                  lower=intrinsic("nll_loss"),
                  self=lambda grad, target, self_shape, reduction: _nll_loss_backward(
                      grad, target, shape=self_shape, reduction=reduction),
                  jvp=lambda self_t, target, reduction: _nll_loss(self_t, target, reduction=reduction))

_nll_loss_backward = defop("nll_loss_backward", ("grad", "target"), _nll_backward_forward,
                           "NllLossBackwardBackward0", meta=given("shape", 0),
                           lower=intrinsic("nll_loss_backward"),
                           grad=lambda grad, target, reduction: _nll_loss(grad, target, reduction=reduction),
                           jvp=lambda grad_t, target, shape, reduction: _nll_loss_backward(
                               grad_t, target, shape=shape, reduction=reduction))


def nll_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """PyTorch's ``nll_loss`` for ``input`` of log-probabilities (N, C) and class indices (N,), or for
    one sample: (C,) and a 0-d class index, computed as a batch of one (its loss is 0-d)."""
    if input.ndim == 0:
        raise ValueError("nll_loss: expected input of shape (N, C) or (C,), got a 0-d tensor")
    if input.ndim == 1:
        if target.numel() != 1 or target.ndim > 1:
            raise ValueError(f"nll_loss: a class-index target for input of shape ({input.shape[0]},) is a "
                             f"0-d tensor, got shape {tuple(target.shape)}")
        loss = _nll_loss(input.unsqueeze(0), target.reshape(1), reduction=reduction)
        return loss.reshape(()) if reduction == "none" else loss
    if target.ndim == 1 and input.shape[0] != target.shape[0]:  # PyTorch's ValueError, not the op's error
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    return _nll_loss(input, target, reduction=reduction)
