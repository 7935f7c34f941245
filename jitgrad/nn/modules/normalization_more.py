"""``RMSNorm`` (per sample, scale only), ``InstanceNorm1d``/``2d`` (per sample and channel) and
``LocalResponseNorm`` (across neighbouring channels): the normalization layers beside
``normalization.py``'s, over the functions of ``nn/normalization_functions.py``."""
from __future__ import annotations

import warnings
from typing import Sequence

from ...dtypes import dtype as DType
from ...dtypes import int64
from ...factories import ones, tensor, zeros
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import new_parameter
from .module import Module


class RMSNorm(Module):
    """``weight`` (ones) of ``normalized_shape`` when ``elementwise_affine``; ``eps=None`` takes the
    input dtype's machine epsilon at each call, as PyTorch."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True, device: str | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.register_parameter("weight", new_parameter(*self.normalized_shape, device=device, dtype=dtype)
                                if elementwise_affine else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class _InstanceNorm(Module):
    """Normalizes each channel of each sample over its spatial dimensions. ``affine`` adds ``weight``
    and ``bias`` (unless ``bias=False``) per channel; ``track_running_stats`` keeps
    ``running_mean``/``running_var`` (and PyTorch's ``num_batches_tracked``, which instance norm
    leaves at 0), used in ``eval()``. Both are off by default, as in PyTorch. An input without the
    batch dimension is taken as one sample."""

    _input_dims: tuple[int, int] = (0, 0)  # (unbatched, batched)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device: str | None = None, dtype: DType | None = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.register_parameter("weight", new_parameter(num_features, device=device, dtype=dtype) if affine else None)
        self.register_parameter("bias", new_parameter(num_features, device=device, dtype=dtype)
                                if affine and bias else None)
        running = track_running_stats
        self.register_buffer("running_mean", zeros(num_features, dtype=dtype, device=device) if running else None)
        self.register_buffer("running_var", ones(num_features, dtype=dtype, device=device) if running else None)
        self.register_buffer("num_batches_tracked", tensor(0, dtype=int64, device=device) if running else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        unbatched, batched = self._input_dims
        if input.dim() not in self._input_dims:
            raise ValueError(f"expected {unbatched}D or {batched}D input (got {input.dim()}D input)")
        feature_dim = input.dim() - unbatched  # 0 unbatched, 1 batched
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        batch = input if input.dim() == batched else input.unsqueeze(0)
        out = F.instance_norm(batch, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              0.0 if self.momentum is None else self.momentum, self.eps)
        return out if input.dim() == batched else out.squeeze(0)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Over an (N, C, L) or (C, L) input."""

    _input_dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Over an (N, C, H, W) or (C, H, W) input."""

    _input_dims = (3, 4)


class LocalResponseNorm(Module):
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


__all__ = ["InstanceNorm1d", "InstanceNorm2d", "LocalResponseNorm", "RMSNorm"]
