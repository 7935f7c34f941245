"""``RMSprop``, step for step as PyTorch's ``torch.optim.RMSprop`` computes it."""
from __future__ import annotations

from typing import Any, Iterable

from ..factories import tensor, zeros_like
from ..tensor import Tensor
from .optimizer import Optimizer


class RMSprop(Optimizer):
    """``v = α v + (1 - α) g²`` and ``p -= lr * g / (sqrt(v) + eps)``; ``centered`` subtracts the
    square of the running mean gradient from ``v`` first, ``momentum`` accumulates the update in a
    buffer. State per parameter: ``step``, ``square_avg``, and ``momentum_buffer``/``grad_avg`` when used."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0, centered: bool = False, *,
                 maximize: bool = False) -> None:
        for name, value in (("learning rate", lr), ("epsilon value", eps), ("momentum value", momentum),
                            ("weight_decay value", weight_decay), ("alpha value", alpha)):
            if value < 0.0:
                raise ValueError(f"Invalid {name}: {value}")
        super().__init__(params, {"lr": lr, "alpha": alpha, "eps": eps, "weight_decay": weight_decay,
                                  "momentum": momentum, "centered": centered, "maximize": maximize})

    def _update(self, param: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        if not state:
            state["step"] = tensor(0.0)
            state["square_avg"] = zeros_like(param)
            if group["momentum"] > 0:
                state["momentum_buffer"] = zeros_like(param)
            if group["centered"]:
                state["grad_avg"] = zeros_like(param)
        state["step"].add_(1)  # a tensor, as PyTorch keeps it: a compiled step reads and writes it
        alpha = group["alpha"]
        grad = self._gradient(param, group)
        square_avg = state["square_avg"]
        square_avg.mul_(alpha).add_(grad * grad, alpha=1 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg.mul_(alpha).add_(grad, alpha=1 - alpha)
            average = (square_avg - grad_avg * grad_avg).sqrt() + group["eps"]
        else:
            average = square_avg.sqrt() + group["eps"]
        if group["momentum"] > 0:
            buffer = state["momentum_buffer"]
            buffer.mul_(group["momentum"]).add_(grad / average)
            param.sub_(group["lr"] * buffer)
        else:
            param.sub_(group["lr"] * (grad / average))


__all__ = ["RMSprop"]
