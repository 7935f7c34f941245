"""Arguments may be nested lists, tuples, dicts and named tuples of tensors, and keyword arguments:
they are flattened to leaves under a structure guard, like JAX's pytrees."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import jitgrad as jg
from compile_helpers import assert_close
from jitgrad.compile.pytree import call_leaf_paths, describe_spec, flatten

Batch = collections.namedtuple("Batch", "x y")


def params(seed=0):
    rng = np.random.default_rng(seed)
    return [jg.tensor(rng.standard_normal(s), requires_grad=True) for s in ((3, 4), (4,), (4, 1))]


def batch(seed=1, rows=5):
    rng = np.random.default_rng(seed)
    return Batch(jg.tensor(rng.standard_normal((rows, 3))), jg.tensor(rng.standard_normal((rows, 1))))


def sgd(ps, data, lr=0.1):
    w1, b1, w2 = ps
    loss = (((data.x @ w1 + b1).tanh() @ w2 - data.y) ** 2).mean()
    loss.backward()
    with jg.no_grad():
        for p in ps:
            p -= lr * p.grad
            p.grad = None
    return loss


def test_parameters_in_a_list_compile_into_one_program_and_train_as_eager():
    ours, theirs = params(), params()
    step = jg.compile(sgd, cache=False, fullgraph=True)
    for i in range(4):
        data = batch(i)
        assert_close(step(ours, data), sgd(theirs, data))
    for a, b in zip(ours, theirs):
        assert_close(a, b)
    assert len(step.programs) == 1 and step.recompiles == 0


def test_dicts_keyword_arguments_and_nested_results():
    def f(weights, *, data, scale):
        h = data["x"] @ weights["w"]
        return {"out": (h * scale).sum(), "parts": [h.mean(), (h.max(),)]}
    rng = np.random.default_rng(3)
    w = {"w": jg.tensor(rng.standard_normal((3, 2)), requires_grad=True)}
    data = {"x": jg.tensor(rng.standard_normal((4, 3)))}
    compiled = jg.compile(f, cache=False, fullgraph=True)
    out, expected = compiled(w, data=data, scale=2.0), f(w, data=data, scale=2.0)
    assert set(out) == {"out", "parts"} and isinstance(out["parts"], list) and isinstance(out["parts"][1], tuple)
    assert_close(out["out"], expected["out"])
    assert_close(out["parts"][1][0], expected["parts"][1][0])
    out["out"].backward()
    we = w["w"].detach().requires_grad_()
    f({"w": we}, data=data, scale=2.0)["out"].backward()
    assert_close(w["w"].grad, we.grad)


def test_a_changed_structure_recompiles_and_says_how():
    f = jg.compile(lambda ps: sum(p.sum() for p in ps), cache=False)
    a, b = jg.ones(2), jg.ones(3)
    f([a, b])
    f([a, b, a])
    assert "the arguments' structure changed: was tuple(list(leaf, leaf)), now tuple(list(leaf, leaf, leaf))" \
        in f.log[-1]
    f((a, b))
    assert "now tuple(tuple(leaf, leaf))" in f.log[-1]


def test_the_same_tensor_twice_is_one_input_whose_updates_both_see():
    def step(p, q):
        loss = (p * q).sum()
        loss.backward()
        with jg.no_grad():
            p -= 0.1 * p.grad
        return loss, q.detach() * 1.0   # q * 1.0 would keep a graph a backward outside could use: eager
    w, we = jg.ones(3, requires_grad=True, dtype=jg.float64), jg.ones(3, requires_grad=True, dtype=jg.float64)
    compiled = jg.compile(step, cache=False, fullgraph=True)
    for _ in range(2):
        (loss, after), (expected, expected_after) = compiled(w, w), step(we, we)
        assert_close(loss, expected)
        assert_close(after, expected_after)
        assert_close(w.grad, we.grad)


@pytest.mark.parametrize("value", [[1, (2, {"a": 3})], {"b": [4, 5], "a": 6}, Batch(7, [8])])
def test_flatten_gives_every_leaf_with_the_path_that_reads_it(value):
    from jitgrad.compile.sources import source_of_path
    args, kwargs = (value,), {"k": 9}
    leaves, spec = flatten(args, kwargs)
    paths = call_leaf_paths(args, kwargs)
    assert len(paths) == len(leaves) and leaves[-1] == 9
    assert [source_of_path(p).read(args, kwargs) for p in paths] == leaves
    assert sorted(leaves) == list(range(min(leaves), min(leaves) + len(leaves) - 1)) + [9]
    assert describe_spec(spec).startswith("tuple(")
