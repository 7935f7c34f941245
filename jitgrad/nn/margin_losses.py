"""The margin, ranking and likelihood losses of PyTorch's ``nn.functional``, written as PyTorch's
reference formulas in registry ops (so gradients and compiling come from them), and the reduction
every loss shares.

``margin_ranking_loss``, ``hinge_embedding_loss``, ``soft_margin_loss``,
``multilabel_soft_margin_loss``, ``cosine_embedding_loss``, ``triplet_margin_loss``,
``poisson_nll_loss`` and ``gaussian_nll_loss``.
"""
from __future__ import annotations

import math

from ..ops import minimum, where
from ..ops.activations import logsigmoid
from ..ops.linalg import norm
from ..ops.reductions import mean, sum
from ..tensor import Tensor


def reduce_loss(loss: Tensor, reduction: str, op: str) -> Tensor:
    """``reduction`` of the elementwise ``loss``: its mean, its sum, or itself (``"none"``)."""
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: {reduction} is not a valid value for reduction (use 'mean', 'sum' or 'none')")


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``: ``target`` 1 says input1 should rank higher."""
    if not (input1.dim() == input2.dim() == target.dim()):
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {tuple(input1.shape)}, input2: {tuple(input2.shape)}, target: "
                           f"{tuple(target.shape)} ")
    return reduce_loss((-target * (input1 - input2) + margin).clamp(min=0.0), reduction, "margin_ranking_loss")


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: str = "mean") -> Tensor:
    """``input`` where ``target`` is 1, ``max(0, margin - input)`` where it is -1 (both terms where it
    is neither, as PyTorch adds them)."""
    below = where(target != 1, (margin - input).clamp(min=0.0), 0.0)
    return reduce_loss(below + where(target != -1, input, 0.0), reduction, "hinge_embedding_loss")


def soft_margin_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))``, as PyTorch computes it."""
    return reduce_loss((-input * target).exp().log1p(), reduction, "soft_margin_loss")


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                reduction: str = "mean") -> Tensor:
    """The binary cross-entropy of each label's logit, averaged over the labels (the last dimension),
    then reduced over the samples."""
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return reduce_loss(loss.sum(-1) / input.shape[-1], reduction, "multilabel_soft_margin_loss")


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos`` where ``target`` is 1, ``max(0, cos - margin)`` where it is -1; ``cos`` with 1e-12
    added to each squared norm, as PyTorch's."""
    if input1.dim() not in (1, 2) or target.dim() != input1.dim() - 1:
        raise RuntimeError(f"cosine_embedding_loss: 0D target tensor expects 1D input tensors, or 1D target tensor "
                           f"expects 2D input tensors, but got inputs of sizes {tuple(input1.shape)} and "
                           f"{tuple(input2.shape)} and a target of size {tuple(target.shape)}")
    dim = input1.dim() - 1
    products = (input1 * input2).sum(dim)
    squares = ((input1 * input1).sum(dim) + 1e-12) * ((input2 * input2).sum(dim) + 1e-12)
    cos = products / squares.sqrt()
    loss = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).clamp(min=0.0), 0.0)
    return reduce_loss(loss, reduction, "cosine_embedding_loss")


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, reduction: str = "mean") -> Tensor:
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with ``pairwise_distance``'s
    ``d``; ``swap`` takes the smaller of the negative's distances to the anchor and the positive."""
    if not (anchor.dim() == positive.dim() == negative.dim()):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and negative "
                           f"{negative.dim()}D inputs")
    to_positive = norm(anchor - positive + eps, p, -1)
    to_negative = norm(anchor - negative + eps, p, -1)
    if swap:
        to_negative = minimum(to_negative, norm(positive - negative + eps, p, -1))
    return reduce_loss((margin + to_positive - to_negative).clamp(min=0.0), reduction, "triplet_margin_loss")


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False, eps: float = 1e-8,
                     reduction: str = "mean") -> Tensor:
    """``exp(input) - target * input`` for a log-rate ``input`` (else ``input - target * log(input +
    eps)``); ``full`` adds Stirling's approximation of ``log(target!)`` where ``target > 1``."""
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = where(target > 1, target, 1.0)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + where(target > 1, stirling, 0.0)
    return reduce_loss(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """``0.5 (log(var) + (input - target)^2 / var)``, ``var`` raised to at least ``eps`` as a constant
    (the gradient flows through ``var`` itself, as PyTorch clamps it without recording); ``var`` may
    lack the last dimension, or have size 1 there."""
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(reduction + " is not valid")
    if bool((var.detach() < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var + (var.clamp(min=eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_loss(loss, reduction, "gaussian_nll_loss")


__all__ = ["cosine_embedding_loss", "gaussian_nll_loss", "hinge_embedding_loss", "margin_ranking_loss",
           "multilabel_soft_margin_loss", "poisson_nll_loss", "reduce_loss", "soft_margin_loss", "triplet_margin_loss"]
