"""``Adadelta``, step for step as PyTorch's ``torch.optim.Adadelta`` computes it."""
from __future__ import annotations

from typing import Any, Iterable

from ..factories import tensor, zeros_like
from ..tensor import Tensor
from .optimizer import Optimizer


class Adadelta(Optimizer):
    """``v = ρ v + (1 - ρ) g²``, the step ``Δ = sqrt(u + eps) / sqrt(v + eps) · g``, ``u = ρ u + (1 - ρ)
    Δ²`` and ``p -= lr Δ``: a rate in the units of the parameters, ``lr`` 1 by default.
    ``weight_decay`` adds ``weight_decay * p`` to the gradient. State per parameter: ``step``,
    ``square_avg`` and ``acc_delta``."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0, *, maximize: bool = False) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                                  "maximize": maximize})

    def _update(self, param: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        if not state:
            state["step"] = tensor(0.0)
            state["square_avg"] = zeros_like(param)
            state["acc_delta"] = zeros_like(param)
        state["step"].add_(1)
        rho, eps = group["rho"], group["eps"]
        grad = self._gradient(param, group)
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg.mul_(rho).add_(grad * grad, alpha=1 - rho)
        delta = (acc_delta + eps).sqrt() / (square_avg + eps).sqrt() * grad
        acc_delta.mul_(rho).add_(delta * delta, alpha=1 - rho)
        param.sub_(group["lr"] * delta)


__all__ = ["Adadelta"]
