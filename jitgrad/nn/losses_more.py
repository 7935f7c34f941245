"""The losses of ``torch.nn.functional`` beside ``functional.py``'s: ranking and embedding losses
(``margin_ranking_loss``, ``hinge_embedding_loss``, ``cosine_embedding_loss``,
``triplet_margin_loss``), margin classification losses (``soft_margin_loss``,
``multilabel_soft_margin_loss``, ``multi_margin_loss``) and likelihoods (``poisson_nll_loss``,
``gaussian_nll_loss``).

Each is written as PyTorch's reference computes it, in registry ops (``where``, ``clamp``,
``gather``, ``logsigmoid``), so values agree to rounding, gradients follow (of any order), and a
loss compiles. Each takes PyTorch's deprecated ``size_average``/``reduce`` too, read as it reads them.
"""
from __future__ import annotations

import builtins
import math

from ..autograd import is_grad_enabled, no_grad
from ..factories import arange, full_like
from ..ops import gather, where
from ..ops.activations import logsigmoid
from ..ops.reductions import mean, sum
from ..ops.registry import observed
from ..tensor import Tensor

_EPSILON = 1e-12  # cosine_embedding_loss's, added to each squared norm as PyTorch adds it


def not_differentiable(function: str, **arguments: Tensor | None) -> None:
    """PyTorch's error for a loss argument its autograd has no derivative for (class weights,
    ``pos_weight``, ``soft_margin_loss``'s target), where jitgrad's composites would give one PyTorch
    never gives."""
    if not is_grad_enabled():
        return
    for name, value in arguments.items():
        if value is not None and value.requires_grad:
            raise RuntimeError(f"The function '{function}' is not differentiable with respect to argument '{name}'. "
                               "This input cannot have requires_grad True.")


def reduction_of(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """``reduction``, or what PyTorch's deprecated ``size_average``/``reduce`` say when either is given
    (each True when left out)."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def reduce_loss(loss: Tensor, reduction: str, op: str) -> Tensor:
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: {reduction} is not a valid value for reduction (use 'mean', 'sum' or 'none')")


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``: ``target`` 1 says input1 should rank higher."""
    if not input1.dim() == input2.dim() == target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    loss = (-target * (input1 - input2) + margin).clamp(min=0)
    return reduce_loss(loss, reduction_of(size_average, reduce, reduction), "margin_ranking_loss")


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: bool | None = None,
                         reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``input`` where ``target`` is 1, ``max(0, margin - input)`` where it is -1 (``input`` a distance)."""
    loss = where(target != 1, (margin - input).clamp(min=0), 0.0) + where(target != -1, input, 0.0)
    return reduce_loss(loss, reduction_of(size_average, reduce, reduction), "hinge_embedding_loss")


def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))``, the logistic loss of labels ±1."""
    not_differentiable("soft_margin_loss", target=target)
    loss = (-target * input).exp().log1p()
    return reduce_loss(loss, reduction_of(size_average, reduce, reduction), "soft_margin_loss")


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    """The binary cross-entropy of logits ``input`` against 0/1 ``target`` per class, averaged over
    the classes (the last dimension), ``weight`` per class."""
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    classes = input.shape[-1] if input.dim() else 1
    loss = sum(loss, input.dim() - 1) / classes if input.dim() else loss
    return reduce_loss(loss, reduction_of(size_average, reduce, reduction), "multilabel_soft_margin_loss")


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average: bool | None = None, reduce: bool | None = None,
                      reduction: str = "mean") -> Tensor:
    """The multi-class hinge loss: ``sum over i != y of max(0, margin - x[y] + x[i])^p / C`` for each
    sample of (N, C) scores (or one of (C,)) and its class ``y``, times ``weight[y]`` when given."""
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if input.dim() > 2 or target.dim() > 1 or (input.dim() == 2 and target.dim() != 1) \
            or (input.dim() == 2 and target.shape[0] != input.shape[0]):
        raise RuntimeError(f"multi_margin_loss: inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)} (expected (N, C) scores and (N,) classes, or (C,) and one class)")
    if weight is not None and (weight.dim() > 1 or weight.numel() != (input.shape[-1] if input.dim() else 1)):
        raise ValueError("weight must be one-dimensional")
    not_differentiable("multi_margin_loss", weight=weight)
    reduction = reduction_of(size_average, reduce, reduction)
    rows = input.reshape(-1, input.shape[-1] if input.dim() else 1)
    labels = target.reshape(-1, 1)
    terms = (margin - gather(rows, 1, labels) + rows).clamp(min=0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * gather(weight, 0, labels.reshape(-1)).unsqueeze(1)
    # the class's own term is dropped by where, not multiplied by 0: it is margin - x[y] + x[y], NaN
    # where x[y] is infinite (the loss was NaN where PyTorch's is inf)
    others = arange(rows.shape[1], device=rows.device) != labels
    loss = sum(where(others, terms, 0.0), 1) / rows.shape[1]
    if input.dim() < 2:
        loss = loss.reshape(())
    return reduce_loss(loss, reduction, "multi_margin_loss")


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where ``target`` is 1, ``max(0, cos(x1, x2) - margin)`` where it is -1, for
    (N, D) rows (``target`` (N,)) or one pair of (D,) (``target`` 0-d)."""
    if target.dim() not in (0, 1) or input1.dim() != target.dim() + 1 or input2.dim() != input1.dim():
        raise RuntimeError(f"cosine_embedding_loss: expected (N, D) inputs with an (N,) target or (D,) inputs "
                           f"with a 0-d target, got input1 {list(input1.shape)}, input2 {list(input2.shape)} and "
                           f"target {list(target.shape)}")
    dim = target.dim()
    products = sum(input1 * input2, dim)
    norms = ((sum(input1 * input1, dim) + _EPSILON) * (sum(input2 * input2, dim) + _EPSILON)).sqrt()
    cosine = products / norms
    loss = where(target == 1, 1 - cosine, 0.0) + where(target == -1, (cosine - margin).clamp(min=0), 0.0)
    return reduce_loss(loss, reduction_of(size_average, reduce, reduction), "cosine_embedding_loss")


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average: bool | None = None,
                        reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``max(0, d(a, p) - d(a, n) + margin)`` with ``d`` the ``pairwise_distance`` (``p``, ``eps``);
    ``swap`` takes ``d(a, n)`` as the smaller of it and ``d(p, n)``."""
    if not anchor.dim() == positive.dim() == negative.dim():
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and negative "
                           f"{negative.dim()}D inputs")
    if margin <= 0:
        raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
    from .functional import pairwise_distance  # functional imports this module: its names, on first use
    to_positive = pairwise_distance(anchor, positive, p, eps)
    to_negative = pairwise_distance(anchor, negative, p, eps)
    if swap:
        to_negative = to_negative.minimum(pairwise_distance(positive, negative, p, eps))
    loss = (margin + to_positive - to_negative).clamp(min=0)
    return reduce_loss(loss, reduction_of(size_average, reduce, reduction), "triplet_margin_loss")


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of counts ``target`` under a Poisson of rate ``exp(input)``
    (``log_input``) or ``input``: ``rate - target * log(rate)``; ``full`` adds Stirling's term for
    the counts above 1."""
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        counts = where(target > 1, target, 1.0)  # no log(0) where the term is masked out
        stirling = counts * counts.log() - counts + 0.5 * (2 * math.pi * counts).log()
        loss = loss + where(target > 1, stirling, 0.0)
    reduction = reduction_of(size_average, reduce, reduction)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduce_loss(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """``0.5 (log(var) + (input - target)² / var)`` (plus ``0.5 log(2π)`` with ``full``) for a
    predicted mean ``input`` and variance ``var``: of the input's shape, one dimension short of it, or
    of size 1 in one dimension. ``var`` is clamped at ``eps`` for the value only: its gradient passes
    through the clamp, as PyTorch's (which clamps a copy in place under ``no_grad``)."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = full_like(input, var).detach()
    elif not observed():  # eager: PyTorch's check reads the values; a trace reads none
        with no_grad():
            if bool((var < 0).any()):
                raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim()
                  and builtins.sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var + (var.clamp(min=eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_loss(loss, reduction, "gaussian_nll_loss")


__all__ = ["cosine_embedding_loss", "gaussian_nll_loss", "hinge_embedding_loss", "margin_ranking_loss",
           "multi_margin_loss", "multilabel_soft_margin_loss", "poisson_nll_loss", "soft_margin_loss",
           "triplet_margin_loss"]
