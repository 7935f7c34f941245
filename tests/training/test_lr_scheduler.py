"""Learning-rate schedules against ``torch.optim.lr_scheduler``: the rates of every step, for two
parameter groups, a rate changed by hand in the middle, and a schedule resumed from its state dict."""
from __future__ import annotations

import numpy as np
import pytest
from layer_pairs import needs_torch, torch

import jitgrad as jg
import jitgrad.optim as optim
from jitgrad.optim import lr_scheduler

SCHEDULES = {
    "step": ("StepLR", {"step_size": 3, "gamma": 0.5}),
    "cosine": ("CosineAnnealingLR", {"T_max": 4, "eta_min": 0.001}),
    "lambda": ("LambdaLR", {"lr_lambda": lambda epoch: 0.9 ** epoch}),
    "lambdas": ("LambdaLR", {"lr_lambda": [lambda epoch: 1 / (epoch + 1), lambda epoch: 0.5]}),
    "multi-step": ("MultiStepLR", {"milestones": [2, 5, 5, 9], "gamma": 0.5}),
    "exponential": ("ExponentialLR", {"gamma": 0.8}),
    "multiplicative": ("MultiplicativeLR", {"lr_lambda": lambda epoch: 0.95}),
    "constant": ("ConstantLR", {"factor": 0.25, "total_iters": 4}),
    "linear": ("LinearLR", {"start_factor": 0.1, "end_factor": 0.9, "total_iters": 6}),
    "polynomial": ("PolynomialLR", {"total_iters": 8, "power": 2.0}),
    "warm-restarts": ("CosineAnnealingWarmRestarts", {"T_0": 3, "T_mult": 2, "eta_min": 0.01}),
    "one-cycle": ("OneCycleLR", {"max_lr": [1.0, 0.5], "total_steps": 14, "pct_start": 0.25}),
    "one-cycle-linear-three-phase": ("OneCycleLR", {"max_lr": 1.0, "epochs": 2, "steps_per_epoch": 7,
                                                    "anneal_strategy": "linear", "three_phase": True}),
}


def rates(lib, name: str, steps: int = 14, change_at: int | None = None) -> list[list[float]]:
    """Each step's rates of the two groups, and their momenta (which OneCycleLR moves)."""
    kind, options = SCHEDULES[name]
    weights = [lib.ones(1, requires_grad=True), lib.ones(1, requires_grad=True)]
    opt = (optim if lib is jg else torch.optim).SGD([{"params": weights[:1]}, {"params": weights[1:], "lr": 0.5}],
                                                     lr=0.1, momentum=0.9)
    schedule = getattr(lr_scheduler if lib is jg else torch.optim.lr_scheduler, kind)(opt, **options)
    seen = [schedule.get_last_lr() + [group["momentum"] for group in opt.param_groups]]
    for step in range(steps):
        opt.step()
        if step == change_at:
            opt.param_groups[0]["lr"] = 0.3
        schedule.step()
        seen.append(schedule.get_last_lr() + [group["momentum"] for group in opt.param_groups])
    return seen


@needs_torch
@pytest.mark.parametrize("name", SCHEDULES)
@pytest.mark.parametrize("change_at", [None, 5], ids=["plain", "changed-by-hand"])
def test_rates_are_pytorchs(name, change_at):
    ours, theirs = rates(jg, name, change_at=change_at), rates(torch, name, change_at=change_at)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


@pytest.mark.parametrize("name", ["step", "cosine", "lambda", "multi-step", "warm-restarts",
                                  "one-cycle-linear-three-phase"])
def test_a_schedule_resumes_from_its_state_dict(name):
    kind, options = SCHEDULES[name]
    weight = jg.ones(1, requires_grad=True)
    opt = optim.SGD([weight], lr=0.1)
    schedule = getattr(lr_scheduler, kind)(opt, **options)
    for _ in range(5):
        schedule.step()
    saved_schedule, saved_opt = schedule.state_dict(), opt.state_dict()
    expected = []
    for _ in range(5):
        schedule.step()
        expected.append(schedule.get_last_lr())
    opt = optim.SGD([weight], lr=0.1)
    opt.load_state_dict(saved_opt)
    schedule = getattr(lr_scheduler, kind)(opt, **options)
    schedule.load_state_dict(saved_schedule)
    resumed = []
    for _ in range(5):
        schedule.step()
        resumed.append(schedule.get_last_lr())
    np.testing.assert_allclose(resumed, expected, rtol=1e-12)


def resumed_with_last_epoch(lib, name: str) -> list[list[float]]:
    """Five steps, then a new optimizer loads the old one's state and a new schedule is made with
    ``last_epoch`` (PyTorch's way of resuming), then five more steps: each step's group rates."""
    kind, options = SCHEDULES[name]
    optim_, schedules = (optim, lr_scheduler) if lib is jg else (torch.optim, torch.optim.lr_scheduler)
    weight = lib.ones(1, requires_grad=True)
    opt = optim_.SGD([weight], lr=0.1)
    schedule = getattr(schedules, kind)(opt, **options)
    for _ in range(5):
        opt.step()
        schedule.step()
    opt, saved = optim_.SGD([weight], lr=0.1), opt.state_dict()
    opt.load_state_dict(saved)
    schedule = getattr(schedules, kind)(opt, **options, last_epoch=schedule.last_epoch)
    seen = [[group["lr"] for group in opt.param_groups]]
    for _ in range(5):
        opt.step()
        schedule.step()
        seen.append([group["lr"] for group in opt.param_groups])
    return seen


@needs_torch
@pytest.mark.parametrize("name", ["step", "cosine", "lambda", "multi-step", "exponential", "linear", "polynomial"])
def test_a_schedule_made_with_last_epoch_continues_as_pytorchs(name):
    """A cosine schedule made with ``last_epoch`` once overwrote the loaded rate with the closed
    form one step ahead, so every later rate was off; PyTorch keeps the loaded rate."""
    np.testing.assert_allclose(resumed_with_last_epoch(jg, name), resumed_with_last_epoch(torch, name), rtol=1e-12)


def test_lambda_state_dict_leaves_functions_out():
    opt = optim.SGD([jg.ones(1, requires_grad=True)], lr=0.1)
    schedule = lr_scheduler.LambdaLR(opt, lambda epoch: 0.5)
    assert schedule.state_dict()["lr_lambdas"] == [None]
    assert "optimizer" not in schedule.state_dict()


def test_schedules_check_their_arguments():
    opt = optim.SGD([jg.ones(1, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        lr_scheduler.LambdaLR(opt, [lambda e: 1.0, lambda e: 1.0])
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\]"):
        lr_scheduler.StepLR(optim.SGD([jg.ones(1, requires_grad=True)]), step_size=2, last_epoch=3)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        lr_scheduler.StepLR(object(), step_size=2)


def _compound(lib, kind: str):
    """An optimizer and a compound schedule of it: a linear warm-up then a cosine (SequentialLR), or an
    exponential decay and a multi-step one at once (ChainedScheduler)."""
    schedules = lr_scheduler if lib is jg else torch.optim.lr_scheduler
    opt = (optim if lib is jg else torch.optim).SGD([lib.ones(1, requires_grad=True)], lr=0.1)
    if kind == "sequential":
        parts = [schedules.LinearLR(opt, start_factor=0.1, total_iters=3), schedules.CosineAnnealingLR(opt, T_max=6),
                 schedules.StepLR(opt, step_size=2)]
        return opt, schedules.SequentialLR(opt, parts, milestones=[3, 9])
    return opt, schedules.ChainedScheduler([schedules.ExponentialLR(opt, gamma=0.9),
                                            schedules.MultiStepLR(opt, milestones=[2, 4], gamma=0.5)])


@needs_torch
@pytest.mark.parametrize("kind", ["sequential", "chained"])
def test_compound_schedules_are_pytorchs(kind):
    runs = []
    for lib in (jg, torch):
        opt, schedule = _compound(lib, kind)
        seen = [schedule.get_last_lr()]
        for _ in range(14):
            opt.step()
            schedule.step()
            seen.append(schedule.get_last_lr())
        runs.append(seen)
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-12)


@needs_torch
@pytest.mark.parametrize("options", [{}, {"mode": "max", "threshold_mode": "abs", "threshold": 0.05, "cooldown": 2,
                                          "min_lr": 0.02, "factor": 0.5, "patience": 1}])
def test_reduce_on_plateau_is_pytorchs(options):
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.89, 0.9, 0.9, 0.91, 0.92, 0.93, 0.7, 0.71, 0.72, 0.73, 0.74] * 2
    runs = []
    for lib in (jg, torch):
        opt = (optim if lib is jg else torch.optim).SGD([lib.ones(1, requires_grad=True)], lr=0.1)
        schedule = (lr_scheduler if lib is jg else torch.optim.lr_scheduler).ReduceLROnPlateau(
            opt, patience=options.get("patience", 2), **{k: v for k, v in options.items() if k != "patience"})
        seen = []
        for metric in metrics:
            opt.step()
            schedule.step(metric)
            seen.append(schedule.get_last_lr() + [schedule.num_bad_epochs, schedule.cooldown_counter])
        runs.append(seen)
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-12)


@needs_torch
def test_warm_restarts_jump_to_an_epoch_as_pytorchs():
    runs = []
    for lib in (jg, torch):
        opt = (optim if lib is jg else torch.optim).SGD([lib.ones(1, requires_grad=True)], lr=0.1)
        schedule = (lr_scheduler if lib is jg else torch.optim.lr_scheduler).CosineAnnealingWarmRestarts(
            opt, T_0=2, T_mult=3)
        seen = []
        for epoch in (0.5, 1.0, 2.5, 7.25, 26.0, 3):
            schedule.step(epoch)
            seen.append(schedule.get_last_lr() + [schedule.T_i, schedule.T_cur])
        runs.append(seen)
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-12)


def test_the_new_schedules_check_their_arguments():
    def sgd(**options):
        return optim.SGD([jg.ones(1, requires_grad=True)], lr=0.1, **options)
    with pytest.raises(ValueError, match="Starting multiplicative factor expected to be greater than 0"):
        lr_scheduler.LinearLR(sgd(), start_factor=0.0)
    with pytest.raises(ValueError, match="Constant multiplicative factor expected to be between 0 and 1"):
        lr_scheduler.ConstantLR(sgd(), factor=2.0)
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        lr_scheduler.CosineAnnealingWarmRestarts(sgd(), T_0=0)
    with pytest.raises(ValueError, match=r"You must define either total_steps OR \(epochs AND steps_per_epoch\)"):
        lr_scheduler.OneCycleLR(sgd(momentum=0.9), max_lr=1.0)
    one_cycle = lr_scheduler.OneCycleLR(sgd(momentum=0.9), max_lr=1.0, total_steps=2, cycle_momentum=False)
    one_cycle.step()
    one_cycle.step()
    with pytest.raises(ValueError, match="Tried to step 3 times. The specified number of total steps is 2"):
        one_cycle.step()
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        lr_scheduler.ReduceLROnPlateau(sgd(), factor=1.0)
    opt = sgd()
    with pytest.raises(ValueError, match="expects number of schedulers provided to be one more than the number"):
        lr_scheduler.SequentialLR(opt, [lr_scheduler.StepLR(opt, 2)], milestones=[2])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        lr_scheduler.ChainedScheduler([lr_scheduler.ReduceLROnPlateau(opt)], opt)


@needs_torch
def test_one_cycle_moves_adams_first_beta_as_pytorchs():
    runs = []
    for lib in (jg, torch):
        opt = (optim if lib is jg else torch.optim).Adam([lib.ones(1, requires_grad=True)], lr=0.1, betas=(0.9, 0.99))
        schedule = (lr_scheduler if lib is jg else torch.optim.lr_scheduler).OneCycleLR(opt, max_lr=0.5, total_steps=6)
        seen = []
        for _ in range(6):
            seen.append(schedule.get_last_lr() + list(opt.param_groups[0]["betas"]))
            opt.step()
            schedule.step()
        runs.append(seen)
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-12)
