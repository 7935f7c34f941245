"""The IR by hand: building, printing, linting, generated code and the Interpreter."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.fx import Graph, GraphError, GraphModule, Interpreter, Opcode, tuple_item
from jitgrad.fx.codegen import LITERAL_ELEMENTS
from jitgrad.ops.registry import REGISTRY


def meta(shape, dtype=np.float32):
    return {"shape": shape, "dtype": np.dtype(dtype)}


def small_graph() -> Graph:
    """relu(x * w + 1.0).sum(0): every opcode and a keyword attribute."""
    g = Graph()
    x, w = g.placeholder("x", meta((2, 3))), g.placeholder("w", meta((3,)))
    b = g.get_attr(jg.tensor([0.5, -0.5, 2.0]), "bias")
    mul = g.call_function(REGISTRY["mul"], (x, w), {}, meta((2, 3)))
    add = g.call_function(REGISTRY["add"], (mul, b), {}, meta((2, 3)))
    relu = g.call_function(REGISTRY["relu"], (add,), {}, meta((2, 3)))
    total = g.call_function(REGISTRY["sum"], (relu,), {"dim": (0,), "keepdim": False}, meta((3,)))
    g.output(total)
    return g


def eager(x, w):
    return (x * w + jg.tensor([0.5, -0.5, 2.0])).relu().sum(0)


X, W = jg.randn(2, 3), jg.randn(3)


def test_small_graph_lints_prints_and_runs():
    g = small_graph()
    g.lint()
    text = str(g)
    assert text.splitlines()[0] == "graph(x: float32[2, 3], w: float32[3]):"
    assert "%sum: float32[3] = call_function sum(%relu, dim=(0,), keepdim=False)" in text
    assert text.splitlines()[-1] == "    return %sum"
    assert [n.op for n in g.nodes][:3] == [Opcode.PLACEHOLDER, Opcode.PLACEHOLDER, Opcode.GET_ATTR]
    expected = eager(X, W).numpy()
    np.testing.assert_allclose(Interpreter(g).run(X, W).numpy(), expected)
    np.testing.assert_allclose(GraphModule(g)(X, W).numpy(), expected)


def test_users_follow_args():
    g = small_graph()
    mul, add = g.find("mul"), g.find("add")
    assert list(mul.users) == [add]
    add.args = (g.find("x"), g.find("bias"))
    assert not mul.users and add in g.find("x").users
    g.erase_node(mul)
    g.lint()


def test_print_tabular(capsys):
    small_graph().print_tabular()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs", "value"]
    assert lines[5].split()[:3] == ["call_function", "mul", "mul"]


@pytest.mark.parametrize("breakage, message", [
    (lambda g: None, None),  # no change: lints clean
    (lambda g: g.reorder([g.nodes[0], g.nodes[1], g.nodes[2], g.nodes[4], g.nodes[3], *g.nodes[5:]]),
     "before it is defined"),
    (lambda g: g.find("add").users.clear(), "missing from its users"),
    (lambda g: g.find("x").users.update({g.find("sum"): None}), "does not read"),
    (lambda g: g.find("relu").meta.pop("dtype"), "metadata"),
    (lambda g: g.reorder([g.nodes[2], *g.nodes[:2], *g.nodes[3:]]), "placeholders must come before"),
    (lambda g: g.reorder([g.nodes[-1], *g.nodes[:-1]]), "exactly one output"),
    (lambda g: setattr(g.find("mul"), "target", np.multiply), "not a registry op"),
    (lambda g: g.constants.clear(), "not held by the graph"),
    (lambda g: setattr(g.find("relu"), "name", "mul"), "unique Python identifier"),
])
def test_lint_names_each_broken_invariant(breakage, message):
    g = small_graph()
    breakage(g)
    if message is None:
        g.lint()
        return
    with pytest.raises(GraphError, match=message):
        g.lint()


def test_a_second_output_is_refused_and_erasing_a_read_node_too():
    g = small_graph()
    with pytest.raises(GraphError, match="already has an output"):
        g.output(g.find("x"))
    with pytest.raises(GraphError, match="still read by add"):
        g.erase_node(g.find("mul"))


def test_names_are_identifiers_that_avoid_the_generated_code():
    g = Graph()
    names = [g.unique_name(hint) for hint in ["x", "x", "class", "np", "1st", "a-b", "constants"]]
    assert names == ["x", "x_1", "class_", "np_", "_1st", "a_b", "constants_"]


def test_code_runs_on_its_own_with_literals_and_the_constants_dict():
    g = small_graph()
    big = g.get_attr(jg.arange(LITERAL_ELEMENTS + 1).float().reshape(LITERAL_ELEMENTS + 1, 1), "big")
    total = g.find("sum")
    scaled = g.call_function(REGISTRY["mul"], (big, total), {}, meta((LITERAL_ELEMENTS + 1, 3)))
    g.output_node.args = ((total, [scaled, 2.0, float("inf")]),)
    g.lint()
    gm = GraphModule(g)
    assert "np.array([0.5, -0.5, 2.0], dtype=np.float32)" in gm.code
    assert 'constants["big"]' in gm.code and set(gm.constants) == {"big"}
    namespace: dict = {}
    exec(gm.code, namespace)
    total_alone, (scaled_alone, two, inf) = namespace["forward"](X, W, constants=gm.constants)
    total_module, (scaled_module, _, _) = gm(X, W)
    np.testing.assert_allclose(total_alone.numpy(), eager(X, W).numpy())
    np.testing.assert_allclose(scaled_alone.numpy(), scaled_module.numpy())
    assert (two, inf) == (2.0, float("inf"))


def test_multi_output_ops_go_through_tuple_item():
    g = Graph()
    x = g.placeholder("x", meta((4, 2)))
    parts = g.call_function(REGISTRY["split"], (x,), {"sizes": (1, 3), "dim": 0, "equal": False},
                            {"shape": ((1, 2), (3, 2)), "dtype": (np.dtype("float32"),) * 2})
    second = g.call_function(tuple_item, (parts, 1), {}, meta((3, 2)))
    g.output(second)
    g.lint()
    x_value = jg.randn(4, 2)
    assert "split_1 = split[1]" in GraphModule(g).code
    np.testing.assert_array_equal(GraphModule(g)(x_value).numpy(), x_value.numpy()[1:])
    np.testing.assert_array_equal(Interpreter(g).run(x_value).numpy(), x_value.numpy()[1:])
    second.args = (x, 0)
    with pytest.raises(GraphError, match="tuple_item"):
        g.lint()


def test_interpreter_checks_the_argument_count():
    with pytest.raises(TypeError, match="takes 2 arguments"):
        Interpreter(small_graph()).run(X)
