"""Replayed backward programs (``autograd/backward_replay.py``) against the engine: every registry op,
bit for bit, and every way a later graph can differ from the one a program was written for, which
must make the program give up rather than route a gradient where the graph does not send it."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd import backward_replay, fast_backward
from jitgrad.autograd.graph import Node
from test_fast_backward import GRAD_SAMPLES, assert_identical, engine_only, gradients, observe


@pytest.fixture
def replayed(monkeypatch):
    """Every fast run without a program is traced and writes one; the list tells, for each backward,
    whether a program replayed it."""
    backward_replay.cache.clear()
    monkeypatch.setattr(backward_replay, "traces", lambda root, seed: True)
    answers = []
    replay = backward_replay.replay

    def spy(root, seed):
        done = replay(root, seed)
        answers.append(done is not None)
        return done
    monkeypatch.setattr(backward_replay, "replay", spy)
    yield answers
    backward_replay.cache.clear()


@pytest.mark.parametrize("sample", GRAD_SAMPLES, ids=[s.id for s in GRAD_SAMPLES])
def test_a_replay_gives_the_engines_gradients_bit_for_bit(sample, replayed, monkeypatch):
    # the first draw writes the program, the others replay it (twice: the second accumulates)
    replays = [gradients(sample, seed) for seed in (0, 1)] + [gradients(sample, 2, twice=True)]
    assert replayed[1:] and all(replayed[1:]), f"{sample.id}: a program did not replay its own graph"
    engine_only(monkeypatch)
    expected = [gradients(sample, seed) for seed in (0, 1)] + [gradients(sample, 2, twice=True)]
    for seed, (a, e) in enumerate(zip(replays, expected)):
        assert_identical(a, e, f"{sample.id} (draw {seed})")


def backward_of(build, *arrays):
    """The leaves' gradients after ``build(*leaves).sum().backward()``."""
    leaves = [jg.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    build(*leaves).sum().backward()
    return [leaf.grad.numpy() for leaf in leaves]



def test_a_graph_whose_leaves_have_other_shapes_is_not_replayed(replayed):
    """Same nodes, same edges, same gradient shapes; only the leaf's slot differs: the program wrote a
    sum back to (3,), which must not happen to a (2, 3) leaf."""
    add = lambda x, y: x + y  # noqa: E731
    small, _ = backward_of(add, np.ones(3), np.ones((2, 3)))
    full, _ = backward_of(add, np.ones((2, 3)), np.ones((2, 3)))
    assert small.shape == (3,) and np.array_equal(small, [2.0, 2.0, 2.0])
    assert full.shape == (2, 3) and np.array_equal(full, np.ones((2, 3)))
    assert True not in replayed


@pytest.mark.parametrize("first", ["shared", "two"])
def test_a_shared_node_and_two_equal_ones_are_told_apart(first, replayed, monkeypatch):
    """``y * y`` with one ``exp`` node against ``exp(x) * exp(x)`` with two: the same tree, another
    graph, whichever the program was written for."""
    x = np.array([0.5, -1.0])
    shared = lambda a: (lambda y: y * y)(a.exp())  # noqa: E731
    two = lambda a: a.exp() * a.exp()  # noqa: E731
    order = [shared, two, shared] if first == "shared" else [two, shared, two]
    got = [backward_of(build, x)[0] for build in order]
    assert replayed == [False, False, True]
    engine_only(monkeypatch)
    for build, g in zip(order, got):
        assert np.array_equal(g, backward_of(build, x)[0])


@pytest.mark.parametrize("other", [
    lambda a, b: (a.cos() * b),            # another node class in the middle
    lambda a, b: (a.sin() * a),            # the second edge reaches the other leaf
    lambda a, b: (a.sin() * b.detach()),   # an edge fewer
    lambda a, b: (a.sin() * b)[:1],        # one node more
    lambda a, b: (a.sin() * b).float(),    # a dtype on the way
])
def test_a_graph_of_another_shape_runs_as_without_a_program(other, replayed, monkeypatch):
    _grads_or_none(lambda a, b: a.sin() * b)  # writes the program
    got = _grads_or_none(other)
    engine_only(monkeypatch)
    assert_identical(got, _grads_or_none(other), "after a program for another graph")
    assert True not in replayed


def _grads_or_none(build):
    a = jg.tensor([0.5, 1.0], dtype=jg.float64, requires_grad=True)
    b = jg.tensor([2.0, 3.0], dtype=jg.float64, requires_grad=True)
    build(a, b).sum().backward()
    return [None if t.grad is None else t.grad.numpy() for t in (a, b)]


@pytest.mark.parametrize("observer", ["tensor hook", "node prehook", "node hook", "retain_grad", "leaf hook"])
def test_a_hook_added_after_the_program_was_written_runs(observer, replayed):
    seen = []

    def step(observed: bool):
        x = jg.tensor([1.0, 2.0], requires_grad=True)
        y = x.sin()
        if observed:
            observe(observer, x, y, seen)
        (y * y).sum().backward()
        return y
    step(False)
    step(False)
    y = step(True)
    assert replayed[1] is True
    assert replayed[2] is (observer == "leaf hook")  # a leaf's hooks are looked at once the program ran
    assert seen or (observer == "retain_grad" and y.grad is not None)


def test_grad_of_some_leaves_through_a_replay_leaves_the_others_alone(replayed):
    results = []
    for _ in range(3):
        a, b = jg.tensor([1.0, 2.0], requires_grad=True), jg.tensor([3.0, 4.0], requires_grad=True)
        y = b.exp()
        loss = (a * a).sum() + y.sum()
        (ga,) = jg.autograd.grad(loss, [a])
        y.sum().backward()  # the exp node did not lead to a: not freed
        results.append((ga.numpy(), b.grad.numpy(), a.grad))
    assert replayed[2] is True
    for ga, gb, untouched in results:
        np.testing.assert_array_equal(ga, [2.0, 4.0])
        np.testing.assert_allclose(gb, np.exp([3.0, 4.0]))
        assert untouched is None


def test_a_program_keeps_no_graph_alive(replayed):
    nodes = []
    for _ in range(3):
        x = jg.tensor([1.0, 2.0], requires_grad=True)
        loss = (x.sin() * x).sum()
        nodes.append(weakref.ref(loss.grad_fn))
        loss.backward()
        del loss
    gc.collect()   # once: a collection costs seconds in the whole suite's heap
    assert [node() for node in nodes] == [None] * 3
    (programs,) = backward_replay.cache.programs.values()
    for program in programs:
        held = list(program.run.__globals__.values())
        assert not any(isinstance(v, (Node, np.ndarray, jg.Tensor)) for v in held)
    assert replayed[-1] is True


def test_a_graph_is_traced_only_once_it_comes_back():
    backward_replay.cache.clear()
    x = jg.tensor([1.0, 2.0], dtype=jg.float64, requires_grad=True)
    for step in range(4):
        key = (type((x.tanh() * x).sum().grad_fn), (), np.dtype(np.float64))
        programs = len(backward_replay.cache.programs.get(key, ()))
        assert programs == (1 if step == 3 else 0), f"step {step}: {programs} programs"
        x.grad = None
        (x.tanh() * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.tanh([1.0, 2.0]) + [1.0, 2.0] / np.cosh([1.0, 2.0]) ** 2)
    backward_replay.cache.clear()


def test_the_programs_of_one_key_are_bounded(replayed):
    for n in range(1, 2 * backward_replay.MAX_PROGRAMS_PER_KEY + 2):
        (got,) = backward_of(lambda a: a.sin() * a, np.linspace(0.0, 1.0, n))
        x = np.linspace(0.0, 1.0, n)
        np.testing.assert_allclose(got, np.cos(x) * x + np.sin(x), rtol=1e-15)
    assert all(len(p) <= backward_replay.MAX_PROGRAMS_PER_KEY for p in backward_replay.cache.programs.values())


def test_a_freed_graph_still_raises_the_engines_error(replayed):
    for _ in range(2):
        x = jg.tensor([1.0, 2.0], requires_grad=True)
        loss = (x.exp() * x).sum()
        loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_a_failing_formula_in_a_replay_leaves_every_grad_as_it_was(replayed, monkeypatch):
    x, w = jg.tensor([1.0, 2.0], requires_grad=True), jg.tensor([3.0, 4.0], requires_grad=True)
    (x.sin() * w).sum().backward()
    w.grad = kept = jg.tensor([5.0, 5.0])
    x.grad = None
    monkeypatch.setattr(fast_backward, "_replayed", lambda *args: pytest.fail("a failing replay returned"))
    from jitgrad.ops.registry import REGISTRY
    sin = REGISTRY["sin"]
    monkeypatch.setitem(sin.derivatives, "self", lambda grad, self: 1 / 0)
    for plan in sin.save_plans.values():
        plan.variants.clear()
    with pytest.raises(ZeroDivisionError):
        (x.sin() * w).sum().backward()
    assert w.grad is kept and x.grad is None


def test_grad_of_every_leaf_through_a_replay_frees_every_node(replayed):
    """A program that saw a gradient on every edge, asked for every leaf it reaches, frees all the
    nodes it ran without walking the graph (``Program.complete``): a second backward is the engine's
    error, as after the engine's own run."""
    for _ in range(3):
        a, b = jg.tensor([1.0, 2.0], requires_grad=True), jg.tensor([3.0, 4.0], requires_grad=True)
        loss = (a.exp() * b).sum()
        ga, gb = jg.autograd.grad(loss, [a, b])
        np.testing.assert_allclose(ga.numpy(), np.exp([1.0, 2.0]) * [3.0, 4.0])
        np.testing.assert_allclose(gb.numpy(), np.exp([1.0, 2.0]))
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()
    assert replayed[-1] is True
    (programs,) = backward_replay.cache.programs.values()
    assert all(program.complete for program in programs)


def test_a_replay_whose_formula_misses_runs_the_node_as_the_fast_path_does(replayed):
    """A program calls the formula each node ran when it was written; a node whose values that formula
    does not fit (here a number it saved) runs through ``apply_arrays``, which stages it anew."""
    for step in range(4):
        x = jg.tensor(np.array([1.0, 2.0]), requires_grad=True)
        (x.exp() * (0.5 + step)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]) * (0.5 + step), rtol=1e-15)
    assert replayed[1:] == [True, True, True]
    (programs,) = backward_replay.cache.programs.values()
    assert "apply_arrays" in programs[0].source


def test_past_the_root_a_program_calls_the_formulas_without_their_gradient_guards(replayed):
    """A program checks every gradient it routes, so past the root it calls each stage's ``routed``
    (the stage without its guards on the gradients); the root's seed meets the guarded one."""
    for op in ("sum", "mul", "exp"):  # other tests' stages may have filled these plans' variants
        for plan in jg.ops.REGISTRY[op].save_plans.values():
            plan.variants.clear()
    for _ in range(2):
        x = jg.tensor(np.array([1.0, 2.0]), requires_grad=True)
        (x.exp() * 2.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * np.exp([1.0, 2.0]), rtol=1e-15)
    (programs,) = backward_replay.cache.programs.values()
    called = {name: getattr(program.run.__globals__[name], "__name__", None) for program in programs
              for name in program.run.__code__.co_names if name.startswith("K")}
    assert sorted(n for n in called.values() if n in ("staged", "routed")) == ["routed", "routed", "staged"]
