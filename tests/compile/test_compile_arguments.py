"""torch.compile's keyword arguments on ``jitgrad.compile`` (``compile/arguments.py``): ``disable``,
``backend``, ``mode``, ``options`` and ``dynamic`` mean what they mean in PyTorch where jitgrad can honour
them, and raise PyTorch's errors where PyTorch does. Before, each raised TypeError."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from compile_helpers import assert_close
from jitgrad.compile import CompiledFunction, CompileError, CompileWarning, InvalidBackend


def scaled_sum(x, a):
    return (x * a).tanh().sum()


def data():
    return jg.tensor(np.linspace(-1.0, 1.0, 6).reshape(2, 3))


def test_disable_and_the_eager_backend_return_the_function_itself():
    assert jg.compile(scaled_sum, disable=True) is scaled_sum
    assert jg.compile(disable=True)(scaled_sum) is scaled_sum
    assert jg.compile(scaled_sum, backend="eager") is scaled_sum


@pytest.mark.parametrize("mode", [None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"])
def test_torch_modes_compile_as_the_default(mode):
    compiled = jg.compile(scaled_sum, mode=mode, cache=False)
    assert isinstance(compiled, CompiledFunction)
    assert_close(compiled(data(), 2.0), scaled_sum(data(), 2.0))


def test_options_that_torch_modes_set_are_accepted():
    compiled = jg.compile(scaled_sum, options={"triton.cudagraphs": True, "max_autotune": True}, cache=False)
    assert_close(compiled(data(), 2.0), scaled_sum(data(), 2.0))


@pytest.mark.parametrize("arguments, error, message", [
    (dict(mode="fast"), RuntimeError, "Unrecognized mode=fast, should be one of: default"),
    (dict(mode="default", options={}), RuntimeError, "Either mode or options can be specified"),
    (dict(options={"use_fast_math": True}), RuntimeError, "Unexpected optimization option use_fast_math"),
    (dict(options=[("max_autotune", True)]), TypeError, "options must be a dict"),
    (dict(backend="cudagraphs"), InvalidBackend, "Invalid backend: 'cudagraphs'"),
    (dict(backend=lambda gm, example_inputs: gm), InvalidBackend, "jitgrad has no custom backends"),
    (dict(dynamic="auto"), TypeError, "dynamic must be None, True or False"),
    (dict(backend="aot_eager", device="cuda"), ValueError, "on the CPU only"),
])
def test_what_jitgrad_cannot_honour_raises(arguments, error, message):
    """PyTorch's exception and text for a mode, both a mode and options, or a backend it does not know
    (torch 2.13's, not compared here: importing torch takes seconds). An inductor option other than those
    torch's modes set raises although torch knows it: ``use_fast_math`` changes results, and is not done."""
    with pytest.raises(error, match=message.replace("(", r"\(")):
        jg.compile(scaled_sum, **arguments)


def test_aot_eager_runs_the_traced_graphs_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "")  # what a user gets: not the interpreter, where numba is
    compiled = jg.compile(scaled_sum, backend="aot_eager", cache=False)
    assert compiled.backend.name == "interpreter"
    assert_close(compiled(data(), 0.5), scaled_sum(data(), 0.5))
    assert [p.backend.name for p in compiled.programs] == ["interpreter"]


@pytest.mark.parametrize("dynamic, programs, recompiles", [(None, 2, 1), (True, 1, 0), (False, 3, 2)])
def test_dynamic_decides_when_a_number_argument_is_a_run_time_input(dynamic, programs, recompiles):
    compiled = jg.compile(scaled_sum, dynamic=dynamic, cache=False)
    x = data()
    for a in (0.5, 2.0, -3.0):
        assert_close(compiled(x, a), scaled_sum(x, a))
    assert (len(compiled.programs), compiled.recompiles) == (programs, recompiles)


def test_dynamic_true_still_specializes_a_number_needed_by_value():
    def repeated(x, n):
        return jg.cat([x] * n).sum()
    compiled = jg.compile(repeated, dynamic=True, cache=False)
    for n in (1, 2):
        assert_close(compiled(data(), n), repeated(data(), n))
    assert "stays a guarded constant" in compiled.log[0]


def test_dynamic_false_keeps_an_optimizers_learning_rate_a_constant():
    """An optimizer group's ``lr`` is a run-time input from the first trace by default; with
    ``dynamic=False`` it is a guarded constant, as every number: a new value recompiles, never stale."""
    w = jg.tensor(np.ones((3, 1)), requires_grad=True)
    w_eager = w.detach().clone().requires_grad_()
    opt, opt_eager = jg.optim.SGD([w], lr=0.1), jg.optim.SGD([w_eager], lr=0.1)

    def step(x, weight, optimizer):
        optimizer.zero_grad()
        loss = (x @ weight).tanh().sum()
        loss.backward()
        optimizer.step()
        return loss
    compiled = jg.compile(lambda x: step(x, w, opt), dynamic=False, cache=False)
    for lr in (0.1, 0.1, 0.05, 0.02):
        opt.param_groups[0]["lr"] = opt_eager.param_groups[0]["lr"] = lr
        assert_close(compiled(data()), step(data(), w_eager, opt_eager))
        assert_close(w, w_eager)
    assert any("'lr']': value was 0.1, now 0.05" in line for line in compiled.log)


def test_recompile_limit_and_name():
    """``recompile_limit`` replaces the default 8; past it the function runs eagerly (still right), with
    ``fullgraph=True`` the next recompile raises, as PyTorch's ``FailOnRecompileLimitHit``."""
    compiled = jg.compile(scaled_sum, dynamic=False, recompile_limit=1, name="scaled", cache=False)
    x = data()
    with pytest.warns(CompileWarning, match="scaled was recompiled 1 times"):
        for a in (0.5, 2.0, -3.0):
            assert_close(compiled(x, a), scaled_sum(x, a))
    assert compiled.recompiles == 1 and "recompiling scaled" in compiled.log[0]
    strict = jg.compile(scaled_sum, dynamic=False, recompile_limit=0, fullgraph=True, cache=False)
    strict(x, 0.5)
    with pytest.raises(CompileError, match=r"recompile limit \(0\).*value was 0.5, now 2.0"):
        strict(x, 2.0)
    with pytest.raises(ValueError, match="recompile_limit must be an int"):
        jg.compile(scaled_sum, recompile_limit=-1)
