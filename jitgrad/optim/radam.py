"""``RAdam`` (rectified Adam), step for step as PyTorch's ``torch.optim.RAdam`` computes it."""
from __future__ import annotations

from typing import Any, Iterable

from ..dtypes import float64
from ..factories import tensor, zeros_like
from ..ops import where
from ..tensor import Tensor
from .optimizer import Optimizer


def check_adam_arguments(lr: float, betas: tuple[float, float], eps: float, weight_decay: float) -> None:
    """PyTorch's checks of the settings the Adam family shares, with its messages."""
    if lr < 0.0:
        raise ValueError(f"Invalid learning rate: {lr}")
    if eps < 0.0:
        raise ValueError(f"Invalid epsilon value: {eps}")
    for index, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {index}: {beta}")
    if weight_decay < 0.0:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class RAdam(Optimizer):
    """Adam's moments, with the adaptive step switched on only once the variance of its rate is
    tractable: while the length of the approximated simple moving average ``rho_t`` is at most 5
    the update is the bias-corrected momentum ``lr * m / (1 - β1ᵗ)``, after it that times
    ``sqrt(1 - β2ᵗ) / (sqrt(v) + eps)`` and the rectification ``r_t``. The switch is a ``where`` on
    the step count (PyTorch's capturable form), not a Python branch, so a compiled step holding it
    runs one program from the first step on. ``weight_decay`` is L2, or decoupled (AdamW's) with
    ``decoupled_weight_decay``. State per parameter: ``step`` (0-d float32), ``exp_avg``, ``exp_avg_sq``."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 decoupled_weight_decay: bool = False, *, maximize: bool = False) -> None:
        check_adam_arguments(lr, betas, eps, weight_decay)
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "maximize": maximize, "decoupled_weight_decay": decoupled_weight_decay})

    def _update(self, param: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        if not state:
            state["step"] = tensor(0.0)
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
        state["step"].add_(1)
        step = state["step"].to(float64)  # PyTorch reads the count as a Python float: float64
        lr, (beta1, beta2) = group["lr"], group["betas"]
        grad = self._gradient(param, group, decoupled=group["decoupled_weight_decay"])
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
        bias_correction2 = 1 - beta2 ** step
        momentum = exp_avg / (1 - beta1 ** step) * lr
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        rectification = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)).clamp(min=0)
        adaptive = bias_correction2.sqrt() / (exp_avg_sq.sqrt() + group["eps"])
        param.sub_(where(rho_t > 5.0, momentum * adaptive * rectification.sqrt(), momentum))


__all__ = ["RAdam", "check_adam_arguments"]
