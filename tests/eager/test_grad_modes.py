"""The grad modes (no_grad, enable_grad, set_grad_enabled, inference_mode) as context managers,
decorators and per thread, against (where it is installed) PyTorch.

Torch-dependent tests call ``pytest.importorskip("torch")`` themselves, so the rest runs without it.
"""
from __future__ import annotations

import threading

import pytest

import jitgrad
from tensor_api_helpers import torch_or_skip


# ---- grad modes ------------------------------------------------------------------------------------

def _records() -> bool:
    return (jitgrad.tensor([1.0], requires_grad=True) * 2).requires_grad


def test_no_grad_and_enable_grad_as_context_managers():
    assert jitgrad.is_grad_enabled() and _records()
    with jitgrad.no_grad():
        assert not jitgrad.is_grad_enabled() and not _records()
        with jitgrad.enable_grad():
            assert jitgrad.is_grad_enabled() and _records()
        assert not jitgrad.is_grad_enabled()
    assert jitgrad.is_grad_enabled()


def test_grad_mode_restored_after_an_exception():
    with pytest.raises(ValueError):
        with jitgrad.no_grad():
            raise ValueError
    assert jitgrad.is_grad_enabled()


@pytest.mark.parametrize("bare", [False, True], ids=["called", "bare"])
def test_no_grad_and_enable_grad_as_decorators(bare):
    no_grad = jitgrad.no_grad if bare else jitgrad.no_grad()
    enable_grad = jitgrad.enable_grad if bare else jitgrad.enable_grad()

    @no_grad
    def off():
        """docstring kept"""
        return jitgrad.is_grad_enabled(), _records()

    @enable_grad
    def on():
        return jitgrad.is_grad_enabled(), _records()

    assert off() == (False, False) and off.__doc__ == "docstring kept" and off.__name__ == "off"
    assert jitgrad.is_grad_enabled()
    with jitgrad.no_grad():
        assert on() == (True, True)
        assert not jitgrad.is_grad_enabled()


def test_decorated_generator_runs_each_step_in_the_mode():
    @jitgrad.no_grad()
    def steps():
        yield jitgrad.is_grad_enabled()
        yield jitgrad.is_grad_enabled()

    gen = steps()
    assert next(gen) is False
    assert jitgrad.is_grad_enabled()  # restored between steps
    assert next(gen) is False

    @jitgrad.no_grad()
    def echo():
        received = yield
        try:
            yield received, jitgrad.is_grad_enabled()
        except KeyError:
            yield "caught", jitgrad.is_grad_enabled()
        return "done"

    gen = echo()
    next(gen)
    assert gen.send(7) == (7, False)
    assert gen.throw(KeyError()) == ("caught", False)
    with pytest.raises(StopIteration) as stop:
        next(gen)
    assert stop.value.value == "done" and jitgrad.is_grad_enabled()


def test_set_grad_enabled_as_function_context_manager_and_decorator():
    jitgrad.set_grad_enabled(False)
    try:
        assert not jitgrad.is_grad_enabled() and not _records()
    finally:
        jitgrad.set_grad_enabled(True)
    assert jitgrad.is_grad_enabled()
    with jitgrad.set_grad_enabled(False):
        assert not jitgrad.is_grad_enabled()
        with jitgrad.set_grad_enabled(True):
            assert _records()
        assert not jitgrad.is_grad_enabled()
    assert jitgrad.is_grad_enabled()

    @jitgrad.set_grad_enabled(False)
    def off():
        return jitgrad.is_grad_enabled()

    assert jitgrad.is_grad_enabled()  # decorating does not change the mode
    assert off() is False and jitgrad.is_grad_enabled()


@pytest.mark.parametrize("bare", [False, True], ids=["called", "bare"])
def test_inference_mode(bare):
    from jitgrad.autograd import is_inference_mode_enabled
    with jitgrad.inference_mode():
        assert not jitgrad.is_grad_enabled() and is_inference_mode_enabled() and not _records()
    assert jitgrad.is_grad_enabled() and not is_inference_mode_enabled()
    with jitgrad.inference_mode(False):
        assert jitgrad.is_grad_enabled() and not is_inference_mode_enabled()

    def probe():
        return jitgrad.is_grad_enabled(), is_inference_mode_enabled()

    decorated = jitgrad.inference_mode(probe) if bare else jitgrad.inference_mode()(probe)
    assert decorated() == (False, True) and probe() == (True, False)


def test_grad_modes_match_torch_as_decorators():
    torch = torch_or_skip()
    results = []
    for M in (jitgrad, torch):
        @M.no_grad
        def a():
            return M.is_grad_enabled()

        @M.inference_mode
        def b():
            return M.is_grad_enabled()

        @M.set_grad_enabled(False)
        def c():
            return M.is_grad_enabled()

        results.append((a(), b(), c(), M.is_grad_enabled()))
    assert results[0] == results[1] == (False, False, False, True)


def test_grad_mode_is_thread_local():
    inside, outside = {}, {}
    entered, release = threading.Event(), threading.Event()

    def worker():
        with jitgrad.no_grad():
            inside["enabled"] = jitgrad.is_grad_enabled()
            entered.set()
            release.wait(5)
            inside["records"] = _records()

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert entered.wait(5)
        outside["enabled"], outside["records"] = jitgrad.is_grad_enabled(), _records()
    finally:
        release.set()
        thread.join(5)
    assert inside == {"enabled": False, "records": False}
    assert outside == {"enabled": True, "records": True}


def test_new_thread_starts_with_grad_enabled():
    seen = []
    with jitgrad.no_grad():
        thread = threading.Thread(target=lambda: seen.append(jitgrad.is_grad_enabled()))
        thread.start()
        thread.join(5)
    assert seen == [True]


def test_inference_mode_nesting_matches_torch():
    """enable_grad inside inference mode records nothing (and a view of an inference tensor neither);
    inference_mode(False) inside it records again, with grad mode on even under no_grad."""
    torch = torch_or_skip()
    results = []
    for M in (jitgrad, torch):
        x = M.tensor([1.0, 2.0], requires_grad=True)
        with M.inference_mode():
            with M.enable_grad():
                inner = (M.is_grad_enabled(), (x * 2).requires_grad)
            with M.no_grad(), M.inference_mode(False):
                y = x * 2
                off = (M.is_grad_enabled(), M.is_inference_mode_enabled(), y.requires_grad, y.is_inference())
        results.append((inner, off))
    assert results[0] == results[1] == ((True, False), (True, False, True, False))
