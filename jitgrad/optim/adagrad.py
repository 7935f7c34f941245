"""``Adagrad``, step for step as PyTorch's ``torch.optim.Adagrad`` computes it (its default,
single-tensor form)."""
from __future__ import annotations

from typing import Any, Iterable

from ..dtypes import float64
from ..factories import full_like, tensor
from ..tensor import Tensor
from .optimizer import Optimizer


class Adagrad(Optimizer):
    """``s += g²`` and ``p -= clr * g / (sqrt(s) + eps)`` with ``clr = lr / (1 + (t - 1) lr_decay)``;
    ``weight_decay`` adds ``weight_decay * p`` to the gradient. State per parameter, made with the
    optimizer as PyTorch makes it (so ``state_dict()`` holds it before the first step): ``step`` (a
    0-d float32 tensor) and ``sum`` (starting at ``initial_accumulator_value``)."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0, eps: float = 1e-10, *,
                 maximize: bool = False) -> None:
        for name, value in (("learning rate", lr), ("lr_decay value", lr_decay),
                            ("weight_decay value", weight_decay),
                            ("initial_accumulator_value value", initial_accumulator_value), ("epsilon value", eps)):
            if value < 0.0:
                raise ValueError(f"Invalid {name}: {value}")
        super().__init__(params, {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                                  "initial_accumulator_value": initial_accumulator_value, "maximize": maximize})
        for group in self.param_groups:
            for param in group["params"]:
                self._init_state(param, group)

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        state["step"] = tensor(0.0)
        state["sum"] = full_like(param, group["initial_accumulator_value"])

    def _update(self, param: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        if not state:  # a group added with add_param_group: its state is made at its first step, as PyTorch's
            self._init_state(param, group)
            state = self.state[param]
        state["step"].add_(1)
        grad = self._gradient(param, group)
        lr = group["lr"]
        if group["lr_decay"] != 0:  # PyTorch takes the count as a Python float: float64
            lr = lr / (1 + (state["step"].to(float64) - 1) * group["lr_decay"])
        state["sum"].add_(grad * grad)
        param.sub_(grad / (state["sum"].sqrt() + group["eps"]) * lr)


__all__ = ["Adagrad"]
