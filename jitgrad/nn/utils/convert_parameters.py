"""``parameters_to_vector`` and ``vector_to_parameters``: a model's parameters as one flat vector and
back, as PyTorch's ``torch.nn.utils`` spells them (for methods that treat the weights as one point:
line searches, second-order methods, weight averaging)."""
from __future__ import annotations

from typing import Iterable

from ...autograd import no_grad
from ...ops.shape import cat
from ...tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and joined, in order (differentiable, as PyTorch's)."""
    return cat([p.reshape(-1) for p in _checked(parameters, "parameters_to_vector")])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Writes consecutive slices of ``vec`` into the parameters' values, in order."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected jitgrad.Tensor, but got: {type(vec).__name__}")
    start = 0
    with no_grad():
        for param in _checked(parameters, "vector_to_parameters"):
            count = param.numel()
            param.copy_(vec[start:start + count].reshape(tuple(param.shape)))
            start += count


def _checked(parameters: Iterable[Tensor], name: str) -> list[Tensor]:
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    devices = {str(p.device) for p in params}
    if len(devices) > 1:
        raise TypeError(f"{name}: Found two parameters on different devices, this is currently not supported.")
    return params


__all__ = ["parameters_to_vector", "vector_to_parameters"]
