"""``LRScheduler``, the base of the schedules: the step count, each group's starting rate, the step
that making a schedule takes, and ``step(epoch)``'s closed forms."""
from __future__ import annotations

import warnings
from typing import Any

from ..optimizer import Optimizer

EPOCH_DEPRECATION = ("The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
                     "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch "
                     "is different from None, the closed form is used instead of the new chainable form, where "
                     "available.")


class LRScheduler:
    _is_initial = False

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
        self._initial_step()

    def _initial_step(self) -> None:
        """The step a schedule takes when it is made. A resumed schedule (made with ``last_epoch``)
        keeps the loaded rates then: the chained rules below return the current rates while
        ``_is_initial``, as PyTorch's do, rather than moving them one step ahead."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The rates for step ``last_epoch``, one per group."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The rates the last ``step()`` set, one per group."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """The next step's rates; with ``epoch`` (deprecated in PyTorch, with its warning) the rates of
        that step, by the schedule's closed form where it has one."""
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            values = self._closed_form_lr() if hasattr(self, "_closed_form_lr") else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer (whose state is saved with its own ``state_dict()``)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)


def per_group(name: str, optimizer: Optimizer, value: Any) -> list[Any]:
    """``value`` for each parameter group: a list or tuple of one per group, or one for all."""
    groups = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != groups:
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"optimizer.param_groups has {groups} values, {name} has {len(value)} values.")
        return list(value)
    return [value] * groups


__all__ = ["EPOCH_DEPRECATION", "LRScheduler", "per_group"]
