"""``ASGD`` (averaged stochastic gradient descent), step for step as PyTorch's ``torch.optim.ASGD``."""
from __future__ import annotations

from typing import Any, Iterable

from ..dtypes import float64
from ..factories import tensor, zeros_like
from ..ops import maximum
from ..tensor import Tensor
from .optimizer import Optimizer


class ASGD(Optimizer):
    """SGD with a decaying rate ``eta = lr / (1 + lambd lr t)^alpha`` (and a decay of the parameters
    by ``1 - lambd eta``), keeping in ``ax`` the average of the parameters from step ``t0`` on
    (``mu = 1 / max(1, t - t0)``). ``eta`` and ``mu`` are 0-d float32 tensors of the state, rounded
    there as PyTorch's; the average is always ``ax += (p - ax) mu`` (PyTorch's capturable form; its
    default copies ``p`` while ``mu`` is 1, which differs only in rounding), so no step reads a
    value back. ``weight_decay`` adds ``weight_decay * p`` to the gradient. State per parameter:
    ``step``, ``eta``, ``mu``, ``ax``."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0, *, maximize: bool = False) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                                  "maximize": maximize})

    def _update(self, param: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        if not state:
            state["step"] = tensor(0.0)
            state["eta"] = tensor(float(group["lr"]))
            state["mu"] = tensor(1.0)
            state["ax"] = zeros_like(param)
        state["step"].add_(1)
        lr, lambd = group["lr"], group["lambd"]
        grad = self._gradient(param, group)
        eta = state["eta"].to(float64)
        param.mul_(1 - lambd * eta)
        param.sub_(grad * eta)
        state["ax"].add_((param - state["ax"]) * state["mu"].to(float64))
        step = state["step"].to(float64)
        state["eta"].copy_(lr / (1 + lambd * lr * step) ** group["alpha"])
        state["mu"].copy_(1 / maximum(step - group["t0"], tensor(1.0, dtype=float64)))


__all__ = ["ASGD"]
