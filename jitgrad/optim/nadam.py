"""``NAdam`` (Adam with Nesterov momentum), step for step as PyTorch's ``torch.optim.NAdam``."""
from __future__ import annotations

from typing import Any, Iterable

from ..dtypes import float32, float64
from ..factories import tensor, zeros_like
from ..tensor import Tensor
from .optimizer import Optimizer
from .radam import check_adam_arguments


class NAdam(Optimizer):
    """Adam's moments with a momentum schedule ``μ_t = β1 (1 - 0.5 · 0.96^(t · momentum_decay))``:
    ``p -= lr (1 - μ_t) / (1 - Πμ) · g / d + lr μ_{t+1} / (1 - Πμ · μ_{t+1}) · m / d`` with
    ``d = sqrt(v / (1 - β2ᵗ)) + eps``. The running product ``mu_product`` is a 0-d float32 tensor of
    the state, rounded there as PyTorch rounds it. ``weight_decay`` is L2, or decoupled with
    ``decoupled_weight_decay`` (NAdamW). State per parameter: ``step``, ``mu_product``, ``exp_avg``,
    ``exp_avg_sq``."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 maximize: bool = False) -> None:
        check_adam_arguments(lr, betas, eps, weight_decay)
        if momentum_decay < 0.0:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                                  "maximize": maximize})

    def _update(self, param: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        if not state:
            state["step"] = tensor(0.0)
            state["mu_product"] = tensor(1.0)
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
        state["step"].add_(1)
        step = state["step"].to(float64)
        lr, (beta1, beta2) = group["lr"], group["betas"]
        grad = self._gradient(param, group, decoupled=group["decoupled_weight_decay"])
        decay = group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * decay))
        state["mu_product"].mul_(mu.to(float32))  # PyTorch's float32 product of a float32 tensor and a number
        mu_product = state["mu_product"].to(float64)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
        denominator = (exp_avg_sq / (1 - beta2 ** step)).sqrt() + group["eps"]
        param.sub_(grad / denominator * (lr * (1.0 - mu) / (1.0 - mu_product)))
        param.sub_(exp_avg / denominator * (lr * mu_next / (1.0 - mu_product * mu_next)))


__all__ = ["NAdam"]
