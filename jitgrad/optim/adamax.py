"""``Adamax`` (Adam with an infinity norm), step for step as PyTorch's ``torch.optim.Adamax``."""
from __future__ import annotations

from typing import Any, Iterable

from ..dtypes import float64
from ..factories import tensor, zeros_like
from ..ops import maximum
from ..tensor import Tensor
from .optimizer import Optimizer
from .radam import check_adam_arguments


class Adamax(Optimizer):
    """``m = β1 m + (1 - β1) g``, ``u = max(β2 u, |g| + eps)`` and ``p -= lr / (1 - β1ᵗ) · m / u``;
    ``weight_decay`` adds ``weight_decay * p`` to the gradient. State per parameter: ``step``,
    ``exp_avg``, ``exp_inf``."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0, *,
                 maximize: bool = False) -> None:
        check_adam_arguments(lr, betas, eps, weight_decay)
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "maximize": maximize})

    def _update(self, param: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        if not state:
            state["step"] = tensor(0.0)
            state["exp_avg"] = zeros_like(param)
            state["exp_inf"] = zeros_like(param)
        state["step"].add_(1)
        lr, (beta1, beta2) = group["lr"], group["betas"]
        grad = self._gradient(param, group)
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        exp_inf.copy_(maximum(exp_inf * beta2, grad.abs() + group["eps"]))
        step_size = lr / (1 - beta1 ** state["step"].to(float64))
        param.sub_(exp_avg / exp_inf * step_size)


__all__ = ["Adamax"]
