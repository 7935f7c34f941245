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
import warnings
from bisect import bisect_right
from collections import Counter
from typing import Any, Callable

from .optimizer import Optimizer

_EPOCH_DEPRECATION = ("The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
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
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
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


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the initial rate to ``eta_min`` over ``T_0`` steps, then again from the
    top over a period ``T_mult`` times longer, and so on. ``step(epoch)`` may jump to any (even
    fractional) epoch, as in PyTorch, without the deprecation warning."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1) -> None:
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        self._step_count += 1
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:  # a restart: the next period is T_mult times longer
                self.T_cur %= self.T_i
                self.T_i *= self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch < self.T_0:
            self.T_i, self.T_cur = self.T_0, epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:  # the periods T_0, T_0 m, T_0 m^2 ... end at T_0 (m^n - 1) / (m - 1)
            restarts = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult ** restarts - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult ** restarts
        self.last_epoch = math.floor(epoch)
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


class OneCycleLR(LRScheduler):
    """The 1cycle policy, stepped once per batch: the rate rises from ``max_lr / div_factor`` to
    ``max_lr`` over the first ``pct_start`` of ``total_steps``, then falls to ``initial_lr /
    final_div_factor`` (with ``three_phase``, back to the initial rate first); the momentum (SGD's
    ``momentum``, Adam's first beta) moves the opposite way between ``max_momentum`` and
    ``base_momentum``. Each group keeps ``initial_lr``, ``max_lr``, ``min_lr`` and the momenta."""

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float], total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85, max_momentum: float | list[float] = 0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self.anneal_strategy = anneal_strategy
        rise = float(pct_start * self.total_steps) - 1
        # (last step of the phase, rate from, rate to, momentum from, momentum to), by group keys
        self._phases = [(rise, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                        (float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
                         "max_momentum"),
                        (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")] \
            if three_phase else [(rise, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                                 (self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        groups = optimizer.param_groups
        if last_epoch == -1:
            for group, top in zip(groups, _per_group("max_lr", optimizer, max_lr)):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            if last_epoch == -1:
                for group, top, low in zip(groups, _per_group("max_momentum", optimizer, max_momentum),
                                           _per_group("base_momentum", optimizer, base_momentum)):
                    self._set_momentum(group, top)
                    group["max_momentum"], group["base_momentum"] = top, low
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict, value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start: float, end: float, done: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * done) + 1)
        return (end - start) * done + start

    def get_lr(self) -> list[float]:
        """The rates of step ``last_epoch``; sets each group's momentum to the step's as well."""
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        rates = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for index, (end, lr_from, lr_to, momentum_from, momentum_to) in enumerate(self._phases):
                if step <= end or index == len(self._phases) - 1:
                    done = (step - start) / (end - start)
                    rates.append(self._anneal(group[lr_from], group[lr_to], done))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(group[momentum_from], group[momentum_to], done))
                    break
                start = end
        return rates


def _total_steps(total_steps: int | None, epochs: int | None, steps_per_epoch: int | None) -> int:
    if total_steps is not None:
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        return total_steps
    if epochs is None or steps_per_epoch is None:
        raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
    if not isinstance(epochs, int) or epochs <= 0:
        raise ValueError(f"Expected positive integer epochs, but got {epochs}")
    if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
        raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
    return epochs * steps_per_epoch


def _per_group(name: str, optimizer: Optimizer, value: Any) -> list[Any]:
    """``value`` for each parameter group: a list or tuple of one per group, or one for all."""
    groups = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != groups:
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"optimizer.param_groups has {groups} values, {name} has {len(value)} values.")
        return list(value)
    return [value] * groups


class _CompoundSchedule(LRScheduler):
    """A schedule made of others (``_schedulers``), whose states it saves with its own."""

    _schedulers: list[LRScheduler]

    def state_dict(self) -> dict[str, Any]:
        state = {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [scheduler.state_dict() for scheduler in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        saved = state.pop("_schedulers")
        self.__dict__.update(state)
        for scheduler, scheduler_state in zip(self._schedulers, saved):
            scheduler.load_state_dict(scheduler_state)


class SequentialLR(_CompoundSchedule):
    """``schedulers`` one after another, switching at the steps in ``milestones``; each starts from
    its own step 0 (its closed form there) when its turn comes."""

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler], milestones: list[int],
                 last_epoch: int = -1) -> None:
        _check_schedulers(self, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one more than the "
                             f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                             f"number of milestones to be equal to {len(milestones)}")
        self._schedulers, self._milestones = schedulers, milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:  # the rates as before any schedule stepped
            group["lr"] = group["initial_lr"]
        self._undo_initial_steps()
        first = self._schedulers[bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def _undo_initial_steps(self) -> None:
        """Each schedule took a step when it was made; it takes it again when its turn comes."""
        for scheduler in self._schedulers:
            if isinstance(scheduler, SequentialLR):
                scheduler._undo_initial_steps()
            else:
                scheduler.last_epoch -= 1

    def step(self) -> None:  # type: ignore[override]
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_CompoundSchedule):
    """Every one of ``schedulers`` stepped at each step, their changes compounding."""

    def __init__(self, schedulers: list[LRScheduler], optimizer: Optimizer | None = None) -> None:
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler to be chained, but got no "
                             "scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_schedulers(self, optimizer, schedulers)
        self._schedulers, self.optimizer = schedulers, optimizer
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def step(self) -> None:  # type: ignore[override]
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


def _check_schedulers(compound: object, optimizer: Optimizer, schedulers: list) -> None:
    name = type(compound).__name__
    for index, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{name} at index {index} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(f"{name} does not support `ReduceLROnPlateau` scheduler as it requires additional "
                             f"kwargs to be specified when calling `step`, but got one at index {index} in the given "
                             "schedulers sequence.")
        if scheduler.optimizer is not optimizer:
            raise ValueError(f"{name} expects all schedulers to belong to the same optimizer, but got scheduler "
                             f"{type(scheduler).__name__} at index {index} has {scheduler.optimizer}, which is "
                             f"different from {type(optimizer).__name__}.")


class ReduceLROnPlateau:
    """Each group's rate times ``factor`` (not below ``min_lr``) once the metric given to ``step`` has
    not improved (by ``threshold``, relative or absolute) for more than ``patience`` steps; then
    ``cooldown`` steps pass before bad steps count again."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: float | list[float] = 0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        if mode not in ("min", "max"):
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.optimizer = optimizer
        self.min_lrs = [float(m) for m in _per_group("min_lr", optimizer, min_lr)]
        self.factor, self.patience, self.cooldown, self.eps = factor, patience, cooldown, eps
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.best = math.inf if mode == "min" else -math.inf
        self.cooldown_counter = 0
        self.num_bad_epochs = 0
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def is_better(self, current: float, best: float) -> bool:
        if self.mode == "min":
            return current < (best * (1.0 - self.threshold) if self.threshold_mode == "rel" else best - self.threshold)
        return current > (best * (self.threshold + 1.0) if self.threshold_mode == "rel" else best + self.threshold)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def step(self, metrics: Any, epoch: int | None = None) -> None:
        current = float(metrics)
        if epoch is not None:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self.is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, lowest in zip(self.optimizer.param_groups, self.min_lrs):
                old = float(group["lr"])
                new = max(old * self.factor, lowest)
                if old - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        return self._last_lr

    def state_dict(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)


__all__ = ["ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "ExponentialLR",
           "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR", "MultiplicativeLR", "OneCycleLR", "PolynomialLR",
           "ReduceLROnPlateau", "SequentialLR", "StepLR"]
