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
}


def rates(lib, name: str, steps: int = 14, change_at: int | None = None) -> list[list[float]]:
    kind, options = SCHEDULES[name]
    weights = [lib.ones(1, requires_grad=True), lib.ones(1, requires_grad=True)]
    opt = (optim if lib is jg else torch.optim).SGD([{"params": weights[:1]}, {"params": weights[1:], "lr": 0.5}],
                                                     lr=0.1)
    schedule = getattr(lr_scheduler if lib is jg else torch.optim.lr_scheduler, kind)(opt, **options)
    seen = [schedule.get_last_lr()]
    for step in range(steps):
        opt.step()
        if step == change_at:
            opt.param_groups[0]["lr"] = 0.3
        schedule.step()
        seen.append(schedule.get_last_lr())
    return seen


@needs_torch
@pytest.mark.parametrize("name", SCHEDULES)
@pytest.mark.parametrize("change_at", [None, 5], ids=["plain", "changed-by-hand"])
def test_rates_are_pytorchs(name, change_at):
    ours, theirs = rates(jg, name, change_at=change_at), rates(torch, name, change_at=change_at)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


@pytest.mark.parametrize("name", ["step", "cosine", "lambda"])
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
@pytest.mark.parametrize("name", ["step", "cosine", "lambda"])
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
