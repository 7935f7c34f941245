"""The engine's fast path (``autograd/fast_backward.py``) and staged formulas (``ops/staged_backward.py``)
against the engine itself: every registry op's gradients, bit for bit, and every way a backward can be
observed, which must send it to the engine."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import jitgrad as jg
from helpers import leaves
from jitgrad.autograd import fast_backward
from jitgrad.ops import staged_backward
from jitgrad.ops.registry import REGISTRY, OpDef
from op_samples import SAMPLES

GRAD_SAMPLES = [s for s in SAMPLES if s.differentiable]

# Ops whose formulas run on tensors inside the fast path, and why: their nodes save what no guard can
# compare (an index array), or their formulas write in place or make tensors outside the ops.
NOT_STAGED = {
    "getitem": "an advanced index is an array attribute",
    "index_scatter": "an advanced index is an array attribute",
    "index_put": "an advanced index is an array attribute",
    "copy_slices": "its formula writes into a copy of the gradient",
    "max_dim": "its formula makes the mask of the chosen elements outside the ops",
    "min_dim": "its formula makes the mask of the chosen elements outside the ops",
}


@pytest.fixture
def taken(monkeypatch):
    """Whether each backward took the fast path (True) or went to the engine (False)."""
    answers = []
    run = fast_backward.run

    def spy(*args):
        result = run(*args)
        answers.append(result is not None)
        return result
    monkeypatch.setattr(fast_backward, "run", spy)
    return answers


def engine_only(monkeypatch):
    monkeypatch.setattr(fast_backward, "run", lambda *args: None)


def gradients(sample, seed: int, twice: bool = False, through_grad: bool = False) -> list:
    """The ``.grad`` of each float input after ``(f(inputs) * v).sum().backward()`` (run twice: the
    second accumulates into the first's), or what ``autograd.grad`` answers for them."""
    arrays = sample.arrays(seed)
    inputs = leaves(arrays)
    wrt = [t for t, a in zip(inputs, arrays) if a.dtype.kind == "f"]
    for _ in range(2 if twice else 1):
        out = sample.fn(*inputs)
        v = np.random.default_rng(seed + 7).uniform(-1.5, 1.5, size=out.shape)
        loss = (out * jg.tensor(v)).sum()
        if through_grad:
            return [None if g is None else g.numpy() for g in jg.autograd.grad(loss, wrt, allow_unused=True)]
        loss.backward()
    return [None if t.grad is None else t.grad.numpy() for t in wrt]


def assert_identical(actual: list, expected: list, what: str) -> None:
    for i, (a, e) in enumerate(zip(actual, expected)):
        if a is None or e is None:
            assert a is None and e is None, f"{what}: input {i} has a gradient on one path only"
            continue
        assert a.dtype == e.dtype and a.shape == e.shape, f"{what}: input {i}: {a.dtype}{a.shape} vs {e.dtype}{e.shape}"
        assert np.array_equal(a, e, equal_nan=True), f"{what}: input {i} differs:\n{a}\n{e}"


@pytest.mark.parametrize("sample", GRAD_SAMPLES, ids=[s.id for s in GRAD_SAMPLES])
def test_fast_path_gives_the_engines_gradients_bit_for_bit(sample, taken, monkeypatch):
    # two draws: the second reuses the stages the first made (or makes others where values differ)
    def all_forms():
        return [gradients(sample, seed) for seed in (0, 1)] + [gradients(sample, 2, twice=True),
                                                               gradients(sample, 3, through_grad=True)]
    fast = all_forms()
    assert taken and all(taken), f"{sample.id}: a backward left the fast path"
    engine_only(monkeypatch)
    expected = all_forms()
    for seed, (a, e) in enumerate(zip(fast, expected)):
        assert_identical(a, e, f"{sample.id} (draw {seed})")


def test_every_differentiable_op_is_staged_or_said_not_to_be():
    for sample in GRAD_SAMPLES:
        gradients(sample, 0)
    def variants(op):
        return [v for plan in op.save_plans.values() for v in plan.variants.values()]
    staged = {name for name, op in REGISTRY.items() if any(v.stages for v in variants(op))}
    unstaged = {name for name, op in REGISTRY.items() if any(v.unstaged for v in variants(op))}
    reached = {s.op for s in GRAD_SAMPLES}
    no_longer = unstaged - staged - set(NOT_STAGED)
    assert not no_longer, f"formulas that no longer stage: {sorted(no_longer)}"
    missing = {name for name in reached if REGISTRY[name].differentiable} - staged - set(NOT_STAGED)
    assert not missing, f"ops whose samples never staged a formula: {sorted(missing)}"


def w1_loss(x):
    y = x
    for _ in range(5):
        y = jg.sin(y) * 1.01 + 0.1
        y = jg.tanh(y) * y
    return y.sum()


def test_a_stage_replays_the_formulas_and_misses_on_other_values():
    x = jg.tensor(np.linspace(-1, 1, 4), requires_grad=True)
    loss = (x.sin() * x).sum()
    mul = loss.grad_fn.next_functions[0][0]
    loss.backward(retain_graph=True)
    (stage,) = [s for s in mul.save_plan.variants[(4,)].stages
                if s.run([np.ones(4)], mul) is not staged_backward.MISS]
    assert "def staged(grads, node)" in stage.source and "return MISS" in stage.source
    sin_x, x_values = np.sin(x.detach().numpy()), x.detach().numpy()
    for got, expected in zip(stage.run([np.full(4, 2.0)], mul), (2.0 * x_values, 2.0 * sin_x)):
        np.testing.assert_array_equal(got, expected)
    assert stage.run([np.ones(5)], mul) is staged_backward.MISS            # another shape
    assert stage.run([np.ones(4, np.float32)], mul) is staged_backward.MISS  # another dtype
    loss.backward()  # frees the saved values: the stage can no longer read them
    assert stage.run([np.ones(4)], mul) is staged_backward.MISS


def observe(observer: str, leaf: jg.Tensor, y: jg.Tensor, seen: list) -> None:
    """Makes the backward through ``y = f(leaf)`` observed: what each observer sees goes into ``seen``
    (a tensor hook also multiplies the gradient by 10)."""
    if observer == "tensor hook":
        y.register_hook(lambda g: seen.append(g) or g * 10)
    elif observer == "node prehook":
        y.grad_fn.register_prehook(lambda grads: seen.append(grads))
    elif observer == "node hook":
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append(grad_inputs))
    elif observer == "retain_grad":
        y.retain_grad()
    elif observer == "leaf hook":
        leaf.register_hook(lambda g: seen.append(g))


@pytest.mark.parametrize("observer", ["tensor hook", "node prehook", "node hook", "retain_grad", "leaf hook",
                                      "anomaly"])
def test_an_observed_backward_goes_to_the_engine(observer, taken):
    x = jg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    seen = []
    y = x.exp()
    z = y * 2
    observe(observer, x, y, seen)
    with jg.autograd.set_detect_anomaly(observer == "anomaly"):
        z.sum().backward()
    assert True not in taken
    factor = 20 if observer == "tensor hook" else 2
    np.testing.assert_allclose(x.grad.numpy(), factor * np.exp(x.detach().numpy()))
    if observer == "retain_grad":
        np.testing.assert_array_equal(y.grad.numpy(), [2.0, 2.0, 2.0])
    elif observer != "anomaly":
        assert seen


def test_a_freed_graph_and_a_modified_saved_tensor_raise_the_engines_errors(taken):
    x = jg.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    y = x * 1.0
    loss = (y * y).sum()
    with jg.no_grad():
        y.mul_(2)
    x.grad = before = jg.tensor([7.0, 7.0])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    assert x.grad is before and x.grad.numpy().tolist() == [7.0, 7.0]


def test_retain_graph_runs_again_and_accumulates(taken):
    x = jg.tensor([1.0, -2.0], requires_grad=True)
    loss = w1_loss(x)
    loss.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), first + first)
    assert taken == [True, True]


def test_grad_never_shares_memory_with_anything_else(taken):
    a, b = jg.tensor([1.0, 2.0], requires_grad=True), jg.tensor([3.0, 4.0], requires_grad=True)
    seed = jg.tensor([1.0, 1.0])
    ((a + b) * 1.0).backward(seed)              # one new gradient, passed to two leaves
    e = jg.tensor([1.0, 2.0], requires_grad=True)
    (e.exp() + e).backward(seed)                # the caller's seed, passed on to a leaf
    c = jg.tensor([1.0, 2.0], requires_grad=True)
    (c * 3.0).sum().backward()                  # a gradient made by the backward: .grad may keep it
    d = jg.tensor([[1.0, 2.0]], requires_grad=True)
    d.expand(3, 2).sum().backward()             # a view of the seed, summed
    assert taken == [True, True, True, True]
    a.grad.mul_(100)
    e.grad.mul_(100)
    assert b.grad.numpy().tolist() == [1.0, 1.0] and seed.numpy().tolist() == [1.0, 1.0]
    np.testing.assert_array_equal(c.grad.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(d.grad.numpy(), [[3.0, 3.0]])


def test_a_formula_that_reads_a_value_is_not_staged(taken):
    """A formula whose result depends on a value read in Python must never be replayed with that value
    baked in: the second call's sign differs from the first's."""
    def branching(grad, self):
        return grad * (2.0 if self.sum().item() > 0 else 3.0)
    op = OpDef("test_branching", ("self",), np.copy, {"self": branching}, node="TestBranchingBackward")
    for values, factor in (([1.0, 2.0], 2.0), ([-1.0, -2.0], 3.0), ([1.0, 2.0], 2.0)):
        x = jg.tensor(values, requires_grad=True)
        op(x).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [factor, factor])
    (plan,) = op.save_plans.values()
    (variants,) = plan.variants.values()
    assert not variants.stages and variants.unstaged == 3
    assert taken == [True, True, True]


def test_a_stage_made_under_one_default_dtype_misses_under_another(taken, monkeypatch):
    """``(other * 0.5).exp()`` of an integer ``other`` is a tensor of the default dtype. Staged under
    float64, ``grad * that`` was written into that float64 temporary; replayed under float32 the
    temporary is float32, and the float64 product was rounded to float32 in it (pow's derivative for
    its exponent, with the log of an integer base, did this)."""
    def half_other(grad, other):
        return grad * (other * 0.5).exp()
    op = OpDef("test_default_dtype", ("self", "other"), np.multiply, {"self": half_other},
               node="TestDefaultDtypeBackward")
    before = jg.get_default_dtype()

    def grads():
        found = []
        try:
            for default in (jg.float64, jg.float32, jg.float64, jg.float32):
                jg.set_default_dtype(default)
                x = jg.tensor(np.array([0.1, 0.7, 1.3]), requires_grad=True)
                (op(x, jg.tensor(np.array([1, 3, 7]))) * 0.3).sum().backward()
                found.append(x.grad.numpy())
        finally:
            jg.set_default_dtype(before)
        return found
    fast = grads()
    assert taken and all(taken)
    engine_only(monkeypatch)
    for a, e in zip(fast, grads()):
        np.testing.assert_array_equal(a, e)


def test_a_scalar_that_changes_every_step_does_not_grow_the_stages(taken):
    x = jg.tensor([1.0, 2.0], requires_grad=True)
    for step in range(3 * staged_backward.MAX_STAGES):
        x.grad = None
        (x * (0.5 + step)).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [0.5 + step] * 2)
    variants = REGISTRY["mul"].save_plans[(True, False)].variants[(2,)]
    assert len(variants.stages) + variants.unstaged <= staged_backward.MAX_STAGES
    assert all(taken)


def test_a_graph_built_on_two_threads_is_still_right(taken):
    """Sequence numbers are per thread: a node made on another thread may carry a larger number than a
    node made after it here. The fast path must notice, and the engine gets it right."""
    x = jg.tensor([0.5, 1.5], requires_grad=True)
    for _ in range(50):  # this thread's counter runs ahead of the other's
        jg.tensor([1.0], requires_grad=True) * 2
    made = {}
    worker = threading.Thread(target=lambda: made.update(y=x.exp()))
    worker.start()
    worker.join()
    z = made["y"] * x
    z.sum().backward()
    expected = np.exp([0.5, 1.5]) * (1 + np.array([0.5, 1.5]))
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_a_failing_formula_leaves_every_grad_as_it_was(taken):
    def failing(grad, self):
        raise ValueError("no gradient today")
    op = OpDef("test_failing", ("self",), np.copy, {"self": failing}, node="TestFailingBackward")
    x, w = jg.tensor([1.0, 2.0], requires_grad=True), jg.tensor([3.0, 4.0], requires_grad=True)
    w.grad = kept = jg.tensor([5.0, 5.0])
    with pytest.raises(ValueError, match="no gradient today"):
        (op(x) * w).sum().backward()
    assert w.grad is kept and x.grad is None and taken == [False]


def test_an_observer_of_ops_sees_the_backward(taken):
    """A tracer observes the formulas' ops as the engine runs them: the fast path, which runs none,
    stays out of its way."""
    from jitgrad.ops.registry import observing
    x = jg.tensor([1.0, 2.0], requires_grad=True)
    loss = (x.sin() * x).sum()
    seen = []
    with observing(lambda op, args, attrs, out: seen.append(op.name)):
        loss.backward()
    assert True not in taken and "cos" in seen


def test_grad_of_some_leaves_leaves_the_others_alone(taken):
    a, b = jg.tensor([1.0, 2.0], requires_grad=True), jg.tensor([3.0, 4.0], requires_grad=True)
    b.register_hook(lambda g: pytest.fail("the hook of a leaf not asked for must not run"))
    loss = (a.exp() * b).sum()
    (ga,) = jg.autograd.grad(loss, [a], retain_graph=True)
    np.testing.assert_allclose(ga.numpy(), np.exp([1.0, 2.0]) * [3.0, 4.0])
    loss.backward(inputs=[a])
    np.testing.assert_array_equal(a.grad.numpy(), ga.numpy())
    assert b.grad is None and taken == [True, True]
    y = a * 2  # a non-leaf input: the engine's
    (gy,) = jg.autograd.grad((y * y).sum(), [y])
    np.testing.assert_allclose(gy.numpy(), 2 * y.detach().numpy())
    assert taken[-1] is False


def test_every_shape_of_a_program_is_staged():
    """The cap on variants bounds what values alone vary; shapes, of which a program has a bounded set,
    are staged each (a cap over all shapes would leave the later layers of a network unstaged)."""
    for n in range(1, 3 * staged_backward.MAX_STAGES):
        x = jg.tensor(np.linspace(-1.0, 1.0, n), requires_grad=True)
        (x.cos() * 2.0).sum().backward()
    variants = REGISTRY["cos"].save_plans[(True,)].variants
    assert all(variants[(n,)].stages for n in range(1, 3 * staged_backward.MAX_STAGES))


def test_a_stage_its_plan_dropped_answers_miss(monkeypatch):
    """A stage kept by a replay program (``formula_for``) stops answering once its plan has dropped its
    variants (more shapes than ``MAX_SHAPES``): it answers ``MISS`` and the node is staged afresh."""
    monkeypatch.setattr(staged_backward, "MAX_SHAPES", 2)
    x = jg.tensor(np.linspace(-1.0, 1.0, 3), requires_grad=True)
    y = x.sin()
    node = y.grad_fn
    # the plan is shared by the process: start it empty (earlier tests may have staged these shapes)
    monkeypatch.setattr(node.save_plan, "variants", {})
    grads = [np.ones(3)]
    stage = node.array_formula(grads) or (node.apply_arrays(grads) and node.array_formula(grads))
    assert stage is not None and stage(grads, node) is not staged_backward.MISS
    for n in (4, 5):  # two more shapes: the plan drops what it had
        (jg.tensor(np.ones(n), requires_grad=True).sin()).sum().backward()
    assert stage(grads, node) is staged_backward.MISS
    np.testing.assert_array_equal(node.apply_arrays(grads)[0], np.cos(x.detach().numpy()))


def test_a_stage_writes_its_own_dead_temporaries_in_place():
    """tanh's derivative, ``grad * (1 - y * y)``, makes one array in its stage, not three, and gives the
    bits the formulas on tensors give."""
    x = jg.tensor(np.linspace(-2.0, 2.0, 7), requires_grad=True)
    y = x.tanh()
    grads = [np.linspace(0.5, 1.5, 7)]
    fast = y.grad_fn.apply_arrays(grads)[0]
    stage = y.grad_fn.array_formula(grads)
    source = next(s.source for v in REGISTRY["tanh"].save_plans[(True,)].variants.values() for s in v.stages
                  if s.run is stage)
    assert source.count("out=") == 2
    with jg.no_grad():
        (slow,) = y.grad_fn.apply([jg.tensor(grads[0])], None)
    np.testing.assert_array_equal(fast, slow.numpy())


def test_a_temporary_of_another_layout_is_not_written_in_place(taken, monkeypatch):
    """``cos`` of a stack of broadcast views keeps their permuted layout; ``grad * cos`` written into it
    kept that layout where the engine's fresh product is C-ordered, and the sum of the two stacked
    halves that ``expand``'s gradient takes then rounded otherwise in its last bits (a random program
    found it: ``test_eager_fast_path_matches_the_engine``)."""
    def program(x, w):
        return (jg.stack([x.reshape(2, 1).expand(2, 2, 2)] * 2).sin() * w).sum()

    rng = np.random.default_rng(0)
    draws = [(rng.standard_normal(2), rng.standard_normal((2, 2, 2, 2))) for _ in range(40)]

    def grads():
        found = []
        for x, w in draws:
            xt = jg.tensor(x, requires_grad=True)
            program(xt, jg.tensor(w, requires_grad=True)).backward()
            found.append(xt.grad.numpy())
        return found
    fast = grads()
    assert taken and all(taken)
    engine_only(monkeypatch)
    for i, (a, e) in enumerate(zip(fast, grads())):
        assert np.array_equal(a, e), f"draw {i}: {a - e}"


def test_a_bias_gradient_kept_as_it_is_shares_no_memory(taken):
    """A bias's gradient is summed with keepdim and reshaped: a view, which ``.grad`` keeps without a
    copy only when nothing else holds its memory."""
    x = jg.tensor(np.ones((4, 3)))
    w = jg.tensor(np.full((3, 2), 0.5), requires_grad=True)
    b = jg.tensor(np.zeros(2), requires_grad=True)
    c = jg.tensor(np.zeros(2), requires_grad=True)
    y = x @ w + b
    (y.sum() + (y + c).sum()).backward()
    assert taken == [True]
    b.grad.zero_()
    np.testing.assert_array_equal(c.grad.numpy(), [4.0, 4.0])
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 2), 8.0))


def test_grad_of_some_leaves_frees_only_the_nodes_leading_to_them(taken):
    """The engine runs (and frees) only the nodes on a path to the inputs of ``autograd.grad``: a branch
    that leads elsewhere keeps its saved values for a later backward, as in PyTorch."""
    a, b = jg.tensor([1.0, 2.0], requires_grad=True), jg.tensor([0.5, 1.5], requires_grad=True)
    y = b.exp()
    loss = (a * a).sum() + y.sum()
    (ga,) = jg.autograd.grad(loss, [a])
    y.sum().backward()  # the exp node did not lead to a: still usable
    np.testing.assert_allclose(b.grad.numpy(), np.exp([0.5, 1.5]))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        jg.autograd.grad(loss, [a])  # the nodes that led to a were freed
    assert taken[0] is True


def test_a_seed_of_another_dtype_is_cast_as_the_engine_casts_it(taken, monkeypatch):
    def grad_with_float32_seed():
        x = jg.tensor([0.5, -1.0, 2.0], dtype=jg.float64, requires_grad=True)
        (x.sin() * x).backward(jg.tensor([1.0, 2.0, 3.0], dtype=jg.float32))
        return x.grad.numpy()
    fast = grad_with_float32_seed()
    assert taken == [True]
    engine_only(monkeypatch)
    expected = grad_with_float32_seed()
    assert fast.dtype == expected.dtype == np.float64 and np.array_equal(fast, expected)


def test_formulas_run_on_tensors_see_grad_mode_off_and_leave_it_on(taken):
    """The fast path leaves grad mode as it finds it (a stage runs no ops); a formula it runs on
    tensors, unstaged, runs with grad mode off and records nothing, as in the engine."""
    seen = []

    def formula(grad, self):
        seen.append((jg.is_grad_enabled(), self.requires_grad))
        result = grad * (2.0 if self.sum().item() > 0 else 3.0)
        seen.append(result.grad_fn)
        return result
    op = OpDef("test_grad_mode_formula", ("self",), np.copy, {"self": formula}, node="TestGradModeBackward")
    x = jg.tensor([1.0, 2.0], requires_grad=True)
    op(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    # staged first (on tensors that require no grad, stopped at item()), then run on the leaf itself
    assert seen == [(False, False), (False, True), None] and jg.is_grad_enabled()
    assert taken == [True]
