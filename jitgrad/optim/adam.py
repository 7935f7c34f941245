"""``Adam`` and ``AdamW`` (Adam with decoupled weight decay), step for step as PyTorch computes them
(its default, single-tensor form), ``amsgrad`` and ``maximize`` included."""
from __future__ import annotations

from typing import Any, Iterable

from ..dtypes import float64
from ..factories import tensor, zeros_like
from ..ops import maximum
from ..tensor import Tensor
from .optimizer import Optimizer


class Adam(Optimizer):
    """Moments ``m = β1 m + (1 - β1) g`` and ``v = β2 v + (1 - β2) g²``, and the update
    ``p -= lr / (1 - β1ᵗ) * m / (sqrt(v) / sqrt(1 - β2ᵗ) + eps)``. ``weight_decay`` adds
    ``weight_decay * p`` to the gradient (L2); ``decoupled_weight_decay`` (AdamW) shrinks ``p`` by
    ``lr * weight_decay`` instead. State per parameter: ``step`` (a 0-d float32 tensor, as PyTorch
    keeps it), ``exp_avg``, ``exp_avg_sq`` and, with ``amsgrad``, ``max_exp_avg_sq``."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 amsgrad: bool = False, *, maximize: bool = False, decoupled_weight_decay: bool = False) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for index, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {index}: {beta}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "amsgrad": amsgrad, "maximize": maximize,
                                  "decoupled_weight_decay": decoupled_weight_decay})

    def _state(self, param: Tensor, amsgrad: bool) -> dict[str, Any]:
        state = self.state[param]
        if not state:
            state["step"] = tensor(0.0)
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
            if amsgrad:
                state["max_exp_avg_sq"] = zeros_like(param)
        return state

    def _update(self, param: Tensor, group: dict[str, Any]) -> None:
        state = self._state(param, group["amsgrad"])
        state["step"].add_(1)
        step = state["step"].to(float64)  # PyTorch takes the count as a Python float: float64
        lr, (beta1, beta2) = group["lr"], group["betas"]
        grad = self._gradient(param, group, decoupled=group["decoupled_weight_decay"])
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
        if group["amsgrad"]:
            state["max_exp_avg_sq"].copy_(maximum(state["max_exp_avg_sq"], exp_avg_sq))
            exp_avg_sq = state["max_exp_avg_sq"]
        step_size = lr / (1 - beta1 ** step)
        denominator = exp_avg_sq.sqrt() / (1 - beta2 ** step).sqrt() + group["eps"]
        param.sub_(exp_avg / denominator * step_size)

class AdamW(Adam):
    """Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` before the Adam step), 0.01
    by default."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2,
                 amsgrad: bool = False, *, maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)


__all__ = ["Adam", "AdamW"]
