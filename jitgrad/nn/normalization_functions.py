"""The normalizations of ``torch.nn.functional`` beside ``layer_norm``/``group_norm``/``batch_norm``:
``rms_norm`` (scale only, no centring), ``instance_norm`` (per sample and channel, over the spatial
dimensions) and ``local_response_norm`` (each channel divided by its neighbours' energy).

Composites of registry ops (``mean``, ``rsqrt``, ``pad``, slices), so gradients of any order, forward
mode and compiling come from theirs; PyTorch's node names differ (``rms_norm`` ends in
``MulBackward0`` rather than a fused node).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..autograd import no_grad
from ..dtypes import float16, float32
from ..ops.reductions import mean
from ..tensor import Tensor
from .padding import pad


def check_parameter_dtypes(function: str, input: Tensor, *parameters: Tensor | None) -> None:
    """PyTorch's error for a norm's weight, bias or running statistics of another dtype than its
    input (float32 ones may go with a float16 input): jitgrad promoted the pair silently, a float32
    model normalizing a float64 batch in float64 and a float64 model returning a float32 batch's
    result in float64."""
    if not input.dtype.is_floating_point:
        return
    allowed = (input.dtype, float32) if input.dtype == float16 else (input.dtype,)
    for parameter in parameters:
        if parameter is not None and parameter.dtype not in allowed:
            raise RuntimeError(f"{function}: mixed dtype: the input is {input.dtype} but a parameter or running "
                               f"statistic is {parameter.dtype}; convert the module (module.to({input.dtype})) "
                               f"or the input (input.to({parameter.dtype})) so that they share one dtype")


def rms_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """``input / sqrt(mean(input²) + eps) * weight`` over the last ``len(normalized_shape)`` dimensions;
    ``eps`` defaults to the machine epsilon of the input's dtype, as in PyTorch."""
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    count = len(normalized_shape)
    if input.dim() < count or tuple(input.shape[input.dim() - count:]) != normalized_shape:
        expected = ", ".join(str(s) for s in normalized_shape)
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {expected}], but got input of size{list(input.shape)}")
    if eps is None:
        eps = float(np.finfo(input.dtype.numpy).eps)
    dims = tuple(range(-count, 0))
    out = input * (mean(input * input, dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else (out * weight).to(input.dtype)   # PyTorch's: the input's dtype


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Each (sample, channel) of an (N, C, *) input normalized over its spatial dimensions (biased
    variance), then ``weight`` and ``bias`` per channel. With ``use_input_stats`` the running
    statistics, when given, move ``momentum`` towards the batch's average of the instances' means and
    unbiased variances (PyTorch's update: instance norm is its batch norm over N * C channels);
    without, the running statistics normalize."""
    if input.dim() < 3:
        raise ValueError(f"instance_norm: expected an (N, C, *) input of 3 or more dimensions, got "
                         f"{list(input.shape)}")
    check_parameter_dtypes("instance_norm", input, running_mean, running_var, weight, bias)
    dims = tuple(range(2, input.dim()))
    channel_shape = (1, input.shape[1]) + (1,) * (input.dim() - 2)
    if use_input_stats:
        count = int(np.prod(input.shape[2:]))
        if count <= 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {list(input.shape)}")
        instance_mean = mean(input, dims, keepdim=True)
        centered = input - instance_mean
        instance_var = mean(centered * centered, dims, keepdim=True)
        if running_mean is not None and running_var is not None:
            with no_grad():
                running_mean.mul_(1.0 - momentum).add_(mean(instance_mean.reshape(input.shape[:2]), 0) * momentum)
                running_var.mul_(1.0 - momentum).add_(
                    mean(instance_var.reshape(input.shape[:2]), 0) * (momentum * count / (count - 1)))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        centered = input - running_mean.reshape(channel_shape)
        instance_var = running_var.reshape(channel_shape)
    out = centered * (instance_var + eps).rsqrt()
    if weight is not None:
        out = out * weight.reshape(channel_shape)
    if bias is not None:
        out = out + bias.reshape(channel_shape)
    return out


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """``input / (k + alpha / size * sum of input² over the size channels around each)^beta``; the
    window is zero-padded at the ends (``size // 2`` before, ``(size - 1) // 2`` after), as PyTorch's."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {input.dim()} "
                         f"dimensions)")
    if input.numel() == 0:
        return input
    channels = input.shape[1]
    squares = (input * input).reshape(input.shape[0], channels, -1)
    padded = pad(squares, (0, 0, size // 2, (size - 1) // 2))
    window = padded[:, 0:channels]
    for offset in range(1, size):
        window = window + padded[:, offset:offset + channels]
    return input / (window.reshape(tuple(input.shape)) * (alpha / size) + k) ** beta


__all__ = ["instance_norm", "local_response_norm", "rms_norm"]
