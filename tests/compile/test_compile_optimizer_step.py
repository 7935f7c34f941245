"""A training step that calls a model, its loss, ``backward()``, ``opt.step()`` and ``opt.zero_grad()``,
compiled whole: the parameters, the optimizer's state tensors (its step count included) and each
group's ``lr``, ``momentum`` and ``betas`` are inputs of one program, so a scheduler changing the rate
or the momenta at every call and the growing step count never recompile; what the program depends on
(nesterov, eps, weight decay, the groups) is guarded. Each case runs the same steps eagerly and compiled,
in float64, and compares the losses, the parameters and the optimizer's state (to 1e-10), and eager with
PyTorch where installed.

The optimizers that make state on their first step (momentum buffers, Adam's and RMSprop's) run
that first call eagerly and compile from the second on. Most cases run on the interpreter backend
(tracing, lifting and guards are above the backend); two go through numba.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from layer_pairs import torch

import jitgrad as jg
import jitgrad.nn as nn
import jitgrad.optim as optim
from jitgrad.compile import CompileWarning

STEPS = 5
CONFIGS = {
    "sgd": ("SGD", {"lr": 0.1}),
    "sgd-momentum": ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    "sgd-nesterov": ("SGD", {"lr": 0.1, "momentum": 0.8, "weight_decay": 0.01, "nesterov": True}),
    "sgd-maximize": ("SGD", {"lr": 0.05, "momentum": 0.5, "maximize": True}),
    "adam": ("Adam", {"lr": 0.05}),
    "adam-amsgrad": ("Adam", {"lr": 0.05, "betas": (0.8, 0.9), "weight_decay": 0.1, "amsgrad": True}),
    "adamw": ("AdamW", {"lr": 0.05, "weight_decay": 0.1}),
    "rmsprop": ("RMSprop", {"lr": 0.01}),
    "rmsprop-centered": ("RMSprop", {"lr": 0.01, "alpha": 0.9, "momentum": 0.5, "centered": True,
                                     "weight_decay": 0.01}),
    "adagrad": ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.01, "initial_accumulator_value": 0.1}),
}
STATELESS = {"sgd"}  # no state: the first call compiles too (Adagrad makes its state with the optimizer)


def data() -> tuple[jg.Tensor, jg.Tensor]:
    rng = np.random.default_rng(0)
    return jg.tensor(rng.standard_normal((6, 3))), jg.tensor(rng.standard_normal((6, 2)))


def model() -> nn.Module:
    jg.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()


def schedule(t: int) -> float:
    return 1.0 / (1.0 + 0.5 * t)


class Run:
    """A model, its optimizer and a LambdaLR stepping after every call, and the training step; eager
    or compiled."""

    def __init__(self, config: str, compiled: bool) -> None:
        name, options = CONFIGS[config]
        self.net = model()
        self.opt = getattr(optim, name)(self.net.parameters(), **options)
        self.scheduler = optim.lr_scheduler.LambdaLR(self.opt, schedule)
        net, opt = self.net, self.opt

        def train_step(x, y):
            loss = ((net(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        self.step = jg.compile(train_step, cache=False) if compiled else train_step

    def train(self, steps: int = STEPS) -> list[float]:
        x, y = data()
        losses = []
        with warnings.catch_warnings():
            warnings.simplefilter("error", CompileWarning)  # never an eager fallback
            for _ in range(steps):
                losses.append(self.step(x, y).item())
                self.scheduler.step()
        return losses


def assert_same_training(compiled: Run, eager: Run, losses: list[float], expected: list[float]) -> None:
    np.testing.assert_allclose(losses, expected, rtol=1e-10, atol=1e-12)
    for (name, ours), (_, theirs) in zip(compiled.net.state_dict().items(), eager.net.state_dict().items()):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
    ours, theirs = compiled.opt.state_dict(), eager.opt.state_dict()
    assert ours["param_groups"] == theirs["param_groups"]
    assert ours["state"].keys() == theirs["state"].keys()
    for index, state in theirs["state"].items():
        assert ours["state"][index].keys() == state.keys()
        for key, value in state.items():
            np.testing.assert_allclose(ours["state"][index][key].numpy(), value.numpy(), rtol=1e-10, atol=1e-12,
                                       err_msg=f"state {index} {key}")


@pytest.mark.parametrize("config", list(CONFIGS))
def test_compiled_steps_match_eager_steps_in_one_program(config):
    eager, compiled = Run(config, False), Run(config, True)
    expected, losses = eager.train(), compiled.train()
    assert_same_training(compiled, eager, losses, expected)
    program, = compiled.step.programs            # one program for every call, lr changing at each
    assert compiled.step.recompiles == 0 and compiled.step.log == [], compiled.step.log
    assert "placeholder opt_param_groups_0_lr" in program.lowered.ir_before   # the rate: an input
    if config not in STATELESS:
        assert "placeholder opt_state_entries_0_" in program.lowered.ir_before  # the state: inputs too


@pytest.mark.parametrize("config", ["adamw"])
def test_compiled_steps_through_numba_match_eager_steps(config, monkeypatch):
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "numba_cpu")
    eager, compiled = Run(config, False), Run(config, True)
    expected, losses = eager.train(), compiled.train()
    assert_same_training(compiled, eager, losses, expected)
    assert len(compiled.step.programs) == 1 and compiled.step.recompiles == 0, compiled.step.log
    assert compiled.step.backend.name == "numba_cpu"


@pytest.mark.skipif(torch is None, reason="compares with PyTorch, which is not installed")
@pytest.mark.parametrize("config", list(CONFIGS))
def test_eager_steps_match_pytorch(config):
    name, options = CONFIGS[config]
    ours = Run(config, False)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.net.state_dict().items()})
    their_opt = getattr(torch.optim, name)(theirs.parameters(), **options)
    their_scheduler = torch.optim.lr_scheduler.LambdaLR(their_opt, schedule)
    x, y = (torch.tensor(t.numpy()) for t in data())
    expected = []
    for _ in range(STEPS):
        loss = ((theirs(x) - y) ** 2).mean()
        loss.backward()
        their_opt.step()
        their_opt.zero_grad()
        their_scheduler.step()
        expected.append(loss.item())
    np.testing.assert_allclose(ours.train(), expected, rtol=1e-10, atol=1e-12)
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.net.state_dict()[key].numpy(), value.numpy(), rtol=1e-10, atol=1e-12)


def test_the_first_step_that_makes_the_state_runs_eagerly_then_one_program_serves():
    run = Run("adam", True)
    run.train(1)
    assert run.step.programs == [] and len(run.opt.state) == 4   # eager: it made the moments
    run.train(1)
    assert len(run.step.programs) == 1 and run.step.log == []
    assert [s["step"].item() for s in run.opt.state.values()] == [2.0] * 4


def lockstep(config: str, change) -> tuple[Run, Run]:
    """Trains eager and compiled side by side, applies ``change(run)`` to both after three steps, and
    trains on; they must still agree."""
    eager, compiled = Run(config, False), Run(config, True)
    expected, losses = eager.train(3), compiled.train(3)
    change(eager)
    change(compiled)
    expected += eager.train(3)
    losses += compiled.train(3)
    assert_same_training(compiled, eager, losses, expected)
    return eager, compiled


def set_group(key: str, value) -> callable:
    def change(run: Run) -> None:
        run.opt.param_groups[0][key] = value
    return change


@pytest.mark.parametrize("config,key,value", [
    ("adam", "eps", 1e-3), ("adam-amsgrad", "amsgrad", False),
    ("sgd-momentum", "dampening", 0.0), ("sgd-nesterov", "nesterov", False),
    ("sgd-momentum", "weight_decay", 0.5), ("rmsprop", "alpha", 0.5), ("adamw", "maximize", True),
], ids=lambda v: str(v))
def test_changing_a_guarded_setting_recompiles(config, key, value):
    _, compiled = lockstep(config, set_group(key, value))
    assert compiled.step.recompiles == 1, compiled.step.log
    assert f"['{key}']" in compiled.step.log[0], compiled.step.log


def test_a_rate_set_by_hand_is_read_at_the_next_call():
    def change(run: Run) -> None:
        for group in run.opt.param_groups:
            group["lr"] = 0.5
    _, compiled = lockstep("adam", change)
    assert compiled.step.recompiles == 0 and len(compiled.step.programs) == 1


def test_a_new_param_group_recompiles_and_its_rate_is_an_input_too():
    extra = {}

    def change(run: Run) -> None:
        bias = run.net[2].bias  # moved from the first group into a group of its own, at another rate
        run.opt.param_groups[0]["params"] = [p for p in run.opt.param_groups[0]["params"] if p is not bias]
        run.opt.add_param_group({"params": [bias], "lr": 0.2, "initial_lr": 0.2})
        run.scheduler.base_lrs.append(0.2)
        run.scheduler.lr_lambdas.append(schedule)
        extra[run] = bias
    _, compiled = lockstep("sgd-momentum", change)
    assert compiled.step.recompiles >= 1
    assert "placeholder opt_param_groups_1_lr" in compiled.step.programs[-1].lowered.ir_before


def test_an_integer_rate_recompiles_once_and_stays_an_input():
    _, compiled = lockstep("sgd", set_group("lr", 1))
    assert compiled.step.recompiles == 1, compiled.step.log
    assert "was a run-time float, now a run-time int" in compiled.step.log[0], compiled.step.log


@pytest.mark.parametrize("config,key,value", [
    ("adam", "betas", (0.5, 0.9)), ("adam-amsgrad", "betas", (0.7, 0.95)), ("sgd-momentum", "momentum", 0.3),
    ("sgd-nesterov", "momentum", 0.5), ("rmsprop-centered", "momentum", 0.2),
], ids=lambda v: str(v))
def test_a_momentum_set_between_steps_is_read_at_the_next_call(config, key, value):
    """The momenta are run-time inputs (schedulers such as OneCycleLR cycle them at every step)."""
    _, compiled = lockstep(config, set_group(key, value))
    assert compiled.step.recompiles == 0 and len(compiled.step.programs) == 1, compiled.step.log


def test_a_momentum_set_to_zero_runs_a_second_program_for_its_comparison():
    """SGD's ``if momentum != 0`` is a comparison of a run-time number: a call where it comes out
    otherwise runs a program traced for that outcome (the momentum buffer no longer read)."""
    _, compiled = lockstep("sgd-momentum", set_group("momentum", 0.0))
    assert compiled.step.recompiles == 1 and len(compiled.step.programs) == 2, compiled.step.log
    assert "a comparison of run-time numbers changed" in compiled.step.log[0]
    assert "opt.step() (True when traced, False now)" in compiled.step.log[0], compiled.step.log


@pytest.mark.parametrize("config", ["sgd-momentum", "adam"])
def test_one_cycle_momentum_cycling_compiles_once_and_matches_eager(config):
    """OneCycleLR sets the rate and the momentum (SGD's ``momentum``, Adam's first beta) at every step."""
    def cycled(compiled: bool) -> Run:
        run = Run(config, compiled)
        run.scheduler = optim.lr_scheduler.OneCycleLR(run.opt, max_lr=0.1, total_steps=20)
        return run
    eager, compiled = cycled(False), cycled(True)
    assert_same_training(compiled, eager, compiled.train(10), eager.train(10))
    assert compiled.step.recompiles == 0 and len(compiled.step.programs) == 1, compiled.step.log


def test_a_rate_the_step_branches_on_is_a_predicate():
    """Code that branches on the rate keeps it a run-time input: the comparison's outcome is checked
    at each call, and a call that crosses it runs a program traced for the other outcome."""
    net = model()
    opt = optim.SGD(net.parameters(), lr=0.1)

    def train_step(x, y):
        loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        if opt.param_groups[0]["lr"] > 0.05:
            opt.step()
        opt.zero_grad()
        return loss
    step = jg.compile(train_step, cache=False)
    x, y = data()
    first = step(x, y).item()
    opt.param_groups[0]["lr"] = 0.09          # above the threshold: the same program, the new rate
    second = step(x, y).item()
    assert second < first and step.recompiles == 0
    opt.param_groups[0]["lr"] = 0.01          # below it: no update any more
    assert step(x, y).item() < second         # the update of the second call happened
    frozen = [p.detach().clone() for p in net.parameters()]
    step(x, y)
    assert all(np.array_equal(a.numpy(), b.detach().numpy()) for a, b in zip(frozen, net.parameters()))
    opt.param_groups[0]["lr"] = 0.2           # above again: the first program, no trace
    step(x, y)
    assert step.recompiles == 1 and len(step.programs) == 2, step.log
    assert "> 0.05: (True when traced, False now)" in step.log[0], step.log


def test_a_rate_the_step_needs_as_a_python_value_stays_a_guarded_constant():
    """A rate read as a Python value (``float()``) cannot be a run-time input: it is guarded by value
    (said in the log), so a new rate recompiles rather than run a stale program."""
    net = model()
    opt = optim.SGD(net.parameters(), lr=0.1)

    def train_step(x, y):
        loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        with jg.no_grad():
            for p in net.parameters():
                p.sub_(p.grad * float(opt.param_groups[0]["lr"]))
        opt.zero_grad()
        return loss
    step = jg.compile(train_step, cache=False)
    x, y = data()
    step(x, y)
    assert any("stays a guarded constant" in line for line in step.log), step.log
    before = [p.detach().clone() for p in net.parameters()]
    opt.param_groups[0]["lr"] = 0.0           # a stale program would still apply 0.1
    step(x, y)
    assert all(np.array_equal(a.numpy(), b.detach().numpy()) for a, b in zip(before, net.parameters()))
    assert step.recompiles == 1, step.log


@pytest.mark.parametrize("config", ["sgd-momentum", "adam-amsgrad", "rmsprop-centered"])
def test_the_state_dict_after_compiled_steps_loads_into_an_eager_optimizer(config):
    compiled = Run(config, True)
    compiled.train(3)
    eager = Run(config, False)
    eager.net.load_state_dict(compiled.net.state_dict())
    eager.opt.load_state_dict(compiled.opt.state_dict())
    eager.scheduler.load_state_dict(compiled.scheduler.state_dict())
    if "step" in compiled.opt.state_dict()["state"][0]:
        assert compiled.opt.state_dict()["state"][0]["step"].item() == 3.0
    assert_same_training(compiled, eager, compiled.train(3), eager.train(3))
    assert compiled.step.recompiles == 0


def test_compiling_a_module_lifts_its_parameters():
    net = model()
    forward = jg.compile(net, cache=False)
    x, y = data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        out = forward(x)
        np.testing.assert_allclose(out.detach().numpy(), net(x).detach().numpy(), rtol=1e-12)
        ((out - y) ** 2).mean().backward()
        assert all(p.grad is not None for p in net.parameters())
        opt = optim.SGD(net.parameters(), lr=0.5)
        opt.step()                                  # in place, outside: the next call reads the new values
        opt.zero_grad()
        np.testing.assert_allclose(forward(x).detach().numpy(), net(x).detach().numpy(), rtol=1e-12)
    program, = forward.programs
    assert forward.recompiles == 0
    assert "placeholder self__modules_0__parameters_weight" in program.lowered_graphs[0].ir_before


def test_loading_a_state_dict_into_the_compiled_optimizer_is_read_by_the_next_call():
    """A checkpoint restored mid-run replaces the state tensors and the groups: the next call reads
    the new ones (they are inputs, read from where the optimizer keeps them)."""
    def change(run: Run) -> None:
        saved = run.opt.state_dict()
        saved["state"][0]["exp_avg"] = saved["state"][0]["exp_avg"] * 0.5
        saved["param_groups"][0]["lr"] = 0.01
        run.opt.load_state_dict(saved)
    _, compiled = lockstep("adam", change)
    assert compiled.step.recompiles <= 1, compiled.step.log


@pytest.mark.parametrize("key,change,after", [
    ("lr", lambda group: group.update(lr=group["lr"] * 0.5), 0.025),
    ("betas", lambda group: group.update(betas=(group["betas"][0] * 0.5, 0.999)), (0.225, 0.999)),
])
def test_a_step_that_sets_a_run_time_number_itself_runs_eagerly(key, change, after):
    """The run-time numbers (a tuple of them too) are put back after the trace; a function that
    changes one would lose the change in a compiled call, so it runs eagerly (with a warning that
    names the number)."""
    net = model()
    opt = optim.Adam(net.parameters(), lr=0.1)
    opt.param_groups[0]["betas"] = (0.9, 0.999)

    def train_step(x, y):
        loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        change(opt.param_groups[0])
        return loss
    step = jg.compile(train_step, cache=False)
    x, y = data()
    step(x, y)   # Adam's first step makes its state: eager
    with pytest.warns(CompileWarning, match=rf"sets closure variable 'opt.param_groups\[0\]\['{key}'\]'"):
        step(x, y)
    assert opt.param_groups[0][key] == after and step.programs == []


@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
def test_a_step_that_clips_its_gradients_compiles_and_matches_eager(norm_type):
    """clip_grad_norm_ computes its scale with tensor ops (never ``.item()``), so the step stays one
    program; a max_norm small enough to clip at every step."""
    runs = []
    for compiled in (False, True):
        net = model()
        opt = optim.SGD(net.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = ((net(x) - y) ** 2).mean()
            loss.backward()
            norm = nn.utils.clip_grad_norm_(net.parameters(), 0.05, norm_type)
            opt.step()
            return loss.detach(), norm
        fn = jg.compile(step, cache=False, fullgraph=True) if compiled else step
        x, y = data()
        runs.append([tuple(float(v) for v in fn(x, y)) for _ in range(STEPS)])
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-10)


class Trainer:
    """A trainer whose step is a compiled method: ``self`` is its first argument, and the optimizer's
    run-time numbers are found through it."""

    def __init__(self, seed: int, compile_step: bool) -> None:
        jg.manual_seed(seed)
        self.net = nn.Sequential(nn.Linear(3, 2)).double()
        self.opt = optim.SGD(self.net.parameters(), lr=0.1, momentum=0.9)
        self.compiled = compile_step

    def _step(self, x, y):
        loss = ((self.net(x) - y) ** 2).mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        return loss.detach()

    compiled_step = jg.compile(_step, cache=False)

    def step(self, x, y):
        return self.compiled_step(x, y) if self.compiled else self._step(x, y)


def test_a_compiled_method_binds_and_reads_the_rate_through_self():
    """``@jitgrad.compile`` on a method binds as the function would (before 2026-11-28 ``trainer.step(x,
    y)`` called it without ``self``), and a run-time number found through an argument (the ``lr`` of
    ``self.opt``) is put in place through the call's arguments (its trace raised ``IndexError``)."""
    x, y = data()
    trainers = {compiled: [Trainer(seed, compiled) for seed in (1, 2)] for compiled in (True, False)}
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for t in range(4):
            for ours, theirs in zip(trainers[True], trainers[False]):
                np.testing.assert_allclose(ours.step(x, y).item(), theirs.step(x, y).item(), rtol=1e-10)
                np.testing.assert_allclose(ours.net[0].weight.detach().numpy(), theirs.net[0].weight.detach().numpy(),
                                           rtol=1e-10)
                for trainer in (ours, theirs):
                    trainer.opt.param_groups[0]["lr"] = 0.1 / (t + 2)
