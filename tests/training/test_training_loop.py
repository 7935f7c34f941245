"""A small classifier trained as a PyTorch user writes it (Module, CrossEntropyLoss, Adam,
DataLoader): eagerly, against PyTorch with the same weights and batches; and with the loss compiled
(one program for the whole run, the same losses as eager); and a compiled step that calls the
optimizer with a schedule changing its learning rate (one program, the rate a run-time input)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from layer_pairs import assert_close, needs_torch, torch

import jitgrad as jg
import jitgrad.nn as nn
import jitgrad.optim as optim
from jitgrad.compile import CompileWarning
from jitgrad.utils.data import DataLoader, TensorDataset

EPOCHS = 4


def data() -> TensorDataset:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 6))
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64) + (x[:, 2] > 1).astype(np.int64)
    return TensorDataset(jg.tensor(x), jg.tensor(y))


class MLP(nn.Module):
    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        self.hidden = nn.Linear(6, 16)
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(16, 3)

    def forward(self, x: jg.Tensor) -> jg.Tensor:
        return self.out(self.drop(self.hidden(x).tanh()))


def setup(dropout: float = 0.0, opt_class=optim.Adam, **options):
    jg.manual_seed(0)
    model = MLP(dropout).double()
    return model, opt_class(model.parameters(), **({"lr": 0.01} | options)), nn.CrossEntropyLoss()


def batches():
    """``EPOCHS`` epochs of shuffled batches, the order seeded."""
    jg.manual_seed(1)
    for _ in range(EPOCHS):
        yield from DataLoader(data(), batch_size=16, shuffle=True, drop_last=True)


def train_with_loss(loss_of, model, opt) -> list[float]:
    """``loss = loss_of(x, y); loss.backward(); opt.step()`` over the batches."""
    losses = []
    for x, y in batches():
        opt.zero_grad()
        loss = loss_of(x, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_the_loop_learns():
    model, opt, criterion = setup()
    losses = train_with_loss(lambda x, y: criterion(model(x), y), model, opt)
    assert np.mean(losses[-6:]) < 0.6 * np.mean(losses[:6])


@needs_torch
def test_the_loop_trains_as_pytorch():
    model, opt, criterion = setup()
    theirs = torch.nn.Sequential()  # filled below with PyTorch's layers of the same names
    theirs.hidden, theirs.out = torch.nn.Linear(6, 16), torch.nn.Linear(16, 3)
    theirs.double().load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    their_opt = torch.optim.Adam(theirs.parameters(), lr=0.01)
    their_criterion = torch.nn.CrossEntropyLoss()
    expected = []

    def both(x, y):
        their_opt.zero_grad()
        loss = their_criterion(theirs.out(theirs.hidden(torch.tensor(x.numpy())).tanh()), torch.tensor(y.numpy()))
        loss.backward()
        their_opt.step()
        expected.append(loss.item())
        return criterion(model(x), y)
    losses = train_with_loss(both, model, opt)
    np.testing.assert_allclose(losses, expected, rtol=1e-10)
    for name, value in theirs.state_dict().items():
        assert_close(model.state_dict()[name], value, what=name)


@pytest.mark.parametrize("dropout", [0.0, 0.3], ids=["plain", "dropout"])
def test_a_compiled_loss_trains_as_eager_in_one_program(dropout):
    model, opt, criterion = setup(dropout)
    eager = train_with_loss(lambda x, y: criterion(model(x), y), model, opt)
    model, opt, criterion = setup(dropout)
    compiled = jg.compile(lambda x, y: criterion(model(x), y), cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)  # no eager fallback
        losses = train_with_loss(compiled, model, opt)
    np.testing.assert_allclose(losses, eager, rtol=1e-10)
    assert len(compiled.programs) == 1 and compiled.log == []
    model.eval()  # the modules' training flags are guarded: evaluation compiles its own program
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        evaluated = compiled(*data().tensors)
    assert_close(evaluated, criterion(model(data().tensors[0]), data().tensors[1]))


@pytest.mark.parametrize("opt_class,options", [(optim.SGD, {"lr": 0.1}), (optim.Adam, {})], ids=["sgd", "adam"])
def test_a_compiled_step_with_the_optimizer_inside_compiles_once_and_trains_as_eager(opt_class, options, monkeypatch):
    """``opt.step()`` inside the compiled function, a StepLR halving the rate between calls: the rate is
    a run-time input and Adam's step count a tensor of its state, so no call recompiles (Adam's
    first call runs eagerly: it makes the moments), with eager's losses and weights. On the interpreter
    backend (the numba lowering of such steps: tests/compile/test_compile_optimizer_step.py)."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "interpreter")
    def train(compiled: bool) -> tuple[list[float], MLP, object]:
        model, opt, criterion = setup(opt_class=opt_class, **options)
        schedule = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

        def step(x, y):
            opt.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            opt.step()
            return loss
        run = jg.compile(step, cache=False) if compiled else step
        losses = []
        for x, y in batches():
            losses.append(run(x, y).item())
            schedule.step()
        return losses, model, run
    eager, eager_model, _ = train(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        losses, model, run = train(True)
    np.testing.assert_allclose(losses, eager, rtol=1e-10)
    for name, value in eager_model.state_dict().items():
        assert_close(model.state_dict()[name], value, what=name)
    # zero_grad() first: the first call finds no .grads, later ones find the last call's (a retrace,
    # kernels reused); the rate and the count never recompile
    assert run.recompiles == 0 and len(run.programs) <= 2, run.log


@needs_torch
def test_a_linear_weights_grad_has_the_parameters_layout_as_in_pytorch():
    """``torch.cat([p.grad.view(-1) for p in model.parameters()])`` flattens gradients in PyTorch; here
    ``view`` raised for a Linear weight (its gradient arrives as a transpose), and ``reshape(-1)`` was a
    copy that a write through did not reach. Through the engine, its fast path and ``create_graph``."""
    theirs = torch.nn.Linear(3, 2).double()
    theirs(torch.randn(4, 3, dtype=torch.float64)).sum().backward()
    for backward in (lambda loss: loss.backward(), lambda loss: loss.backward(create_graph=True),
                     lambda loss: loss.backward(retain_graph=True)):
        model = nn.Linear(3, 2).double()
        backward(model(jg.randn(4, 3, dtype=jg.float64)).sum())
        assert model.weight.grad.stride() == tuple(theirs.weight.grad.stride())
        model.weight.grad.view(-1).mul_(0.0)
        assert float(model.weight.grad.abs().sum()) == 0.0
