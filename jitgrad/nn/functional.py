"""Layers and losses as PyTorch's ``torch.nn.functional`` spells them, composed of registry ops.

Composed, not new ops: each function is a few registry ops, so its gradient, its gradients of any
order, forward mode and compiling come from theirs. Where PyTorch has one fused op the node names
differ (``layer_norm`` ends in ``MulBackward0``/``AddBackward0`` rather than
``NativeLayerNormBackward0``); docs/nn.md lists them.
"""
from __future__ import annotations

import math
import warnings
from typing import Sequence

import numpy as np

from ..autograd import Function, no_grad
from ..dtypes import bool as bool_
from ..dtypes import float16, int64
from ..factories import arange, eye, full, rand_like, tensor
from ..ops import gelu, log_softmax, relu, sigmoid, softmax, softplus, tanh, where
from ..ops.activations import (celu, elu, hardsigmoid, hardswish, hardtanh, leaky_relu, logsigmoid, mish, relu6,
                               selu, silu, softsign)
from ..ops.comparisons import scalar_type
from ..ops.linalg import norm
from ..ops import nll_loss as _nll_loss_op
from ..ops.gathering import embedding as _embedding
from ..ops.registry import observed
from ..ops.convolution import conv1d, conv2d, fold, unfold
from ..ops.pooling import max_pool2d
from ..ops.reductions import mean, sum
from ..shapes import broadcast_shapes
from ..tensor import Tensor
from .interpolation import interpolate, pixel_shuffle, pixel_unshuffle
from .padding import pad
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, avg_pool1d, avg_pool2d, max_pool1d
from .transposed_convolution import conv_transpose1d, conv_transpose2d
from . import activation_functions, losses_more, normalization_functions, sampling_and_pooling
from .normalization_functions import check_parameter_dtypes
from .losses_more import not_differentiable, reduce_loss  # shared by every loss
from .activation_functions import *  # noqa: F401,F403 - re-exported: the names below, one module per kind
from .losses_more import *  # noqa: F401,F403
from .normalization_functions import *  # noqa: F401,F403
from .sampling_and_pooling import *  # noqa: F401,F403

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "avg_pool1d", "avg_pool2d", "batch_norm",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "celu", "conv1d", "conv2d",
           "conv_transpose1d", "conv_transpose2d", "cosine_similarity", "cross_entropy", "dropout", "dropout1d",
           "dropout2d", "elu", "embedding", "fold", "gelu", "group_norm", "hardsigmoid", "hardswish", "hardtanh",
           "huber_loss", "interpolate", "kl_div", "l1_loss", "layer_norm", "leaky_relu", "linear", "log_softmax",
           "logsigmoid", "max_pool1d", "max_pool2d", "mish", "mse_loss", "nll_loss", "normalize", "one_hot", "pad",
           "pairwise_distance", "pixel_shuffle", "pixel_unshuffle", "relu", "relu6", "scaled_dot_product_attention",
           "selu", "sigmoid", "silu", "smooth_l1_loss", "softmax", "softplus", "softsign", "tanh", "unfold"]
__all__ += (activation_functions.__all__ + losses_more.__all__ + normalization_functions.__all__
            + sampling_and_pooling.__all__)


# ---- layers ------------------------------------------------------------------------------------------
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


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``input`` divided by its ``p``-norm along ``dim``, the norm taken as at least ``eps`` (so a zero
    slice stays zero, with a finite gradient)."""
    return input / norm(input, p, dim, keepdim=True).clamp(min=eps)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes each element with probability ``p`` and scales the rest by ``1 / (1 - p)``, so that the
    expected value is unchanged; the identity when not ``training`` (or ``p == 0``, which draws nothing).

    A composite of registry ops: a uniform draw (``rand_like``, one element per element of ``input``, so
    the generator moves as far as it does in PyTorch's eager dropout) compared with ``p`` gives a scaled
    mask, and the gradient is the incoming one times that mask (``MulBackward0``). Compiled, the draw
    takes its state from the generator at each call (docs/compile.md, "Random numbers"). ``inplace``
    is accepted for PyTorch's signature; the result is always a new tensor."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability p has to be between 0 and 1, but got p={p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0  # every element dropped: zeros, and zero gradients (no 0 * inf)
    keep = rand_like(input) >= p
    return input * (keep.to(input.dtype) * (1.0 / (1.0 - p)))


def _channel_dropout(input: Tensor, p: float, training: bool, spatial: int, name: str, dims: tuple[int, ...]) -> Tensor:
    """Zeroes whole channels (each with probability ``p``; the rest scaled by ``1 / (1 - p)``): the mask
    has one element per (sample, channel) and is broadcast over the ``spatial`` dimensions."""
    if input.dim() not in dims:
        raise RuntimeError(f"{name}: Expected {dims[0]}D or {dims[1]}D input, but received a {input.dim()}D input. "
                           f"Note that {name} exists to provide channel-wise dropout on inputs with {spatial} spatial "
                           f"dimension{'s' if spatial > 1 else ''}, a channel dimension, and an optional batch "
                           f"dimension (i.e. {dims[0]}D or {dims[1]}D inputs).")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability p has to be between 0 and 1, but got p={p}")
    if not training or p == 0.0:
        return input
    mask_shape = tuple(input.shape[:input.dim() - spatial]) + (1,) * spatial
    return input * dropout(full(mask_shape, 1.0, dtype=input.dtype, device=input.device), p, True)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Whole channels of an (N, C, L) or (C, L) input zeroed."""
    return _channel_dropout(input, p, training, 1, "dropout1d", (2, 3))


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Whole channels of an (N, C, H, W) or (C, H, W) input zeroed; a 3-d input is read as (N, C, L),
    with PyTorch's warning."""
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", UserWarning, stacklevel=2)
        return _channel_dropout(input, p, training, 1, "dropout2d", (3, 4))
    return _channel_dropout(input, p, training, 2, "dropout2d", (3, 4))


def _float(value: Tensor | None) -> Tensor | None:
    return None if value is None else value.float()


def _affine(normalized: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    if weight is not None:
        normalized = normalized * weight
    if bias is not None:
        normalized = normalized + bias
    return normalized


def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Each sample normalized over its last ``len(normalized_shape)`` dimensions (biased variance),
    then scaled by ``weight`` and shifted by ``bias``."""
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    count = len(normalized_shape)
    if tuple(input.shape[input.dim() - count:]) != normalized_shape or input.dim() < count:
        expected = ", ".join(str(s) for s in normalized_shape)
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {expected}], but got input of size{list(input.shape)}")
    check_parameter_dtypes("layer_norm", input, weight, bias)
    if input.dtype == float16:  # in float32, rounded once, as PyTorch's kernel (float16 steps lost ~8 bits)
        return layer_norm(input.float(), normalized_shape, _float(weight), _float(bias), eps).to(float16)
    dims = tuple(range(-count, 0))
    centered = input - mean(input, dims, keepdim=True)
    variance = mean(centered * centered, dims, keepdim=True)
    return _affine(centered * (variance + eps).rsqrt(), weight, bias)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Each sample's channels (dimension 1) split into ``num_groups`` groups, each normalized over its
    channels and every later dimension (biased variance), then ``weight`` and ``bias`` per channel."""
    if input.dim() < 2 or input.shape[1] % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    check_parameter_dtypes("group_norm", input, weight, bias)
    if input.dtype == float16:  # in float32, rounded once, as PyTorch's kernel
        return group_norm(input.float(), num_groups, _float(weight), _float(bias), eps).to(float16)
    per_group = input.shape[1] // num_groups * math.prod(input.shape[2:])   # no -1: a batch may be of 0
    grouped = input.reshape(input.shape[0], num_groups, per_group)
    centered = grouped - mean(grouped, -1, keepdim=True)
    variance = mean(centered * centered, -1, keepdim=True)
    normalized = (centered * (variance + eps).rsqrt()).reshape(tuple(input.shape))
    channel_shape = (1, input.shape[1]) + (1,) * (input.dim() - 2)
    return _affine(normalized, None if weight is None else weight.reshape(channel_shape),
                   None if bias is None else bias.reshape(channel_shape))


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalizes each channel (dimension 1 of an (N, C) or (N, C, L) input): in training by the
    batch's statistics, whose running averages it updates in place (``momentum`` of the new value;
    the running variance is the unbiased one, as in PyTorch), otherwise by the running statistics."""
    if input.dim() < 2:
        raise ValueError(f"expected an input of shape (N, C) or (N, C, L), got {list(input.shape)}")
    check_parameter_dtypes("batch_norm", input, running_mean, running_var, weight, bias)
    dims = (0, *range(2, input.dim()))
    channel_shape = (1, input.shape[1]) + (1,) * (input.dim() - 2)
    if training and input.numel() == 0:   # PyTorch: an empty result, the running statistics left as they are
        centered, batch_var = input * 0.0, full(channel_shape, 1.0, dtype=input.dtype)
    elif training:
        count = input.numel() // input.shape[1]
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {input.shape}")
        batch_mean = mean(input, dims, keepdim=True)
        centered = input - batch_mean
        batch_var = mean(centered * centered, dims, keepdim=True)
        if running_mean is not None and running_var is not None:
            with no_grad():
                running_mean.mul_(1.0 - momentum).add_(batch_mean.reshape(-1) * momentum)
                running_var.mul_(1.0 - momentum).add_(batch_var.reshape(-1) * (momentum * count / (count - 1)))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("batch_norm: running_mean and running_var must be given when not training")
        centered = input - running_mean.reshape(channel_shape)
        batch_var = running_var.reshape(channel_shape)
    normalized = centered * (batch_var + eps).rsqrt()
    return _affine(normalized,
                   None if weight is None else weight.reshape(channel_shape),
                   None if bias is None else bias.reshape(channel_shape))


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Rows of ``weight`` picked by the integer tensor ``input``: the registry op ``embedding``
    (``EmbeddingBackward0``), whose gradient adds each incoming row into the row it was picked from,
    none into the row ``padding_idx``. The indices are an input of the op, never read as values, so a
    compiled function that calls this compiles, and takes each batch of indices as an argument."""
    return _embedding(input, weight, padding_idx)


# ---- attention ---------------------------------------------------------------------------------------
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(query @ key.T * scale + mask) @ value`` over the last two dimensions, ``scale``
    ``1 / sqrt(E)`` by default; ``is_causal`` lets query ``i`` see keys ``j <= i``. A boolean
    ``attn_mask`` says which positions take part (True), a float one is added to the scores. A query
    whose every key is masked attends to nothing (zeros, as PyTorch's math kernel gives) with a zero
    gradient, not NaN: its scores are replaced by zeros before the softmax, whose row is then zeroed.
    ``enable_gqa`` lets keys and values have fewer heads (dimension -3) than the queries, each serving
    a run of consecutive query heads, as PyTorch's ``repeat_interleave`` does."""
    if enable_gqa:
        key, value = _repeat_heads(key, query.shape[-3]), _repeat_heads(value, query.shape[-3])
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * factor
    if is_causal:
        attn_mask = tensor(np.tril(np.ones((query.shape[-2], key.shape[-2]), dtype=bool)), device=query.device)
    if attn_mask is not None:
        scores = scores.masked_fill(attn_mask.logical_not(), -math.inf) if attn_mask.dtype == bool_ \
            else scores + attn_mask
    weights = _attention_weights(scores)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return weights @ value


def _repeat_heads(x: Tensor, heads: int) -> Tensor:
    """``x.repeat_interleave(heads // x.shape[-3], -3)``, as an expand and a reshape."""
    own = x.shape[-3]
    if heads % own:
        raise RuntimeError("Number of heads in key and value must divide the number of heads in query")
    shape = tuple(x.shape)
    return x.unsqueeze(-3).expand(*shape[:-2], heads // own, *shape[-2:]).reshape(*shape[:-3], heads, *shape[-2:])


def _attention_weights(scores: Tensor) -> Tensor:
    """The softmax of each row, zeros for a row masked everywhere."""
    blind = (scores == -math.inf).all(-1, keepdim=True)
    return where(blind, 0.0, softmax(where(blind, 0.0, scores), -1))


# ---- losses ------------------------------------------------------------------------------------------
def _classes_last(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor, tuple[int, ...]]:
    """An (N, C, d1, ...) input as (N * d1 * ..., C) rows and its targets as one vector, with the
    shape to give a per-element loss back."""
    if input.dim() <= 2:
        return input, target, tuple(target.shape)
    order = (0, *range(2, input.dim()), 1)
    return input.permute(order).reshape(-1, input.shape[1]), target.reshape(-1), tuple(target.shape)


def _picked(values: Tensor, target: Tensor, ignore_index: int) -> Tensor:
    """``values[i, target[i]]`` for every row i: ``nll_loss`` (negated) picks them, checking every
    target against the classes (an ``IndexError`` eagerly and compiled) and taking the targets as
    a tensor input, so a compiled loss runs one program for every batch of labels. ``target`` must
    no longer hold ``ignore_index`` (the caller replaced it): passing it on means that no other
    value is skipped, so a stray -100 under another ``ignore_index`` is refused, not read as 0."""
    return -_nll_loss_op(values, target, reduction="none", ignore_index=ignore_index)


def _weighted_nll(log_probs: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int,
                  reduction: str, label_smoothing: float, shape: tuple[int, ...]) -> Tensor:
    """PyTorch's class-index loss of (N, C) log-probabilities with class weights, ignored targets and
    label smoothing. A sample's weight is ``weight[target]`` (0 where the target is ``ignore_index``);
    "mean" divides by the sum of those weights, as PyTorch does, and the smoothing term (the mean of
    the weighted log-probabilities over the classes) by the same sum, or by the count of kept samples
    when there are no class weights. An ignored sample's terms are 0 whatever its log-probabilities
    (``where``, not a product with its weight 0: a row of NaN, or of -inf logits, a fully masked one,
    made the loss NaN where PyTorch's skips it)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    is_kept = target != ignore_index
    kept = is_kept.to(log_probs.dtype)
    safe_target = where(is_kept, target, 0)
    sample_weight = kept if weight is None else kept * _picked(weight.expand(log_probs.shape), safe_target,
                                                                 ignore_index)
    losses = where(is_kept, -_picked(log_probs, safe_target, ignore_index) * sample_weight, 0.0)
    smooth = None
    if label_smoothing > 0.0:
        spread = log_probs if weight is None else log_probs * weight
        smooth = where(is_kept, -sum(spread, dim=1), 0.0) * (label_smoothing / log_probs.shape[1])
    if reduction == "none":
        return (losses if smooth is None else losses * (1.0 - label_smoothing) + smooth).reshape(shape)
    total = sum(losses)
    if reduction == "mean":
        total = _mean_of(total, sum(sample_weight))
    if smooth is None:
        return total
    smooth_total = sum(smooth)
    if reduction == "mean":
        smooth_total = _mean_of(smooth_total, sum(sample_weight if weight is not None else kept))
    return total * (1.0 - label_smoothing) + smooth_total


def _mean_of(total: Tensor, count: Tensor) -> Tensor:
    """``total / count``: NaN when every target is ignored (``count`` 0), as in PyTorch, whose
    gradient is then 0; the plain quotient's would be 0 / 0, NaN gradients that an optimizer step
    writes into every parameter."""
    nothing_kept = count == 0
    return where(nothing_kept, math.nan, total / where(nothing_kept, 1.0, count))


def _check_class_weight(input: Tensor, weight: Tensor | None, reduction: str) -> None:
    """The class-index losses' ``weight``: no gradient, and the input's dtype (PyTorch refuses a
    float64 weight of float32 log-probabilities, where promoting would change the loss's dtype);
    after ``reduction``, which PyTorch reads first."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if weight is None:
        return
    not_differentiable("nll_loss_forward", weight=weight)
    if weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {scalar_type(input)} but found {scalar_type(weight)} (the class "
                           f"weight of a {input.dtype.name} input: pass weight.to({input.dtype.name}))")


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, ignore_index: int = -100,
             reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of class indices for log-probabilities ``input``, (N, C), (C,) or
    (N, C, d1, ...).

    Without ``weight`` it is jitgrad's ``nll_loss`` op (``NllLossBackward0``, as in PyTorch), which
    skips the targets equal to ``ignore_index`` (-100 by default, any value) and refuses any other
    target outside the classes with an ``IndexError``; with ``weight``, a composite that honours both."""
    _check_class_weight(input, weight, reduction)
    if weight is None:
        if input.dim() <= 2:
            return _nll_loss_op(input, target, reduction=reduction, ignore_index=ignore_index)
        rows, targets, shape = _classes_last(input, target)
        loss = _nll_loss_op(rows, targets, reduction=reduction, ignore_index=ignore_index)
        return loss.reshape(shape) if reduction == "none" else loss
    if input.dim() == 1:
        return nll_loss(input.unsqueeze(0), target.reshape(1), weight, ignore_index, reduction).reshape(())
    rows, targets, shape = _classes_last(input, target)
    return _weighted_nll(rows, targets, weight, ignore_index, reduction, 0.0, shape)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy of logits ``input`` ((N, C), (C,) or (N, C, d1, ...)) against class indices or
    class probabilities of the input's shape (such as one-hot rows).

    Class indices without ``weight`` or ``label_smoothing`` are ``log_softmax`` then the ``nll_loss``
    op, as in PyTorch, which skips the targets equal to ``ignore_index``."""
    if input.dim() == 0:
        raise ValueError("cross_entropy: expected input of shape (N, C) or (C,), got a 0-d tensor")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.dim() == 1 else 1
    log_probs = log_softmax(input, dim=class_dim)
    if target.is_floating_point():
        if ignore_index >= 0:  # PyTorch's test: a negative one, the default -100 included, is let through
            raise RuntimeError(f"cross_entropy: ignore_index is not supported for floating point target (got "
                               f"ignore_index={ignore_index} with {target.dtype.name} class probabilities): "
                               "leave it at its default, or give class indices as an integer tensor")
        return _cross_entropy_of_probabilities(log_probs, target, weight, reduction, label_smoothing, class_dim)
    _check_class_weight(input, weight, reduction)
    if label_smoothing == 0.0:
        return nll_loss(log_probs, target, weight, ignore_index, reduction)
    if input.dim() == 1:
        return cross_entropy(input.unsqueeze(0), target.reshape(1), weight, ignore_index, reduction,
                             label_smoothing).reshape(())
    rows, targets, shape = _classes_last(log_probs, target)
    return _weighted_nll(rows, targets, weight, ignore_index, reduction, label_smoothing, shape)


def _cross_entropy_of_probabilities(log_probs: Tensor, target: Tensor, weight: Tensor | None, reduction: str,
                                    label_smoothing: float, class_dim: int) -> Tensor:
    if tuple(target.shape) != tuple(log_probs.shape):
        raise ValueError(f"cross_entropy: probability targets must have the input's shape "
                         f"{tuple(log_probs.shape)}, got {tuple(target.shape)}")
    classes = log_probs.shape[class_dim]
    if label_smoothing > 0.0 and classes:
        target = target * (1.0 - label_smoothing) + label_smoothing / classes
    if weight is not None:
        target = target * weight.reshape((classes,) + (1,) * (log_probs.dim() - class_dim - 1))
    products = log_probs * target
    count = log_probs.numel() // classes if classes else math.nan  # PyTorch's numel / C: 0 / 0 without classes
    if reduction == "mean" and count:  # PyTorch's -(input * target).sum() / N: a node fewer than mean(-sum(dim))
        return -sum(products) / count
    if reduction == "sum":
        return -sum(products)
    return reduce_loss(-sum(products, dim=class_dim), reduction, "cross_entropy")


def _warn_if_broadcast(input: Tensor, target: Tensor) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", UserWarning, stacklevel=3)


def _weighted(loss: Tensor, weight: Tensor | None, reduction: str, op: str, mean_over_weights: bool) -> Tensor:
    """``weight * loss`` reduced as PyTorch 2.13 reduces it: ``'mean'`` divides the sum by the weights'
    sum for ``mse_loss`` and ``l1_loss`` (``mean_over_weights``), by the element count for
    ``huber_loss``."""
    if weight is None:
        return reduce_loss(loss, reduction, op)
    if tuple(weight.shape) != tuple(loss.shape):
        raise ValueError("Weights and input must have the same size.")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    weighted = loss * weight
    if reduction == "mean" and mean_over_weights:
        return sum(weighted) / sum(weight)
    return reduce_loss(weighted, reduction, op)


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    _warn_if_broadcast(input, target)
    diff = input - target
    return _weighted(diff * diff, weight, reduction, "mse_loss", True)


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    _warn_if_broadcast(input, target)
    return _weighted((input - target).abs(), weight, reduction, "l1_loss", True)


def smooth_l1_loss(input: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta``; ``l1_loss`` at ``beta=0``."""
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _warn_if_broadcast(input, target)
    diff = input - target
    size = diff.abs()
    if beta == 0:
        return reduce_loss(size, reduction, "smooth_l1_loss")
    near = diff.clamp(-beta, beta)   # the quadratic branch's: its untaken gradient at an infinite diff is 0, not NaN
    return reduce_loss(where(size < beta, near * near * (0.5 / beta), size - 0.5 * beta), reduction, "smooth_l1_loss")


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``."""
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _warn_if_broadcast(input, target)
    diff = input - target
    size = diff.abs()
    near = diff.clamp(-delta, delta)   # as smooth_l1_loss's: no 0 * inf from the untaken quadratic branch
    loss = where(size < delta, near * near * 0.5, (size - 0.5 * delta) * delta)
    return _weighted(loss, weight, reduction, "huber_loss", False)


def kl_div(input: Tensor, target: Tensor, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """``xlogy(target, target) - target * input`` for log-probabilities ``input``, as PyTorch: 0 where
    ``target`` is 0, NaN where it is negative (not a probability); ``exp(target) * (target - input)``
    when ``log_target``. Where the target is 0 its own gradient is ``-input`` (no log(0) is taken, so
    no numpy warning), where PyTorch's is NaN. ``'batchmean'`` divides the sum by the
    batch size, the divergence's definition; ``'mean'`` divides by every element and warns, as PyTorch."""
    if log_target:
        pointwise = target.exp() * (target - input)
    else:
        pointwise = target * (where(target == 0, 1.0, target).log() - input)
    if reduction == "batchmean":
        return sum(pointwise) / (input.shape[0] if input.dim() else 1)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    return reduce_loss(pointwise, reduction, "kl_div")


# ---- distances and encodings ---------------------------------------------------------------------------
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / (|x1| |x2|)`` along ``dim``, as PyTorch computes it: the inputs broadcast first
    (``dim`` counts in the broadcast shape), and each norm is raised to at least ``eps`` as a
    constant, so that the gradient flows through the norm itself (zero at a zero vector), not
    through the clamp (PyTorch clamps in place without recording it)."""
    shape = broadcast_shapes("cosine_similarity", (tuple(x1.shape), tuple(x2.shape)))
    x1, x2 = x1.expand(*shape), x2.expand(*shape)
    n1, n2 = norm(x1, 2, dim, keepdim=True), norm(x2, 2, dim, keepdim=True)
    n1 = n1 + (n1.clamp(min=eps) - n1).detach()
    n2 = n2 + (n2.clamp(min=eps) - n2).detach()
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """The ``p``-norm of ``x1 - x2 + eps`` along the last dimension: ``norm``'s, so ``p=0`` counts the
    nonzero differences and a zero difference has a zero gradient, as in PyTorch."""
    return norm(x1 - x2 + eps, p, -1, keepdim=keepdim)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """An int64 tensor of one more dimension, of size ``num_classes`` (one more than the largest
    class when -1), with a 1 at each class index. Eagerly the indices are read as values, for
    PyTorch's checks and, with -1, the size. Traced (``jitgrad.compile``) with ``num_classes`` given,
    nothing reads them: the result is the rows of an identity picked by ``embedding``, whose kernel
    refuses a class outside ``[0, num_classes)`` with an ``IndexError`` ("index out of range"), so
    the function compiles and takes each batch of labels as an input; with -1 it runs eagerly."""
    if tensor.dtype != int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes >= 0 and observed():
        return _embedding(tensor, eye(num_classes, dtype=int64, device=tensor.device), None)
    values = tensor.detach().cpu().numpy()
    if values.size and values.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        if not values.size:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(values.max()) + 1
    elif values.size and values.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return (tensor.unsqueeze(-1) == arange(num_classes, device=tensor.device)).to(int64)


_BCE_EPSILON = 9.999999960041972e-13  # PyTorch's 1e-12, a float32 constant


class _BinaryCrossEntropy(Function):
    """The elementwise loss ``-(t log(x) + (1 - t) log(1 - x))``, each log clamped at -100, with
    PyTorch's gradients: ``(x - t) / max(x (1 - x), 1e-12)`` for the probabilities, and
    ``log1p(-x) - log(x)`` for the targets, not clamped (so infinite at a probability of exactly 0
    or 1, and past 100 below e^-100, as PyTorch's). The composite's own gradient for the
    probabilities would be NaN at exactly 0 or 1 (0 / 0 under the clamp), which a float32 sigmoid
    reaches from logits of about 17 on; PyTorch's stays finite there."""

    @staticmethod
    def forward(ctx, input: Tensor, target: Tensor) -> Tensor:  # noqa: ANN001 - ctx as autograd gives it
        log_p, log_not_p = input.log().clamp(min=-100.0), (1.0 - input).log().clamp(min=-100.0)
        ctx.save_for_backward(input, target)
        return -(target * log_p + (1.0 - target) * log_not_p)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor | None, Tensor | None]:  # noqa: ANN001
        input, target = ctx.saved_tensors
        grad_input = grad * (input - target) / (input * (1.0 - input)).clamp(min=_BCE_EPSILON) \
            if ctx.needs_input_grad[0] else None
        grad_target = grad * ((-input).log1p() - input.log()) if ctx.needs_input_grad[1] else None
        return grad_input, grad_target


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         reduction: str = "mean") -> Tensor:
    """``-(t log(x) + (1 - t) log(1 - x))`` of probabilities ``input``, each log clamped at -100 as
    PyTorch clamps it (so a probability of exactly 0 or 1 gives a finite loss, and a finite gradient)."""
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {scalar_type(target)} but expected {scalar_type(input)} "
                           f"(binary_cross_entropy: pass target.to({input.dtype.name}))")
    not_differentiable("binary_cross_entropy", weight=weight)
    losses = _BinaryCrossEntropy.apply(input, target)
    if weight is not None:   # in the loss's dtype, as PyTorch's in-place product keeps it
        losses = losses * weight.to(losses.dtype)
    return reduce_loss(losses, reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """``binary_cross_entropy(sigmoid(input), target)`` computed stably from the logits: ``(1 - t) x +
    softplus(-x)``, the softplus weighted by ``1 + (pos_weight - 1) t`` when ``pos_weight`` is given."""
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    not_differentiable("binary_cross_entropy_with_logits", weight=weight, pos_weight=pos_weight)
    losses = (1.0 - target) * input   # the weights in its dtype, as PyTorch's in-place products keep it
    if pos_weight is not None:
        losses = losses + ((pos_weight.to(losses.dtype) - 1.0) * target + 1.0) * softplus(-input)
    else:
        losses = losses + softplus(-input)
    if weight is not None:
        losses = losses * weight.to(losses.dtype)
    return reduce_loss(losses, reduction, "binary_cross_entropy_with_logits")
