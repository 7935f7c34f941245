"""Learning-rate schedules, as PyTorch's ``torch.optim.lr_scheduler``: each ``step()`` (once per epoch,
after ``optimizer.step()``) writes a new ``lr`` into every parameter group.

A scheduler counts its steps in ``last_epoch`` (-1 before the first; making it takes step 0) and
remembers each group's starting rate as ``group["initial_lr"]``. ``StepLR`` and
``CosineAnnealingLR`` compute the new rate from the group's current one, as PyTorch does, so a
rate changed by hand between steps carries on from where it was set.
"""
from __future__ import annotations

import math
import types
from typing import Any, Callable

from .optimizer import Optimizer


class LRScheduler:
    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        for index, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"param 'initial_lr' is not specified in param_groups[{index}] when resuming an "
                               "optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self.step()

    def get_lr(self) -> list[float]:
        """The rates for step ``last_epoch``, one per group."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The rates the last ``step()`` set, one per group."""
        return self._last_lr

    def step(self) -> None:
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer (whose state is saved with its own ``state_dict()``)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)


class StepLR(LRScheduler):
    """The rate times ``gamma`` every ``step_size`` steps."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        scale = self.gamma if self.last_epoch != 0 and self.last_epoch % self.step_size == 0 else 1.0
        return [group["lr"] * scale for group in self.optimizer.param_groups]


class CosineAnnealingLR(LRScheduler):
    """From the initial rate down to ``eta_min`` along half a cosine over ``T_max`` steps (and back up
    over the next ``T_max``): ``eta_min + (initial - eta_min) (1 + cos(pi t / T_max)) / 2``, reached
    step by step from the current rate."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,  # noqa: N803 - PyTorch's name
                 last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, period, low = self.last_epoch, self.T_max, self.eta_min
        groups = self.optimizer.param_groups
        if t == 0 or self._step_count == 1:  # made (with last_epoch or not): the rates stay as they are,
            return [group["lr"] for group in groups]  # a resumed optimizer's loaded ones (PyTorch 2.13)
        if (t - 1 - period) % (2 * period) == 0:  # the bottom of the cosine: where the ratio below is 0/0
            return [group["lr"] + (base - low) * (1 - math.cos(math.pi / period)) / 2
                    for base, group in zip(self.base_lrs, groups)]
        ratio = (1 + math.cos(math.pi * t / period)) / (1 + math.cos(math.pi * (t - 1) / period))
        return [ratio * (group["lr"] - low) + low for group in groups]


class LambdaLR(LRScheduler):
    """The initial rate times ``lr_lambda(step)`` (one function, or one per group)."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        groups = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != groups:
                raise ValueError(f"Expected {groups} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * groups
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * rule(self.last_epoch) for base, rule in zip(self.base_lrs, self.lr_lambdas)]

    def state_dict(self) -> dict[str, Any]:
        """Functions are not state: saved as None (a callable object's attributes are saved instead)."""
        state = {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(rule, types.FunctionType) else dict(vars(rule))
                               for rule in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        saved_rules = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for rule, saved in zip(self.lr_lambdas, saved_rules):
            if saved is not None:
                vars(rule).update(saved)


__all__ = ["CosineAnnealingLR", "LRScheduler", "LambdaLR", "StepLR"]
