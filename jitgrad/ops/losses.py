"""``nll_loss``: the negative log-likelihood of class indices, as PyTorch's ``nll_loss`` (what
``cross_entropy`` with class-index targets computes after ``log_softmax``; node ``NllLossBackward0``).

The targets are an input of the op, an integer tensor, so that a compiled loss takes them as an
argument like any other tensor; reading them as numbers to index with would make every batch of labels
part of the traced program. Its gradient, ``nll_loss_backward``, is an op of its own (as in PyTorch),
linear in the incoming gradient, and its own gradient is ``nll_loss`` again: gradients of any order.

``cross_entropy_backward`` is the gradient of a cross-entropy's logits in one op: ``log_softmax_backward``
of ``nll_loss_backward``, which ``simplify_algebra`` puts in their place in a traced program, so that a
kernel writes each row's gradient from the targets without making the one-hot gradient and summing it.

A target equal to ``ignore_index`` (PyTorch's -100 by default, any value) adds nothing and has no
gradient, and "mean" divides by the number of targets not ignored (0 / 0, NaN, when all are), as in
PyTorch; only the other targets must be classes.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .lowering import intrinsic
from .meta_rules import TensorMeta, given
from .registry import defop

REDUCTIONS = ("mean", "sum", "none")


def _check(log_probs: np.ndarray, target: np.ndarray, reduction: str, ignore_index: int) -> None:
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
    outside = ((target < 0) | (target >= log_probs.shape[1])) & (target != ignore_index)
    if outside.any():
        raise IndexError(f"Target {int(target[outside][0])} is out of bounds for {log_probs.shape[1]} classes.")


def _kept(target: np.ndarray, ignore_index: int) -> tuple[np.ndarray, np.ndarray]:
    """Which targets count, and the targets with the ignored ones replaced by class 0 (to index with)."""
    kept = target != ignore_index
    return kept, np.where(kept, target, 0)


def _mean_divisor(kept: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return dtype.type(np.count_nonzero(kept))


def _nll_forward(self: np.ndarray, target: np.ndarray, reduction: str, ignore_index: int = -100) -> np.ndarray:
    _check(self, target, reduction, ignore_index)
    kept, safe = _kept(target, ignore_index)
    picked = np.where(kept, -self[np.arange(target.shape[0]), safe], self.dtype.type(0)).astype(self.dtype)
    if reduction == "none":
        return picked
    total = picked.sum(dtype=self.dtype)
    if reduction == "sum":
        return np.asarray(total)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(total / _mean_divisor(kept, self.dtype))


def _nll_backward_forward(grad: np.ndarray, target: np.ndarray, shape: tuple[int, int],
                          reduction: str, ignore_index: int = -100) -> np.ndarray:
    out = np.zeros(shape, grad.dtype)
    n = target.shape[0]
    kept, safe = _kept(target, ignore_index)
    if reduction == "none":
        scale = -grad
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            divisor = _mean_divisor(kept, grad.dtype) if reduction == "mean" else grad.dtype.type(1)
            scale = np.full(n, -grad / divisor, grad.dtype)
    out[np.arange(n)[kept], safe[kept]] = scale[kept]
    return out


def _cross_entropy_backward_forward(grad: np.ndarray, target: np.ndarray, output: np.ndarray, reduction: str,
                                    ignore_index: int = -100) -> np.ndarray:
    """``log_softmax_backward(nll_loss_backward(grad, target), output, dim=1)``, computed as written:
    the same values as the two ops, which a compiled program compares with eager."""
    dense = _nll_backward_forward(grad, target, output.shape, reduction, ignore_index)
    return (dense - np.exp(output) * dense.sum(axis=1, keepdims=True)).astype(output.dtype, copy=False)


def _nll_meta(self, target, reduction, ignore_index=-100):
    """A loss per row for ``reduction="none"``, else one: of the log-probabilities' dtype."""
    return TensorMeta(self.shape[:1] if reduction == "none" else (), self.dtype)


def _output_meta(grad, target, output, reduction, ignore_index=-100):
    """The log-probabilities' shape and dtype."""
    return TensorMeta(tuple(output.shape), output.dtype)


_nll_loss = defop("nll_loss", ("self", "target"), _nll_forward, "NllLossBackward0", meta=_nll_meta,
                  lower=intrinsic("nll_loss"),
                  self=lambda grad, target, self_shape, reduction, ignore_index: _nll_loss_backward(
                      grad, target, shape=self_shape, reduction=reduction, ignore_index=ignore_index),
                  jvp=lambda self_t, target, reduction, ignore_index: _nll_loss(
                      self_t, target, reduction=reduction, ignore_index=ignore_index))

_nll_loss_backward = defop("nll_loss_backward", ("grad", "target"), _nll_backward_forward,
                           "NllLossBackwardBackward0", meta=given("shape", 0),
                           lower=intrinsic("nll_loss_backward"),
                           grad=lambda grad, target, reduction, ignore_index: _nll_loss(
                               grad, target, reduction=reduction, ignore_index=ignore_index),
                           jvp=lambda grad_t, target, shape, reduction, ignore_index: _nll_loss_backward(
                               grad_t, target, shape=shape, reduction=reduction, ignore_index=ignore_index))


# Made by a pass after tracing (``fx/passes/simplify.py``), never recorded: no derivatives.
cross_entropy_backward = defop("cross_entropy_backward", ("grad", "target", "output"),
                               _cross_entropy_backward_forward, meta=_output_meta,
                               lower=intrinsic("cross_entropy_backward"))


def nll_loss(input: Tensor, target: Tensor, reduction: str = "mean", ignore_index: int = -100) -> Tensor:
    """PyTorch's ``nll_loss`` for ``input`` of log-probabilities (N, C) and class indices (N,), or for
    one sample: (C,) and a 0-d class index, computed as a batch of one (its loss is 0-d)."""
    if input.ndim == 0:
        raise ValueError("nll_loss: expected input of shape (N, C) or (C,), got a 0-d tensor")
    if input.ndim == 1:
        if target.numel() != 1 or target.ndim > 1:
            raise ValueError(f"nll_loss: a class-index target for input of shape ({input.shape[0]},) is a "
                             f"0-d tensor, got shape {tuple(target.shape)}")
        loss = _nll_loss(input.unsqueeze(0), target.reshape(1), reduction=reduction, ignore_index=int(ignore_index))
        return loss.reshape(()) if reduction == "none" else loss
    if target.ndim == 1 and input.shape[0] != target.shape[0]:  # PyTorch's ValueError, not the op's error
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    return _nll_loss(input, target, reduction=reduction, ignore_index=int(ignore_index))
