"""``SGD``: stochastic gradient descent with momentum, dampening, weight decay, Nesterov momentum and
``maximize``, step for step as PyTorch's ``torch.optim.SGD`` computes it."""
from __future__ import annotations

from typing import Any, Iterable

from ..tensor import Tensor
from .optimizer import Optimizer


class SGD(Optimizer):
    """``p -= lr * g`` where ``g`` is the gradient (plus ``weight_decay * p``) or, with ``momentum``,
    the buffer ``b = momentum * b + (1 - dampening) * g`` (``g + momentum * b`` with ``nesterov``).
    The buffer starts as the first gradient itself, as in PyTorch."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize})

    def _update(self, param: Tensor, group: dict[str, Any]) -> None:
        grad = self._gradient(param, group)
        momentum = group["momentum"]
        if momentum != 0:
            state = self.state[param]
            buffer = state.get("momentum_buffer")
            if buffer is None:
                buffer = state["momentum_buffer"] = grad.detach().clone()
            else:
                buffer.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
            grad = grad + momentum * buffer if group["nesterov"] else buffer
        param.sub_(group["lr"] * grad)  # not add_(alpha=-lr): an op's attribute would freeze a compiled lr

    def _makes_state(self, param: Tensor, group: dict[str, Any]) -> bool:
        return group["momentum"] != 0 and "momentum_buffer" not in self.state.get(param, {})


__all__ = ["SGD"]
