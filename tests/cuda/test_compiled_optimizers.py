"""A training step with its optimizer's step inside, compiled on CUDA (the simulator here): SGD with
momentum, Adam, AdamW and RMSprop, each stepping a tiny float64 ``Linear`` under a ``LambdaLR``, match
the same steps run eagerly on the CPU, and every call after the first (which makes the optimizers'
state, eagerly) runs one program.

Two things make this differ from the CPU case (tests/compile/test_compile_optimizer_step.py): the
state tensors lent to the trace and written in place are copied on the device, not to the host; and
Adam's and RMSprop's step count is a 0-d CPU tensor, as in PyTorch, which joins the CUDA program as it
joins an eager CUDA op and stays on the CPU. One compiled step trains the four models at once: a call
costs seconds on the simulator, and CI's whole run has to fit in 10 minutes on 2 cores.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn as nn
import jitgrad.optim as optim
from jitgrad.compile import CompileWarning

STEPS = 3
CONFIGS = {
    "sgd-momentum": ("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}),
    "adam": ("Adam", {"lr": 0.05}),
    "adamw": ("AdamW", {"lr": 0.05, "weight_decay": 0.1}),
    "rmsprop": ("RMSprop", {"lr": 0.01, "momentum": 0.5}),
}


def schedule(t: int) -> float:
    return 1.0 / (1.0 + 0.5 * t)


class Training:
    """One model, optimizer and scheduler per config, on ``device``."""

    def __init__(self, device: str) -> None:
        jg.manual_seed(0)
        self.nets = {name: nn.Linear(2, 1).double().to(device) for name in CONFIGS}
        self.opts = {name: getattr(optim, kind)(self.nets[name].parameters(), **options)
                     for name, (kind, options) in CONFIGS.items()}
        self.schedulers = [optim.lr_scheduler.LambdaLR(opt, schedule) for opt in self.opts.values()]

        nets, opts = self.nets, self.opts

        def step(x: jg.Tensor) -> list[jg.Tensor]:  # reads the models and optimizers, not the schedulers
            losses = []
            for name, net in nets.items():
                loss = (net(x) ** 2).sum()
                loss.backward()
                opts[name].step()
                opts[name].zero_grad()
                losses.append(loss)
            return losses
        self.step = step

    def train(self, step, x: jg.Tensor) -> list[list[float]]:
        losses = []
        for _ in range(STEPS):
            losses.append([loss.item() for loss in step(x)])
            for scheduler in self.schedulers:
                scheduler.step()
        return losses


@pytest.fixture(scope="module")
def trained():
    x = jg.tensor(np.random.default_rng(0).standard_normal((3, 2)))
    eager = Training("cpu")
    expected = eager.train(eager.step, x)
    compiled = Training("cuda")
    step = jg.compile(compiled.step, cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)  # never an eager fallback
        losses = compiled.train(step, x.to("cuda"))
    return eager, expected, compiled, losses, step


def test_one_program_after_the_first_call(trained):
    *_, step = trained
    assert len(step.programs) == 1 and step.recompiles == 0, step.log
    assert step.programs[0].backend.name == "numba_cuda"


@pytest.mark.parametrize("name", list(CONFIGS))
def test_compiled_cuda_steps_match_eager_cpu_steps(trained, name):
    eager, expected, compiled, losses, _ = trained
    column = list(CONFIGS).index(name)
    np.testing.assert_allclose([row[column] for row in losses], [row[column] for row in expected],
                               rtol=1e-10, atol=1e-12)
    for (key, ours), (_, theirs) in zip(compiled.nets[name].state_dict().items(),
                                        eager.nets[name].state_dict().items()):
        assert ours.device.type == "cuda"
        np.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12, err_msg=key)
    ours, theirs = compiled.opts[name].state_dict()["state"], eager.opts[name].state_dict()["state"]
    for index, state in theirs.items():
        assert ours[index].keys() == state.keys()
        for key, value in state.items():
            # the step count stays a 0-d CPU tensor, as eager (and PyTorch) keep it; the rest is on CUDA
            assert ours[index][key].device.type == ("cpu" if key == "step" else "cuda"), key
            np.testing.assert_allclose(ours[index][key].cpu().numpy(), value.numpy(), rtol=1e-10, atol=1e-12,
                                       err_msg=f"state {index} {key}")


def test_a_cpu_scalar_in_a_compiled_cuda_loss_runs_eagerly():
    """A loss program's forward and backward run apart, on one device: a 0-d CPU input there is left
    to eager execution (with a warning) rather than moved."""
    w = jg.tensor([1.0, 2.0], dtype=jg.float64, device="cuda", requires_grad=True)
    scale = jg.tensor(3.0, dtype=jg.float64)
    loss = jg.compile(lambda w: (w * scale).sum(), cache=False)
    with pytest.warns(CompileWarning, match="several devices"):
        out = loss(w)
    out.backward()
    assert out.item() == 9.0 and not loss.programs
    np.testing.assert_allclose(w.grad.cpu().numpy(), [3.0, 3.0])


def test_a_step_returning_a_cpu_scalar_runs_eagerly():
    """A step whose result is computed from 0-d CPU tensors alone is a CPU tensor eagerly; its CUDA
    program would give it on the device, so the call runs eagerly (with a warning)."""
    w = jg.tensor([1.0, 2.0], dtype=jg.float64, device="cuda", requires_grad=True)
    count = jg.tensor(0.0, dtype=jg.float64)

    def step():
        (w * w).sum().backward()
        with jg.no_grad():
            count.add_(1)
            w.sub_(w.grad * count)
        w.grad = None
        return count * 2
    compiled = jg.compile(step, cache=False)
    with pytest.warns(CompileWarning, match="returns a CPU tensor"):
        out = compiled()
    assert out.device.type == "cpu" and out.item() == 2.0 and count.item() == 1.0 and not compiled.programs
    np.testing.assert_allclose(w.detach().cpu().numpy(), [-1.0, -2.0])
