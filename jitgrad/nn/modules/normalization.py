"""``LayerNorm`` (per sample, over its last dimensions), ``GroupNorm`` (per sample and group of
channels) and ``BatchNorm1d``/``2d``/``3d`` (per channel, over the batch and any spatial dimensions,
with running statistics kept as buffers for evaluation)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ...dtypes import dtype as DType
from ...dtypes import int64
from ...factories import ones, tensor, zeros
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import new_parameter
from .module import Module


def _scale_and_shift(module: Module, shape: tuple[int, ...], affine: bool, bias: bool, device: str | None,
                     dtype: DType | None) -> None:
    """A normalization's ``weight`` and ``bias`` of ``shape`` (the bias only with ``bias``), each None
    where the layer has none, as PyTorch registers them."""
    module.register_parameter("weight", new_parameter(*shape, device=device, dtype=dtype) if affine else None)
    module.register_parameter("bias", new_parameter(*shape, device=device, dtype=dtype) if affine and bias else None)


def _reset_scale_and_shift(module: Module) -> None:
    """``weight`` to ones and ``bias`` to zeros, where the layer has them."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class LayerNorm(Module):
    """``weight`` (ones) and ``bias`` (zeros) of ``normalized_shape`` when ``elementwise_affine``."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device: str | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _scale_and_shift(self, self.normalized_shape, elementwise_affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_scale_and_shift(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """``num_channels`` split into ``num_groups`` groups, each normalized per sample; ``weight`` (ones)
    and ``bias`` (zeros) per channel when ``affine``."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: str | None = None, dtype: DType | None = None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        _scale_and_shift(self, (num_channels,), affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_scale_and_shift(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _BatchNorm(Module):
    """Normalizes each of ``num_features`` channels (dimension 1). In training it uses the batch's
    statistics and updates the buffers ``running_mean`` and ``running_var`` in place (``momentum`` of
    the batch's; with ``momentum=None`` the average of all batches so far, counted by the buffer
    ``num_batches_tracked``); in ``eval()`` it uses the running statistics. The three public classes
    differ only in the input dimensions they accept, as in PyTorch."""

    _input_dims: tuple[int, ...] = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: str | None = None, dtype: DType | None = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _scale_and_shift(self, (num_features,), affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_scale_and_shift(self)

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in self._input_dims:
            expected = " or ".join(f"{d}D" for d in self._input_dims)
            raise ValueError(f"expected {expected} input (got {input.dim()}D input)")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative average: the count read as a number
                factor = 1.0 / float(self.num_batches_tracked)
        use_batch_stats = self.training or self.running_mean is None
        keep_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep_running else None,
                            self.running_var if keep_running else None, self.weight, self.bias,
                            use_batch_stats, factor, self.eps)

    def _load_from_state_dict(self, state_dict: Mapping[str, Any], prefix: str, missing_keys: list[str],
                              unexpected_keys: list[str], error_msgs: list[str]) -> None:
        """A state dict without ``num_batches_tracked`` (older PyTorch ones) keeps the current count,
        as PyTorch does, rather than reporting it missing."""
        key = prefix + "num_batches_tracked"
        if self.track_running_stats and key not in state_dict:
            state_dict = {**state_dict, key: self.num_batches_tracked}
        super()._load_from_state_dict(state_dict, prefix, missing_keys, unexpected_keys, error_msgs)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Over an (N, C) or (N, C, L) input."""

    _input_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Over an (N, C, H, W) input: each channel's statistics over the batch and both spatial
    dimensions."""

    _input_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Over an (N, C, D, H, W) input."""

    _input_dims = (5,)


__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm", "LayerNorm"]
