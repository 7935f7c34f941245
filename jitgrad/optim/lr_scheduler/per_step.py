"""The schedules that set each step's rate by a rule of the step count: from the current rate
(PyTorch's chained form) and, for ``step(epoch)`` and ``SequentialLR``, in closed form."""
from __future__ import annotations

import math
import types
from bisect import bisect_right
from collections import Counter
from typing import Any, Callable

from ..optimizer import Optimizer
from .schedule import LRScheduler


class StepLR(LRScheduler):
    """The rate times ``gamma`` every ``step_size`` steps."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        scale = self.gamma if self.last_epoch != 0 and self.last_epoch % self.step_size == 0 else 1.0
        return [group["lr"] * scale for group in self.optimizer.param_groups]

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


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

    def _closed_form_lr(self) -> list[float]:
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self.base_lrs]


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


class MultiStepLR(LRScheduler):
    """The rate times ``gamma`` at each of the ``milestones`` (twice at a milestone listed twice)."""

    def __init__(self, optimizer: Optimizer, milestones: list[int], gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        scale = self.gamma ** self.milestones[self.last_epoch] if self.last_epoch in self.milestones else 1.0
        return [group["lr"] * scale for group in self.optimizer.param_groups]

    def _closed_form_lr(self) -> list[float]:
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma ** passed for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """The rate times ``gamma`` every step."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        scale = 1.0 if self._is_initial else self.gamma
        return [group["lr"] * scale for group in self.optimizer.param_groups]

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class MultiplicativeLR(LambdaLR):
    """The rate times ``lr_lambda(step)`` every step after the first."""

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * rule(self.last_epoch)
                for group, rule in zip(self.optimizer.param_groups, self.lr_lambdas)]


class ConstantLR(LRScheduler):
    """The rate times ``factor`` for the first ``total_iters`` steps, then the rate itself."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in groups]
        if self.last_epoch != self.total_iters:
            return [group["lr"] for group in groups]
        return [group["lr"] * (1.0 / self.factor) for group in groups]

    def _closed_form_lr(self) -> list[float]:
        return [base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base in self.base_lrs]


class LinearLR(LRScheduler):
    """From ``start_factor`` times the rate to ``end_factor`` times it, in a straight line over
    ``total_iters`` steps: the usual warm-up."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return [group["lr"] for group in groups]
        change = self.end_factor - self.start_factor
        scale = 1.0 + change / (self.total_iters * self.start_factor + (self.last_epoch - 1) * change)
        return [group["lr"] * scale for group in groups]

    def _closed_form_lr(self) -> list[float]:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * done) for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """The rate decayed to zero over ``total_iters`` steps along ``(1 - t / total_iters) ** power``."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        if self._is_initial or self.last_epoch > self.total_iters:
            return [group["lr"] for group in groups]
        scale = ((1.0 - self.last_epoch / self.total_iters)
                 / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [group["lr"] * scale for group in groups]

    def _closed_form_lr(self) -> list[float]:
        left = (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
        return [base * left for base in self.base_lrs]


__all__ = ["ConstantLR", "CosineAnnealingLR", "ExponentialLR", "LambdaLR", "LinearLR", "MultiStepLR",
           "MultiplicativeLR", "PolynomialLR", "StepLR"]
