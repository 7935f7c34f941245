"""The second tier of optimizers against ``torch.optim``: from the same parameters and gradients, the
same parameters after every one of eight steps (float64), with weight decay and each main option; the
state dict's layout; a saved state resumes training; PyTorch's argument checks."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from layer_pairs import assert_close, needs_torch, torch

import jitgrad as jg
import jitgrad.optim as optim

RNG = np.random.default_rng(5)
START = [RNG.standard_normal((3, 2)), RNG.standard_normal(2), RNG.standard_normal((2, 2))]
GRADIENTS = [[RNG.standard_normal(w.shape) for w in START] for _ in range(8)]

CONFIGS = [
    ("RAdam", {}),  # rho_t passes 5 at step 6: both branches
    ("RAdam", {"lr": 0.01, "betas": (0.8, 0.9), "eps": 1e-6, "weight_decay": 0.1, "maximize": True}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.01, "betas": (0.8, 0.95), "weight_decay": 0.1, "momentum_decay": 0.01, "maximize": True}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.01, "betas": (0.7, 0.9), "eps": 1e-3, "weight_decay": 0.1, "maximize": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.7, "eps": 1e-4, "weight_decay": 0.1, "maximize": True}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.08), "maximize": True}),
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 3, "weight_decay": 0.1, "maximize": True}),
]
IDS = [f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)]


def params(lib) -> list:
    return [lib.tensor(w.copy(), requires_grad=True) for w in START]


def set_gradients(tensors, lib, gradients) -> None:
    for tensor, gradient in zip(tensors, gradients):
        tensor.grad = None if gradient is None else lib.tensor(gradient)


def groups(tensors) -> list[dict]:
    """Two groups, the second with its own learning rate, the last parameter without gradients at times."""
    return [{"params": tensors[:2]}, {"params": tensors[2:], "lr": 0.05}]


def steps(gradients_at, step: int) -> list:
    gradients = gradients_at[step]
    if step in (2, 3):  # Rprop's sign cases: the same sign twice, then a flip
        gradients = [g if step == 2 else -g for g in GRADIENTS[1]]
    return gradients[:2] + [None] if step % 3 == 1 else gradients  # a parameter skipped now and then


@needs_torch
@pytest.mark.parametrize("name,options", CONFIGS, ids=IDS)
def test_optimizer_steps_as_pytorchs(name, options):
    ours, theirs = params(jg), params(torch)
    opt_ours = getattr(optim, name)(groups(ours), **options)
    opt_theirs = getattr(torch.optim, name)(groups(theirs), **options)
    for step in range(len(GRADIENTS)):
        set_gradients(ours, jg, steps(GRADIENTS, step))
        set_gradients(theirs, torch, steps(GRADIENTS, step))
        opt_ours.step()
        opt_theirs.step()
        for a, b in zip(ours, theirs):
            assert_close(a, b, tolerance=1e-12, what=f"step {step}")
    for index, param in enumerate(ours):
        for key, value in opt_theirs.state[theirs[index]].items():
            assert_close(opt_ours.state[param][key], value, tolerance=1e-12, what=f"state {key}")
            assert opt_ours.state[param][key].dtype.name == str(value.dtype).replace("torch.", "")


@needs_torch
@pytest.mark.parametrize("name,options", CONFIGS, ids=IDS)
def test_state_dict_has_pytorchs_layout_and_resumes(name, options):
    """PyTorch's keys; four steps, a save and a load into a new optimizer, four more: as eight steps
    without a break."""
    ours, theirs = getattr(optim, name)(groups(params(jg)), **options), \
        getattr(torch.optim, name)(groups(params(torch)), **options)
    for opt, lib in ((ours, jg), (theirs, torch)):
        set_gradients([p for g in opt.param_groups for p in g["params"]], lib, GRADIENTS[0])
        opt.step()
    ours_state, theirs_state = ours.state_dict(), theirs.state_dict()
    assert {k: sorted(v) for k, v in ours_state["state"].items()} == \
        {k: sorted(v) for k, v in theirs_state["state"].items()}
    assert set(theirs_state["param_groups"][0]) - set(ours_state["param_groups"][0]) <= {
        "foreach", "differentiable", "fused", "capturable"}
    straight, resumed = params(jg), params(jg)
    opt = getattr(optim, name)(groups(straight), **options)
    first = getattr(optim, name)(groups(resumed), **options)
    for step in range(len(GRADIENTS)):
        if step == 4:
            state = first.state_dict()
            first = getattr(optim, name)(groups(resumed), lr=123.0)
            first.load_state_dict(state)
        set_gradients(straight, jg, steps(GRADIENTS, step))
        set_gradients(resumed, jg, steps(GRADIENTS, step))
        opt.step()
        first.step()
    # PyTorch's load casts every floating state tensor but the step to the parameter's dtype: NAdam's
    # mu_product and ASGD's eta and mu, float32 before, go on in float64, and so do ours
    tolerance = 1e-8 if name in ("NAdam", "ASGD") else 0
    for a, b in zip(straight, resumed):
        assert_close(a, b, tolerance=tolerance)


@needs_torch
@pytest.mark.parametrize("name,options", [
    ("RAdam", {"lr": -1.0}), ("RAdam", {"betas": (0.9, 1.0)}), ("NAdam", {"momentum_decay": -1.0}),
    ("Adamax", {"eps": -1.0}), ("Adadelta", {"rho": 1.5}), ("Rprop", {"etas": (1.2, 0.5)}),
    ("ASGD", {"weight_decay": -1.0}),
])
def test_bad_settings_raise_pytorchs_errors(name, options):
    messages = []
    for lib in (jg, torch):
        with pytest.raises(ValueError) as caught:
            getattr(lib.optim, name)(params(lib), **options)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


CYCLES = {
    "triangular": {"base_lr": 0.01, "max_lr": [0.1, 0.2], "step_size_up": 3},
    "triangular2": {"base_lr": [0.01, 0.02], "max_lr": 0.1, "step_size_up": 2, "step_size_down": 3,
                    "mode": "triangular2", "base_momentum": [0.7, 0.6], "max_momentum": 0.95},
    "exp-range": {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 4, "step_size_down": 2, "mode": "exp_range",
                  "gamma": 0.9},
    "scale-fn-iterations": {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 2, "cycle_momentum": False,
                            "scale_fn": lambda x: 1 / (1 + x), "scale_mode": "iterations"},
}


@needs_torch
@pytest.mark.parametrize("name", CYCLES)
@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_cyclic_lr_is_pytorchs(name, kind):
    """Each batch's rates and momenta (SGD's ``momentum`` or Adam's first beta) of two groups."""
    runs = []
    for lib in (jg, torch):
        weights = [lib.ones(1, requires_grad=True), lib.ones(1, requires_grad=True)]
        options = {"momentum": 0.9} if kind == "SGD" else {}
        opt = getattr(optim if lib is jg else torch.optim, kind)(
            [{"params": weights[:1]}, {"params": weights[1:], "lr": 0.5}], lr=0.1, **options)
        schedule = (optim.lr_scheduler if lib is jg else torch.optim.lr_scheduler).CyclicLR(opt, **CYCLES[name])
        seen = []
        for _ in range(14):
            momenta = [g["momentum"] if kind == "SGD" else g["betas"][0] for g in opt.param_groups]
            seen.append(schedule.get_last_lr() + [g["lr"] for g in opt.param_groups] + momenta)
            opt.step()
            schedule.step()
        runs.append(seen)
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-12)


def test_cyclic_lr_resumes_from_its_state_dict_and_checks_its_arguments():
    def schedule_of(weight):
        opt = optim.SGD([weight], lr=0.1, momentum=0.9)
        return opt, optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=2, mode="triangular2")
    straight, resumed = schedule_of(jg.ones(1, requires_grad=True)), schedule_of(jg.ones(1, requires_grad=True))
    for _ in range(5):
        straight[1].step()
        resumed[1].step()
    state = resumed[1].state_dict()
    assert state["_scale_fn_custom"] is None and "optimizer" not in state
    opt = optim.SGD([jg.ones(1, requires_grad=True)], lr=0.1, momentum=0.9)
    opt.load_state_dict(resumed[0].state_dict())
    again = optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=2, mode="triangular2", last_epoch=4)
    again.load_state_dict(state)
    for _ in range(4):
        straight[1].step()
        again.step()
        assert again.get_last_lr() == straight[1].get_last_lr()
        assert opt.param_groups[0]["momentum"] == straight[0].param_groups[0]["momentum"]
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, mode="square")
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        optim.lr_scheduler.CyclicLR(optim.Adadelta([jg.ones(1, requires_grad=True)]), 0.01, 0.1)


def test_a_compiled_step_with_tier2_layers_loss_optimizers_and_cycle_matches_eager(monkeypatch):
    """PReLU, RMSNorm, GLU and a multilabel soft-margin loss, each new optimizer on one parameter
    (NAdam's float32 ``mu_product``, RAdam's switch, Rprop's sign cases, ASGD's averaging past t0)
    and CyclicLR moving NAdam's rate and first beta at every call: one program from the second call
    on (the first makes the optimizers' state, eagerly), steps as eager ones. On the interpreter
    backend, as tests/compile's (tracing, lifting and guards are above the backend; a numba build of
    this program takes seconds)."""
    from jitgrad.compile import CompileWarning
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "interpreter")
    rng = np.random.default_rng(3)
    x, y = jg.tensor(rng.standard_normal((6, 3))), jg.tensor((rng.random((6, 2)) > 0.5).astype(np.float64))
    runs = []
    for compiled in (False, True):
        jg.manual_seed(0)
        net = jg.nn.Sequential(jg.nn.Linear(3, 4), jg.nn.PReLU(4), jg.nn.RMSNorm(4), jg.nn.GLU(),
                               jg.nn.Linear(2, 2)).double()
        first, slope, scale, last = net[0], net[1], net[2], net[4]
        opts = [optim.NAdam([first.weight], lr=0.05, weight_decay=0.01), optim.RAdam([first.bias], lr=0.05),
                optim.Adamax([slope.weight], weight_decay=0.1), optim.Adadelta([scale.weight]),
                optim.Rprop([last.weight]), optim.ASGD([last.bias], t0=2)]
        cycle = optim.lr_scheduler.CyclicLR(opts[0], 0.01, 0.1, step_size_up=2)

        def train_step(x, y):
            loss = jg.nn.functional.multilabel_soft_margin_loss(net(x), y)
            loss.backward()
            for opt in opts:
                opt.step()
                opt.zero_grad()
            return loss
        step = jg.compile(train_step, cache=False) if compiled else train_step
        losses = []
        with warnings.catch_warnings():
            warnings.simplefilter("error", CompileWarning)  # never an eager fallback
            for _ in range(8):
                losses.append(step(x, y).item())
                cycle.step()
        runs.append((losses, [p.detach().numpy().copy() for p in net.parameters()], step))
    (expected, eager_params, _), (losses, params_, compiled_step) = runs
    np.testing.assert_allclose(losses, expected, rtol=1e-10, atol=1e-12)
    for ours, theirs in zip(params_, eager_params):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    assert len(compiled_step.programs) == 1 and compiled_step.recompiles == 0, compiled_step.log
    assert compiled_step.backend.name == "interpreter"


def rosenbrock(lib, weights):
    """A curved valley (and a quadratic term on a second parameter): LBFGS's history and line search
    both have work to do."""
    x, y = weights
    valley = (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()
    return valley + ((y - 0.5) ** 2 * lib.tensor([1.0, 3.0])).sum()


@needs_torch
@pytest.mark.parametrize("options", [
    {"lr": 0.1, "max_iter": 6, "history_size": 3},
    {"lr": 1.0, "max_iter": 8, "history_size": 4, "line_search_fn": "strong_wolfe"},
    {"lr": 1.0, "max_iter": 30, "max_eval": 12, "line_search_fn": "strong_wolfe", "tolerance_change": 1e-6},
], ids=["fixed-steps", "strong-wolfe", "strong-wolfe-few-evaluations"])
def test_lbfgs_steps_as_pytorchs(options):
    runs = []
    for lib in (jg, torch):
        weights = [lib.tensor([-1.2, 1.0, 0.8], dtype=lib.float64, requires_grad=True),
                   lib.tensor([2.0, -1.0], dtype=lib.float64, requires_grad=True)]
        opt = (optim if lib is jg else torch.optim).LBFGS(weights, **options)

        def closure():
            opt.zero_grad()
            loss = rosenbrock(lib, weights)
            loss.backward()
            return loss
        seen = []
        for _ in range(3):
            loss = opt.step(closure)
            state = opt.state[weights[0]]
            seen.append([float(loss.detach()), state["func_evals"], state["n_iter"], float(state["t"])]
                        + [float(v) for w in weights for v in w.detach().reshape(-1)])
        runs.append((seen, sorted(opt.state[weights[0]])))
    (ours, ours_keys), (theirs, theirs_keys) = runs
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
    assert ours_keys == theirs_keys


def test_lbfgs_checks_its_arguments():
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        optim.LBFGS([{"params": [jg.ones(1, requires_grad=True)]}, {"params": [jg.ones(1, requires_grad=True)]}])
    weight = jg.ones(1, requires_grad=True)
    opt = optim.LBFGS([weight], line_search_fn="backtracking")

    def closure():
        opt.zero_grad()
        loss = (weight * weight).sum()
        loss.backward()
        return loss
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)


def test_a_compiled_lbfgs_step_runs_eagerly_said_once_and_as_eager():
    """LBFGS reads numbers on the host at each iteration: a compiled step runs it eagerly. Until
    2026-11-28 it did so silently and every call traced the step again first."""
    from jitgrad.compile import CompileWarning
    runs = []
    for compiled in (False, True):
        weights = [jg.tensor([-1.2, 1.0, 0.8], dtype=jg.float64, requires_grad=True),
                   jg.tensor([2.0, -1.0], dtype=jg.float64, requires_grad=True)]
        opt = optim.LBFGS(weights, lr=0.1, max_iter=3)

        def step():
            def closure():
                opt.zero_grad()
                loss = rosenbrock(jg, weights)
                loss.backward()
                return loss
            return opt.step(closure)
        if compiled:
            step = jg.compile(step, cache=False)
            with pytest.warns(CompileWarning, match="LBFGS.step.. reads the loss"):
                losses = [float(step())]
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                losses += [float(step()) for _ in range(2)]
        else:
            losses = [float(step()) for _ in range(3)]
        runs.append(losses + [float(v) for w in weights for v in w.detach().reshape(-1)])
    np.testing.assert_array_equal(runs[1], runs[0])
