"""Activations and losses as PyTorch's ``torch.nn.functional`` spells them, composed of registry ops."""
from __future__ import annotations

from ..factories import rand_like
from ..ops import gelu, log_softmax, nll_loss, relu, softmax
from ..ops.reductions import mean, sum
from ..tensor import Tensor

__all__ = ["relu", "gelu", "softmax", "log_softmax", "cross_entropy", "nll_loss", "mse_loss", "linear", "dropout"]


def _reduce(loss: Tensor, reduction: str, op: str) -> Tensor:
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: {reduction} is not a valid value for reduction (use 'mean', 'sum' or 'none')")


def cross_entropy(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Cross-entropy of logits ``input`` (N, C) against class indices (N,) or class probabilities
    (N, C), such as one-hot rows."""
    if input.ndim not in (1, 2):
        raise ValueError(f"cross_entropy: expected input of shape (N, C) or (C,), got {tuple(input.shape)}")
    log_probs = log_softmax(input, dim=-1)
    if target.is_floating_point():
        if tuple(target.shape) != tuple(input.shape):
            raise ValueError(f"cross_entropy: probability targets must have the input's shape "
                             f"{tuple(input.shape)}, got {tuple(target.shape)}")
        return _reduce(-sum(log_probs * target, dim=-1), reduction, "cross_entropy")
    return nll_loss(log_probs, target, reduction=reduction)


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    diff = input - target
    return _reduce(diff * diff, reduction, "mse_loss")


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``, with ``weight`` of shape (out_features, in_features).

    One dtype for all three, as in PyTorch, where this is one fused product: the addition alone would
    promote a bias of another dtype."""
    out = input @ weight.T
    if bias is None:
        return out
    if bias.dtype != out.dtype:
        raise RuntimeError(f"linear: expected the same dtype for input, weight and bias, but the bias is "
                           f"{bias.dtype.name} and the input and weight are {out.dtype.name}; linear does "
                           f"not promote dtypes: convert the bias first, e.g. "
                           f"bias.to(jitgrad.{out.dtype.name})")
    return out + bias


def dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zeroes each element with probability ``p`` and scales the rest by ``1 / (1 - p)``, so that the
    expected value is unchanged; the identity when not ``training`` (or ``p == 0``, which draws nothing).

    A composite of registry ops: a uniform draw (``rand_like``, one element per element of ``input``, so
    the generator moves as far as it does in PyTorch's eager dropout) compared with ``p`` gives a scaled
    mask, and the gradient is the incoming one times that mask (``MulBackward0``). Compiled, the draw
    takes its state from the generator at each call (docs/compile.md, "Random numbers")."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability p has to be between 0 and 1, but got p={p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0  # every element dropped: zeros, and zero gradients (no 0 * inf)
    keep = rand_like(input) >= p
    return input * (keep.to(input.dtype) * (1.0 / (1.0 - p)))
