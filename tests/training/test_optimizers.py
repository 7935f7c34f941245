"""Optimizers against ``torch.optim``: from the same parameters and the same gradients, the same
parameters after every step (float64), for each option; param groups, state dicts and closures."""
from __future__ import annotations

import numpy as np
import pytest
from layer_pairs import assert_close, needs_torch, torch

import jitgrad as jg
import jitgrad.optim as optim

RNG = np.random.default_rng(2)
START = [RNG.standard_normal((3, 2)), RNG.standard_normal(2), RNG.standard_normal((2, 2))]
GRADIENTS = [[RNG.standard_normal(w.shape) for w in START] for _ in range(8)]

CONFIGS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1, "maximize": True}),
    ("Adam", {}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.9), "eps": 1e-6, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "maximize": True}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.5, "amsgrad": True}),
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "momentum": 0.5, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "centered": True, "maximize": True}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1, "initial_accumulator_value": 0.2}),
    ("Adagrad", {"lr": 0.1, "eps": 1e-6, "maximize": True}),
]


def params(lib) -> list:
    return [lib.tensor(w.copy(), requires_grad=True) for w in START]


def set_gradients(tensors, lib, gradients) -> None:
    for tensor, gradient in zip(tensors, gradients):
        tensor.grad = None if gradient is None else lib.tensor(gradient)


def groups(tensors) -> list[dict]:
    """Two groups, the second with its own learning rate, the last parameter without gradients at times."""
    return [{"params": tensors[:2]}, {"params": tensors[2:], "lr": 0.05}]


@needs_torch
@pytest.mark.parametrize("name,options", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_optimizer_steps_as_pytorchs(name, options):
    ours, theirs = params(jg), params(torch)
    opt_ours = getattr(optim, name)(groups(ours), **options)
    opt_theirs = getattr(torch.optim, name)(groups(theirs), **options)
    for step, gradients in enumerate(GRADIENTS):
        gradients = gradients[:2] + [None] if step % 3 == 1 else gradients  # a parameter skipped now and then
        set_gradients(ours, jg, gradients)
        set_gradients(theirs, torch, gradients)
        opt_ours.step()
        opt_theirs.step()
        for a, b in zip(ours, theirs):
            assert_close(a, b, tolerance=1e-12, what=f"step {step}")


@needs_torch
@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad"])
def test_a_group_added_after_some_steps_steps_as_pytorchs(name):
    """``add_param_group`` between steps: the new group's state is made at its first step (Adagrad's,
    made with the optimizer, raised KeyError for a parameter added later)."""
    options = {"lr": 0.1, "momentum": 0.5} if name in ("SGD", "RMSprop") else {"initial_accumulator_value": 0.3} \
        if name == "Adagrad" else {}
    ours, theirs = params(jg), params(torch)
    optimizers = [getattr(lib.optim, name)([{"params": t[:2]}], **options) for lib, t in ((jg, ours), (torch, theirs))]
    for step, gradients in enumerate(GRADIENTS[:4]):
        if step == 2:
            for opt, tensors in zip(optimizers, (ours, theirs)):
                opt.add_param_group({"params": tensors[2:], "lr": 0.05})
        for opt, tensors, lib in zip(optimizers, (ours, theirs), (jg, torch)):
            set_gradients(tensors, lib, gradients)
            opt.step()
        for a, b in zip(ours, theirs):
            assert_close(a, b, tolerance=1e-12, what=f"step {step}")


@pytest.mark.parametrize("name,options", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_state_dict_resumes_training(name, options):
    """Four steps, a save and a load into a new optimizer, four more: as eight steps without a break."""
    straight, resumed = params(jg), params(jg)
    opt = getattr(optim, name)(groups(straight), **options)
    first = getattr(optim, name)(groups(resumed), **options)
    for step, gradients in enumerate(GRADIENTS):
        if step == 4:
            state = first.state_dict()
            first = getattr(optim, name)(groups(resumed), lr=123.0)
            first.load_state_dict(state)
        set_gradients(straight, jg, gradients)
        set_gradients(resumed, jg, gradients)
        opt.step()
        first.step()
    for a, b in zip(straight, resumed):
        assert_close(a, b, tolerance=0)


@needs_torch
@pytest.mark.parametrize("name,options", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_state_dict_has_pytorchs_layout(name, options):
    """The same state keys per parameter, the same numbering, the settings PyTorch keeps (less its
    options for other devices and kernels)."""
    ours, theirs = getattr(optim, name)(groups(params(jg)), **options), \
        getattr(torch.optim, name)(groups(params(torch)), **options)
    for opt, lib in ((ours, jg), (theirs, torch)):
        set_gradients([p for g in opt.param_groups for p in g["params"]], lib, GRADIENTS[0])
        opt.step()
    ours_state, theirs_state = ours.state_dict(), theirs.state_dict()
    assert {k: sorted(v) for k, v in ours_state["state"].items()} == \
        {k: sorted(v) for k, v in theirs_state["state"].items()}
    assert [g["params"] for g in ours_state["param_groups"]] == [g["params"] for g in theirs_state["param_groups"]]
    assert set(theirs_state["param_groups"][0]) - set(ours_state["param_groups"][0]) <= {
        "foreach", "differentiable", "fused", "capturable"}


def test_zero_grad_and_closure():
    weight = jg.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([weight], lr=0.5)

    def closure():
        opt.zero_grad()
        loss = (weight * weight).sum()
        loss.backward()
        return loss
    assert opt.step(closure).item() == 5.0
    assert weight.tolist() == [0.0, 0.0]
    opt.zero_grad(set_to_none=False)
    assert weight.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert weight.grad is None


def test_param_groups_take_the_defaults_and_refuse_overlaps():
    a, b = jg.ones(2, requires_grad=True), jg.ones(2, requires_grad=True)
    opt = optim.Adam([a], lr=0.1)
    opt.add_param_group({"params": b, "betas": (0.5, 0.5)})
    assert opt.param_groups[1]["lr"] == 0.1 and opt.param_groups[1]["betas"] == (0.5, 0.5)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([a * 2])
    with pytest.raises(TypeError, match="ordering of tensors in sets will change"):
        opt.add_param_group({"params": {b}})
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([])
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        optim.SGD([a], nesterov=True)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        optim.Adam([a], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        optim.Adam([a]).load_state_dict(opt.state_dict())


def test_loaded_state_is_a_copy_cast_to_the_parameters():
    weight = jg.ones(2, dtype=jg.float32, requires_grad=True)
    opt = optim.Adam([weight])
    weight.grad = jg.ones(2)
    opt.step()
    state = opt.state_dict()
    state["state"][0]["exp_avg"] = state["state"][0]["exp_avg"].double()
    copy = optim.Adam([weight])
    copy.load_state_dict(state)
    assert copy.state[weight]["exp_avg"].dtype == jg.float32
    assert copy.state[weight]["exp_avg"] is not opt.state[weight]["exp_avg"]
    assert copy.state[weight]["step"].item() == 1.0


def test_the_state_is_keyed_by_parameter_identity_and_deep_copies_with_them():
    """``opt.state`` keeps its entries in lists (so that a compiled step can name each state tensor),
    keyed by the parameters' identity: a deep copy of the optimizer is keyed by the copied parameters."""
    import copy as copying
    w = jg.tensor([1.0, 2.0], requires_grad=True)
    opt = jg.optim.SGD([w], lr=0.1, momentum=0.9)
    w.grad = jg.tensor([1.0, 1.0])
    opt.step()
    assert w in opt.state and list(opt.state) == [w] and len(opt.state) == 1
    assert opt.state[w]["momentum_buffer"].tolist() == [1.0, 1.0]
    twin = copying.deepcopy(opt)
    copied = twin.param_groups[0]["params"][0]
    assert copied is not w and copied in twin.state and w not in twin.state
    assert twin.state[copied]["momentum_buffer"] is not opt.state[w]["momentum_buffer"]
    assert jg.tensor([0.0]) not in opt.state and opt.state.get(jg.tensor([0.0])) is None
    del opt.state[w]
    assert len(opt.state) == 0 and opt.state[w] == {} and len(opt.state) == 1   # made on access, as defaultdict
