"""The IR by hand: building, printing, linting, generated code and the Interpreter."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad import fx
from jitgrad.backends.nodes import ir_line
from jitgrad.fx import Graph, GraphError, GraphModule, Interpreter, NodeKind, Opcode, tuple_item
from jitgrad.fx.checked_graph import CheckedGraph, NotAlike
from jitgrad.fx.codegen import LITERAL_ELEMENTS
from jitgrad.fx.printing import format_node
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


def test_a_node_says_what_its_value_is_made_of():
    """``node.kind`` is read from the op's registry entry, for every pass and backend alike."""
    def program(x, w):
        y = (x @ w).relu()
        low, high = y.split(2, dim=1)
        return y.T.sum(dim=0), low, y.expand(2, 4, 4), y.max(dim=1)
    x, w = jg.randn(4, 3), jg.randn(3, 4)
    graph = fx.trace(program, x, w).graph
    kinds = {n.name: n.kind for n in graph.nodes}
    assert kinds == {"x": "opaque", "w": "opaque", "mm": "opaque", "relu": "elementwise", "permute": "view",
                     "sum": "reduction", "split": "view", "split_0": "view", "split_1": "view",
                     "expand": "elementwise", "max_dim": "opaque", "max_dim_0": "view", "max_dim_1": "view",
                     "output": "opaque"}
    assert graph.find("relu").kind is NodeKind.ELEMENTWISE and str(NodeKind.VIEW) == "NodeKind.VIEW"
    assert [k for k in NodeKind if k.in_loop] == [NodeKind.ELEMENTWISE, NodeKind.REDUCTION]


def test_opcodes_compare_equal_to_their_strings():
    """As in torch.fx, where ``node.op`` is a string: FX code compares it with strings."""
    x, w = jg.randn(2, 3, requires_grad=True), jg.randn(3, requires_grad=True)
    nodes = fx.trace(lambda x, w: (x * w).sum(), x, w).graph.nodes
    assert [n.op for n in nodes] == ["placeholder", "placeholder", "call_function", "call_function", "output"]
    mul = nodes[2]
    assert mul.op == "call_function" and "call_function" == mul.op and mul.op != "output"
    assert mul.op is Opcode.CALL_FUNCTION and Opcode("call_function") is Opcode.CALL_FUNCTION
    assert [n.name for n in nodes if n.op == "call_function"] == ["mul", "sum"]
    assert {n.op for n in nodes} == {"placeholder", "call_function", "output"}
    assert {n.op for n in nodes} == {Opcode.PLACEHOLDER, Opcode.CALL_FUNCTION, Opcode.OUTPUT}
    assert hash(mul.op) == hash("call_function") and {"call_function": 1}[mul.op] == 1
    assert mul.op in ("call_function", "call_method")


def test_printed_forms_of_opcodes_and_graphs_stay_as_they_were():
    """A ``str`` mixin changes ``format()`` (and f-strings) of an enum on some Python versions: pinned."""
    for opcode, name in [(Opcode.PLACEHOLDER, "PLACEHOLDER"), (Opcode.GET_ATTR, "GET_ATTR"),
                         (Opcode.CALL_FUNCTION, "CALL_FUNCTION"), (Opcode.OUTPUT, "OUTPUT")]:
        assert str(opcode) == f"{opcode}" == format(opcode) == "%s" % opcode == f"Opcode.{name}"
        assert f"{opcode:>25}" == f"Opcode.{name}".rjust(25)
        assert repr(opcode) == f"<Opcode.{name}: '{opcode.value}'>"
    g = small_graph()
    assert str(g) == "\n".join([
        "graph(x: float32[2, 3], w: float32[3]):",
        "    %x: float32[2, 3] = placeholder x",
        "    %w: float32[3] = placeholder w",
        "    %bias: float32[3] = get_attr bias",
        "    %mul: float32[2, 3] = call_function mul(%x, %w)",
        "    %add: float32[2, 3] = call_function add(%mul, %bias)",
        "    %relu: float32[2, 3] = call_function relu(%add)",
        "    %sum: float32[3] = call_function sum(%relu, dim=(0,), keepdim=False)",
        "    return %sum",
    ])
    assert [line.split()[0] for line in g.tabular().splitlines()[2:]] == [
        "placeholder", "placeholder", "get_attr", "call_function", "call_function", "call_function",
        "call_function", "output"]
    assert ir_line(g.find("sum")) == "%sum: float32[3] = call_function sum(%relu, dim=(0,), keepdim=False)"
    assert ir_line(g.find("bias")) == "%bias: float32[3] = get_attr bias"
    assert '  "mul" [label="mul\\ncall_function mul\\nfloat32[2, 3]"];' in fx.to_dot(g).splitlines()
    assert "    # %mul: float32[2, 3] = call_function mul(%x, %w)\n    mul = REGISTRY[\"mul\"](x, w)\n" \
        in GraphModule(g).code  # the listing's comments are the IR lines
    traced = fx.trace(lambda x, w: (x * w).exp().sum(), X, W).graph
    comments = [line.strip()[2:] for line in GraphModule(traced).code.splitlines() if line.strip().startswith("# ")]
    assert comments == [line.strip() for line in str(traced).splitlines()[1:-1] if "placeholder" not in line]
    assert "Opcode" not in GraphModule(g).code + str(g) + g.tabular() + str(fx.to_dot(g))


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
    (lambda g: g.find("sum").meta.update(shape=(1, 3)), "sum has .* but its op's rule gives"),
    (lambda g: setattr(g.find("relu"), "args", (g.find("w"),)), "relu has .* but its op's rule gives"),
    (lambda g: g.find("mul").meta.update(dtype=np.dtype(np.float64)), "mul has .* but its op's rule gives"),
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


def _one_call(value, kwargs=None, node_meta=None, g=None) -> Graph:
    """x * value (or with ``kwargs``): two graphs that differ in nothing else; built into ``g`` when
    given (a ``CheckedGraph``, which matches each node against its reference)."""
    g = Graph() if g is None else g
    x = g.placeholder("x", meta((3,)))
    g.output(g.call_function(REGISTRY["mul"], (x, value), kwargs or {}, {**meta((3,)), **(node_meta or {})}))
    return g


def _checked(reference: Graph, *call) -> CheckedGraph:
    """``_one_call(*call)`` made into a graph checked against ``reference``, as a second trace is."""
    checked = CheckedGraph(reference)
    try:
        _one_call(*call, g=checked)
    except NotAlike:
        assert checked.difference is not None
    return checked


@pytest.mark.parametrize("first, second", [
    (2.0, 2.0), (1, 1), (0.0, -0.0), (1, True), (1, 1.0), (float("nan"), float("nan")), ((1, 2), [1, 2]),
    ((1, slice(0, 2)), (1, slice(0, 3))), ("a", "b"), (np.dtype("float32"), np.dtype("float64")),
    (jg.float32, jg.float32), (slice(0, 2), slice(0, 2)),
], ids=lambda v: repr(v))
def test_a_checked_trace_is_alike_exactly_where_the_text_is(first, second):
    """A capture's second trace is checked against the first as it runs (``fx.checked_graph``): quick
    comparisons where they can tell, the node's text where they cannot; never 'alike' where the lines
    differ, and never 'different' where they agree (that would run a function eagerly for nothing)."""
    reference = _one_call(first)
    checked = _checked(reference, second)
    assert checked.alike == (str(reference) == str(_one_call(second)))
    if not checked.alike:
        assert checked.difference == f"{format_node(reference.nodes[1])!r} against " \
                                     f"{format_node(_one_call(second).nodes[1])!r}"
    else:
        assert checked.nodes == reference.nodes   # the first trace's own nodes stand for the second's


def test_a_checked_trace_tells_apart_names_kwargs_and_meta():
    base = _one_call(2, {"k": (1, 2)}, {"phase": "backward"})
    others = [(3, {"k": (1, 2)}, {"phase": "backward"}), (2, {"k": (1, 3)}, {"phase": "backward"}),
              (2, {"j": (1, 2)}, {"phase": "backward"}), (2, {"k": (1, 2)}),
              (2, {"k": (1, 2)}, {"phase": "forward"}), (2, {"k": (1, 2)}, {"shape": (4,)})]
    assert _checked(base, 2, {"k": (1, 2)}, {"phase": "backward"}).alike
    for other in others:
        assert not _checked(base, *other).alike
        assert str(base) != str(_one_call(*other))


def test_a_checked_trace_tells_apart_node_names_and_keeps_its_first_difference():
    renamed = Graph()
    x = renamed.placeholder("x", meta((3,)))
    renamed.get_attr(jg.tensor([1.0]), "mul")   # takes the name the call would have had
    renamed.output(renamed.call_function(REGISTRY["mul"], (x, 2), {}, meta((3,))))
    checked = CheckedGraph(renamed)
    y = checked.placeholder("x", meta((3,)))
    with pytest.raises(NotAlike, match="get_attr mul"):
        checked.call_function(REGISTRY["mul"], (y, 2), {}, meta((3,)))
    with pytest.raises(NotAlike, match="get_attr mul"):   # traced code that caught it cannot go on
        checked.get_attr(jg.tensor([1.0]), "mul")
    assert not checked.alike and checked.difference.startswith("'%mul: float32[1] = get_attr mul'")


def test_a_checked_call_compares_the_first_traces_metadata_with_the_value_returned():
    reference = _one_call(2)
    value = jg.ones(3)                          # float32[3], as the reference's mul
    checked = CheckedGraph(reference)
    x = checked.placeholder("x", meta((3,)))
    assert checked.match_call(REGISTRY["mul"], (x, 2), {}, value, {}) is reference.nodes[1]
    for other, phase in ((jg.ones(3, dtype=jg.float64), {}), (jg.ones(4), {}), (value, {"phase": "backward"})):
        checked = CheckedGraph(reference)
        x = checked.placeholder("x", meta((3,)))
        with pytest.raises(NotAlike):
            checked.match_call(REGISTRY["mul"], (x, 2), {}, other, phase)


def test_a_listing_spells_each_dtype_as_numpy_does():
    """Dtypes' text is kept per dtype; two equal dtypes that numpy prints apart stay apart."""
    aligned, packed = np.dtype([("a", "f8")], align=True), np.dtype([("a", "f8")])
    assert aligned == packed and str(aligned) != str(packed)
    for dtype in (aligned, packed, np.dtype("float32"), np.dtype(">f8")):
        g = Graph()
        g.placeholder("x", {"shape": (2,), "dtype": dtype})
        assert g.nodes[0].format_meta() == f"{dtype}[2]"


def test_placeholders_stay_right_through_inserts_reorders_and_erasures():
    g = Graph()
    a = g.placeholder("a", meta((2,)))
    neg = g.call_function(REGISTRY["neg"], (a,), {}, meta((2,)))
    b = g.placeholder("b", meta((2,)))
    assert [n.name for n in g.nodes] == ["a", "b", "neg"] and g.placeholders == [a, b]
    early = g.call_function(REGISTRY["neg"], (a,), {}, meta((2,)), before=b)  # a call between placeholders
    assert g.placeholders == [a, b]
    g.reorder([early, a, b, neg])
    assert g.placeholders == [a, b]
    g.reorder([a, b, early, neg])
    g.erase_nodes([early, neg])
    g.erase_node(a)
    assert g.placeholders == [b]
    g.output(b)
    g.lint()
