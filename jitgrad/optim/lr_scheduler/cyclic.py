"""``CyclicLR``: the rate cycles between two bounds, stepped once per batch (Smith's cyclical rates)."""
from __future__ import annotations

import math
import types
from typing import Any, Callable

from ..optimizer import Optimizer
from .schedule import LRScheduler, per_group


class CyclicLR(LRScheduler):
    """The rate rises from ``base_lr`` to ``max_lr`` over ``step_size_up`` batches and falls back over
    ``step_size_down`` (``step_size_up`` when None), the rise scaled by the policy: ``triangular``
    (1), ``triangular2`` (halved each cycle) or ``exp_range`` (``gamma`` to the power of the batch
    count), or by ``scale_fn`` of the cycle or of the batch count (``scale_mode``). With
    ``cycle_momentum`` the momentum (SGD's ``momentum``, Adam's first beta) moves the other way,
    between ``max_momentum`` and ``base_momentum``; each group keeps both. Making it sets each
    group's rate to ``base_lr``, as PyTorch's does. In a compiled step the rate and the momentum are
    run-time inputs (docs/compile.md), so cycling them runs one program."""

    def __init__(self, optimizer: Optimizer, base_lr: float | list[float], max_lr: float | list[float],
                 step_size_up: int = 2000, step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum: float | list[float] = 0.8,
                 max_momentum: float | list[float] = 0.9, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        base_lrs = per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_mode()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for top, low, group in zip(self.max_momentums, self.base_momentums, optimizer.param_groups):
                    self._set_momentum(group, top)
                    group["max_momentum"], group["base_momentum"] = top, low
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_mode(self) -> None:
        """The built-in policies fix the scale mode (PyTorch overrides the argument the same way)."""
        if self._scale_fn_custom is None:
            self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"

    def scale_fn(self, x: float) -> float:
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def _set_momentum(self, group: dict, value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def get_lr(self) -> list[float]:
        """The rates of batch ``last_epoch``; sets each group's momentum to the batch's as well."""
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        scale_factor = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        rates = [base + (top - base) * scale_factor * scale for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, low, top in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                self._set_momentum(group, top - (top - low) * scale_factor * scale)
        return rates

    def state_dict(self) -> dict[str, Any]:
        """As PyTorch's: a ``scale_fn`` that is a plain function or lambda is not saved (its
        attributes are, when it is a callable object)."""
        state = super().state_dict()
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None if fn is None or isinstance(fn, types.FunctionType) else fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        fn = state_dict.pop("_scale_fn_custom")
        custom = self._scale_fn_custom
        super().load_state_dict(state_dict)
        self._scale_fn_custom = custom
        if fn is not None:
            custom.__dict__.update(fn)
        self._init_scale_mode()


__all__ = ["CyclicLR"]
