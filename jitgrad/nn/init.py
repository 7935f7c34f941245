"""Weight initialisations, as PyTorch's ``torch.nn.init``: each fills a tensor in place and returns it.

The numbers come from jitgrad's generator (``jitgrad.random``; ``jitgrad.manual_seed`` makes them
repeatable) or from the ``generator`` given: a draw of ``n`` elements takes the generator's state for
``n`` elements and moves it past them, exactly as ``jitgrad.rand``/``randn`` of that size would, so an
initialisation followed by ``rand`` draws the same numbers whichever way they are asked for. Each is
``Tensor.normal_``/``uniform_`` under ``no_grad``: a parameter that requires grad can be filled (on
the CPU or a CUDA device), its version counter records the change, and inside a compiled function the
draw is a random op fed by the call's generator state rather than a constant. (PyTorch's numbers
differ: its generator is another algorithm.)
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from ..autograd import no_grad
from ..factories import empty, randperm
from ..factories import tensor as tensor_of
from ..ops import where
from ..random import Generator
from ..tensor import Tensor

_REDRAWS = 100  # trunc_normal_'s rounds of drawing again the values outside its bounds; a clamp ends any left

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The factor that keeps activations' variance steady through ``nonlinearity`` (PyTorch's table)."""
    if nonlinearity in _LINEAR or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, numbers.Real) and not isinstance(param, bool):
            slope = float(param)
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """Inputs and outputs per unit: a weight (out, in, *kernel) has fan_in = in * kernel size."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of {['fan_in', 'fan_out']}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Values drawn uniformly from ``[a, b)``."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None) -> Tensor:
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    with no_grad():
        return tensor.zero_()


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Glorot's uniform: bound ``gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float | None:
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    """He's uniform: bound ``gain * sqrt(3 / fan)``. ``Linear`` uses ``a=sqrt(5)``, which makes the
    bound ``1 / sqrt(fan_in)``."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: Generator | None = None) -> Tensor:
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: Generator | None = None) -> Tensor:
    """Normal values kept within ``[a, b]`` (absolute bounds): the values outside are drawn again until
    none is, which is exactly the truncated distribution (PyTorch inverts the CDF; the draws differ,
    the distribution does not)."""
    with no_grad():
        tensor.normal_(mean, std, generator=generator)
        for _ in range(_REDRAWS):
            outside = (tensor < a) | (tensor > b)
            if not bool(outside.any()):
                break
            fresh = tensor.detach().clone().normal_(mean, std, generator=generator)
            tensor.copy_(where(outside, fresh, tensor))
        return tensor.clamp_(a, b)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """A (semi-)orthogonal matrix, of the tensor's first dimension by the rest flattened: the Q of the
    QR decomposition of a normal draw, its columns' signs fixed by R's diagonal, times ``gain``."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    columns = tensor.numel() // rows
    with no_grad():
        values = empty(rows, columns, dtype=tensor.dtype).normal_(0.0, 1.0, generator=generator).numpy()
        values = values.astype(np.float64)
        if rows < columns:
            values = values.T
        q, r = np.linalg.qr(values)
        q = q * np.sign(np.diag(r))
        if rows < columns:
            q = q.T
        tensor.copy_(_like(np.ascontiguousarray(q * gain).reshape(tuple(tensor.shape)), tensor))
        return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Generator | None = None) -> Tensor:
    """A 2-d tensor drawn from ``normal(0, std)`` with ``ceil(sparsity * rows)`` elements of each
    column, at rows of a random permutation, set to zero."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, columns = tuple(tensor.shape)
    zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0.0, std, generator=generator)
        keep = np.ones((rows, columns))
        for column in range(columns):
            keep[randperm(rows, generator=generator).numpy()[:zeros], column] = 0.0
        tensor.mul_(_like(keep, tensor))
        return tensor


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (ones on the diagonal of a 2-d tensor of any shape)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        tensor.copy_(_like(np.eye(*tuple(tensor.shape)), tensor))
        return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """A convolution weight that passes its input through: output channel ``d`` of each group reads
    input channel ``d`` at the kernel's centre."""
    if tensor.dim() not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    shape = tuple(tensor.shape)
    if shape[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = shape[0] // groups
    values = np.zeros(shape)
    centre = tuple(n // 2 for n in shape[2:])
    for group in range(groups):
        for d in range(min(per_group, shape[1])):
            values[(group * per_group + d, d) + centre] = 1.0
    with no_grad():
        tensor.copy_(_like(values, tensor))
        return tensor


def _like(values: np.ndarray, like: Tensor) -> Tensor:
    """``values`` as a tensor of ``like``'s dtype and device, to copy into it."""
    return tensor_of(values, dtype=like.dtype, device=like.device)


__all__ = ["calculate_gain", "constant_", "dirac_", "eye_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_",
           "orthogonal_", "sparse_", "trunc_normal_", "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_"]
