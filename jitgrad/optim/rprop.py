"""``Rprop`` (resilient backpropagation), step for step as PyTorch's ``torch.optim.Rprop``."""
from __future__ import annotations

from typing import Any, Iterable

from ..factories import full_like, tensor, zeros_like
from ..ops import where
from ..tensor import Tensor
from .optimizer import Optimizer


class Rprop(Optimizer):
    """Each element moves by its own step size against the sign of its gradient; the step grows by
    ``etas[1]`` while the gradient keeps its sign and shrinks by ``etas[0]`` when it flips (that
    element then skips the step, and its gradient counts as 0 next time), within ``step_sizes``.
    Full-batch training only, as in PyTorch. The sign cases are ``where``s (PyTorch's capturable
    form), so a compiled step holds no masked writes. State per parameter: ``step``, ``prev`` (the
    last gradient) and ``step_size`` (``lr`` at first)."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2), step_sizes: tuple[float, float] = (1e-6, 50), *,
                 maximize: bool = False) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, {"lr": lr, "etas": etas, "step_sizes": step_sizes, "maximize": maximize})

    def _update(self, param: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        if not state:
            state["step"] = tensor(0.0)
            state["prev"] = zeros_like(param)
            state["step_size"] = full_like(param, group["lr"])
        state["step"].add_(1)
        (eta_minus, eta_plus), (smallest, largest) = group["etas"], group["step_sizes"]
        grad = -param.grad if group["maximize"] else param.grad
        sign = (grad * state["prev"]).sign()
        # the grad's dtype for the factors: a where of two numbers would be float32 (1.2 rounded)
        factor = where(sign > 0, full_like(sign, eta_plus), where(sign < 0, eta_minus, full_like(sign, 1.0)))
        step_size = state["step_size"]
        step_size.copy_((step_size * factor).clamp(smallest, largest))
        grad = where(factor == eta_minus, 0.0, grad)
        param.sub_(grad.sign() * step_size)
        state["prev"].copy_(grad)


__all__ = ["Rprop"]
