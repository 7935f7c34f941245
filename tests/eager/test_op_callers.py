"""An op's caller (``jitgrad/ops/op_callers.py``) against its general path (``OpDef.__call__``): the
same output, the same node, the same saved values and the same gradients, for every op sample; and
the thread settings (``jitgrad/thread_settings.py``) that send a call down the general path."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.ops import op_callers
from jitgrad.ops.registry import REGISTRY
from jitgrad.thread_settings import all_default, departures
from op_samples import SAMPLES

CALLED = [s for s in SAMPLES if op_callers.caller(REGISTRY[s.op]) is not REGISTRY[s.op]]


@pytest.fixture
def general_path():
    """Every call takes ``OpDef.__call__``: a setting away from its default, as far as the callers know."""
    departures.add(1)
    yield
    departures.add(-1)


def _run(sample):
    inputs = [jg.tensor(a, requires_grad=sample.differentiable and a.dtype.kind == "f") for a in sample.arrays()]
    inputs = [t * 1.0 if t.requires_grad else t for t in inputs]  # non-leaves: nodes with edges to nodes
    out = sample.fn(*inputs)
    outputs = out if isinstance(out, tuple) else (out,)
    grads = None
    floats = [o for o in outputs if o.requires_grad]
    if floats:
        leaves = [t.grad_fn.next_functions[0][0].variable for t in inputs if t.requires_grad]
        total = sum((o * jg.tensor(np.linspace(0.5, 1.5, o.numel()).reshape(o.shape), dtype=o.dtype)).sum()
                    for o in floats)
        grads = jg.autograd.grad(total, leaves, allow_unused=True)
    return outputs, grads


def _graph(tensor) -> list:
    """The node behind ``tensor`` as the user sees it: names, edges, what it saved."""
    node = tensor.grad_fn
    if node is None:
        return []
    saved = getattr(node, "saved_values", None)
    values = saved if type(saved) is tuple else (saved,)
    return [node.name(), node.sequence_nr() is not None,
            [(type(f).__name__, nr) if f is not None else None for f, nr in node.next_functions],
            [type(v).__name__ for v in values], node.save_plan.entries if hasattr(node, "save_plan") else None]


@pytest.mark.parametrize("sample", CALLED, ids=[s.id for s in CALLED])
def test_a_caller_records_what_the_general_path_records(sample, request):
    fast_outputs, fast_grads = _run(sample)
    fast_graphs = [_graph(o) for o in fast_outputs]
    request.getfixturevalue("general_path")
    outputs, grads = _run(sample)
    for fast, general in zip(fast_outputs, outputs):
        assert type(fast) is type(general) and fast.dtype == general.dtype
        np.testing.assert_array_equal(fast.detach().numpy(), general.detach().numpy())
    assert fast_graphs == [_graph(o) for o in outputs]
    if grads is not None:
        for fast, general in zip(fast_grads, grads):
            assert (fast is None) == (general is None)
            if fast is not None:
                np.testing.assert_array_equal(fast.numpy(), general.numpy())


def test_the_samples_reach_callers_of_one_and_two_inputs():
    arities = {len(REGISTRY[s.op].inputs) for s in CALLED}
    assert arities == {1, 2} and len({s.op for s in CALLED}) > 40


def test_settings_away_from_their_defaults_are_counted_and_given_back():
    assert all_default()
    with jg.no_grad():
        assert not all_default()
        with jg.enable_grad():  # back at its default inside: nothing away from it
            assert all_default()
        assert not all_default()
        with jg.inference_mode():
            assert departures.count == 2
        x = jg.tensor([1.0], requires_grad=True) * 2
    assert all_default() and x.grad_fn is None
    with pytest.raises(ZeroDivisionError):
        with jg.no_grad():
            1 / 0
    assert all_default()
    with jg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        assert not all_default()
    assert all_default()


def test_no_grad_in_another_thread_changes_nothing_here():
    """While a thread holds no_grad, this thread's calls take the general path and still record."""
    entered, release = threading.Event(), threading.Event()

    def hold():
        with jg.no_grad():
            entered.set()
            release.wait(10)

    worker = threading.Thread(target=hold)
    worker.start()
    entered.wait(10)
    try:
        x = jg.tensor([1.0, 2.0], requires_grad=True)
        y = jg.sin(x) * x
        assert not all_default() and y.grad_fn.name() == "MulBackward0"
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.cos([1.0, 2.0]) * [1.0, 2.0] + np.sin([1.0, 2.0]), rtol=1e-6)
    finally:
        release.set()
        worker.join()
    assert all_default()


def test_a_caller_leaves_no_grad_inference_and_tracers_to_the_general_path():
    x = jg.tensor([0.5, 1.5], requires_grad=True)
    with jg.no_grad():
        assert jg.exp(x).grad_fn is None and (x * 2).grad_fn is None
    with jg.inference_mode():
        assert (x + 1).is_inference()
    assert jg.exp(x).grad_fn.name() == "ExpBackward0"


def test_a_caller_names_the_op_and_shapes_in_its_errors():
    with pytest.raises(RuntimeError, match=r"add\(float32\[2\], float32\[3\]\)"):
        jg.tensor([1.0, 2.0]) + jg.tensor([1.0, 2.0, 3.0])
