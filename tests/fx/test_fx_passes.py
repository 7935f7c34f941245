"""Each pass the FX way: a tiny graph, the pass, the change it made, identical outputs, ``lint()``."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn.functional as F
from jitgrad import fx
from jitgrad.fx import Graph, GraphError, GraphModule, Opcode
from jitgrad.fx.graph import Listing
from jitgrad.fx.joint import is_backward
from jitgrad.fx.passes.schedule import units
from jitgrad.fx.passes import (PassManager, batch_matrix_products, eliminate_common_subexpressions,
                               eliminate_dead_code, fold_constants, group_fusions, partition_joint, plan_memory,
                               rematerialize, share_convolution_columns, simplify_algebra, topological_sort)
from jitgrad.ops.registry import REGISTRY

rematerialize_module = importlib.import_module("jitgrad.fx.passes.rematerialize")  # the package exports the pass
fusion_module = importlib.import_module("jitgrad.fx.passes.fusion")


def values(result):
    """Nested outputs as numpy arrays, for comparison."""
    if isinstance(result, (tuple, list)):
        return [values(r) for r in result]
    if isinstance(result, dict):
        return {k: values(v) for k, v in result.items()}
    return result.detach().numpy() if isinstance(result, jg.Tensor) else result


def assert_same_values(a, b):
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same_values(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same_values(a[k], b[k])
    else:
        np.testing.assert_allclose(a, b, rtol=1e-6)


def raw(graph, *args):
    """What the graph's code returns (gradients included, nothing written to ``.grad``)."""
    module = GraphModule(graph)
    return values(module.forward(*args, constants=module.constants))


def run_pass(graph_pass, graph, *args):
    """Runs the pass, lints, checks the outputs did not change; returns the pass's record."""
    before = raw(graph, *args)
    assert graph_pass(graph) is graph
    graph.lint()
    assert_same_values(raw(graph, *args), before)
    return graph.history[-1]


def names(graph, op=Opcode.CALL_FUNCTION):
    return [n.target_name for n in graph.nodes if n.op is op]


def with_backward(fn):
    def program(*inputs):
        out = fn(*inputs)
        out.sum().backward()
        return out
    return program


X, W = jg.randn(3, 4), jg.randn(4)


# ---- topological_sort ---------------------------------------------------------------------------------
def test_topological_sort_repairs_order_and_keeps_the_rest_stable():
    g = fx.trace(lambda x, w: (x * w).exp() + x.sin(), X, W).graph
    mul, sin = g.find("mul"), g.find("sin")
    order = list(g.nodes)
    order.remove(mul)
    order.insert(order.index(sin), mul)  # x, w, exp, mul, sin...: exp before its input
    g.reorder(order)
    with pytest.raises(GraphError):
        g.lint()
    topological_sort(g)
    g.lint()
    record = g.history[-1]
    assert_same_values(values(GraphModule(g)(X, W)), values((X * W).exp() + X.sin()))
    assert [n.name for n in g.nodes] == ["x", "w", "mul", "exp", "sin", "add", "output"]
    assert record.changes == ["moved mul", "moved exp"]
    assert run_pass(topological_sort, g, X, W).changes == []


def test_topological_sort_takes_the_ready_node_that_came_first():
    """The stable order, against its definition taken literally (each time, the first node in the old
    order whose inputs are all placed), on a graph shuffled many ways: nodes out of place are put
    back by a heap beside a scan of the rest, which must not change which node goes first."""
    g = fx.trace(lambda x, w: ((x * w).exp() + x.sin()).tanh().sum() + (x @ w).cos().mean() + w.abs().sum(),
                 X, W).graph
    rng = np.random.default_rng(0)
    for _ in range(40):
        *body, output = g.nodes
        shuffled = [body[i] for i in rng.permutation(len(body))] + [output]
        g.reorder(shuffled)
        expected, placed = [], set()
        while len(expected) < len(body):
            node = next(n for n in shuffled[:-1] if n not in placed and all(m in placed for m in n.all_input_nodes))
            expected.append(node)
            placed.add(node)
        topological_sort(g)
        assert list(g.nodes) == expected + [output]


def test_topological_sort_names_a_cycle():
    g = fx.trace(lambda x: x.exp().sin().cos(), X).graph
    g.find("exp").args = (g.find("sin"),)
    with pytest.raises(GraphError, match="cycle: exp -> sin -> exp|cycle: sin -> exp -> sin"):
        topological_sort(g)


# ---- eliminate_dead_code ------------------------------------------------------------------------------
def test_dead_code_goes():
    def f(x):
        unused = x.exp() * 2.0  # noqa: F841 - the dead branch
        return x.sin()
    g = fx.trace(f, X).graph
    record = run_pass(eliminate_dead_code, g, X)
    assert names(g) == ["sin"] and record.changes == ["removed mul", "removed exp"]


def test_dce_removes_the_backward_branch_of_an_input_whose_gradient_is_not_requested():
    def f(x, w):
        (gx,) = jg.autograd.grad(((x * w).exp()).sum(), x, retain_graph=True)
        loss = ((x * w).exp()).sum()
        loss.backward()
        return gx
    x, w = jg.randn(3, requires_grad=True), jg.randn(3, requires_grad=True)
    gm = fx.trace(lambda x, w: f(x, w), x, w)
    g = gm.graph
    g.output_node.args = (g.output_node.args[0][0],)  # keep the autograd.grad result, drop .grad outputs
    g.output_node.meta.clear()
    backward_before = [n.name for n in g.nodes if is_backward(n) and n.op is Opcode.CALL_FUNCTION]
    record = run_pass(eliminate_dead_code, g, x, w)
    backward_after = [n.name for n in g.nodes if is_backward(n) and n.op is Opcode.CALL_FUNCTION]
    assert len(backward_after) < len(backward_before)
    reads_w_grad = [n for n in g.nodes if is_backward(n) and n.op is Opcode.CALL_FUNCTION
                    and g.find("x") in n.all_input_nodes]
    assert not reads_w_grad  # w's gradient (grad * x) is gone
    assert record.changed


# ---- eliminate_common_subexpressions ------------------------------------------------------------------
def test_cse_merges_equal_calls_and_equal_constants_but_not_different_attributes():
    def f(x):
        a = x.sum(0) + x.sum(0) + x.sum(1).sum()
        return a * jg.tensor([2.0]) + a * jg.tensor([2.0]) + x.mean()
    g = fx.trace(f, X).graph
    record = run_pass(eliminate_common_subexpressions, g, X)
    assert names(g).count("sum") == 3 and names(g, Opcode.GET_ATTR) == ["_tensor_constant"]
    assert record.changes == ["sum_1 -> sum", "_tensor_constant_1 -> _tensor_constant", "mul_1 -> mul"]


def test_cse_rewrites_a_reader_of_many_duplicates_once_and_keys_chains_through_them():
    def f(x):
        rows = [x.sum(0).exp() for _ in range(5)]   # sum and exp repeated: exp's copies read sum's copies
        return jg.stack(rows) * x.sum(0)
    g = fx.trace(f, X).graph
    record = run_pass(eliminate_common_subexpressions, g, X)
    stack = next(n for n in g.nodes if n.op is Opcode.CALL_FUNCTION and n.target_name == "stack")
    assert [a.name for a in stack.args[0]] == ["exp"] * 5 and names(g).count("sum") == 1
    assert len(record.changes) == 9   # 5 sums (4 in the rows, 1 after) and 4 exps merged


def test_cse_keeps_zero_and_negative_zero_apart():
    g = fx.trace(lambda x: (1.0 / (x * 0.0), 1.0 / (x * -0.0)), X).graph
    run_pass(eliminate_common_subexpressions, g, X)
    assert names(g).count("mul") == 2   # 1 / (x * -0.0) is -inf where 1 / (x * 0.0) is inf


# ---- fold_constants -----------------------------------------------------------------------------------
def test_fold_constants_computes_constant_subgraphs_once():
    def f(x):
        scale = (jg.ones(4) * 3.0).exp()
        return x * scale + jg.full((4,), 2.0).sum()
    g = fx.trace(f, X).graph
    record = run_pass(fold_constants, g, X)
    assert names(g) == ["mul", "add"] and len(record.changes) == 3
    np.testing.assert_allclose(g.constants["exp_folded"].numpy(), np.exp(3.0), rtol=1e-6)


def test_fold_constants_leaves_broadcasts_that_would_grow_a_constant():
    g = fx.trace(lambda x: x + (jg.ones(1) * 2.0).expand(100), jg.randn(100)).graph
    record = run_pass(fold_constants, g, jg.randn(100))
    assert names(g) == ["expand", "add"] and record.changes == ["mul -> mul_folded"]


# ---- simplify_algebra ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fn, remaining", [
    (lambda x: x * 1.0 + 0.0, []),
    (lambda x: 1 * (0.0 + x) / 1.0 - 0.0, []),
    (lambda x: x + jg.zeros(3, 4), []),                                  # adding a zero gradient
    (lambda x: x.reshape(12).reshape(4, 3).reshape(2, 6), ["reshape"]),
    (lambda x: x.reshape(12).reshape(3, 4), []),
    (lambda x: x.transpose(0, 1).transpose(1, 0), []),
    (lambda x: x.transpose(0, 1).transpose(0, 1).exp(), ["exp"]),
    (lambda x: x.permute(1, 0).permute(1, 0), []),
    (lambda x: x.expand(3, 4), []),
    (lambda x: x * jg.ones(1, 1).expand(3, 4), []),                      # a whole step's loss gradient
    (lambda x: jg.ones(12).reshape(3, 4) * x, []),
    (lambda x: x * jg.full((1, 1), 2.0).expand(3, 4), ["expand", "mul"]),
    (lambda x: x * jg.ones(2, 3, 4), ["mul"]),                           # broadcasts: keeps the op
    (lambda x: x.long() * 1.0, ["to_dtype", "mul"]),                     # promotes: keeps the op
    (lambda x: jg.stack([x[0], x[1], x[2]]), []),                        # every row in order: x
    (lambda x: jg.stack([x[0], x[2], x[1]]), ["getitem"] * 3 + ["stack"]),   # another order: a copy
    (lambda x: jg.stack([x[0], x[1]]), ["getitem"] * 2 + ["stack"]),      # not every row
    (lambda x: jg.stack([x[0], x[1], x[2]], 1), ["getitem"] * 3 + ["stack"]),  # another dimension
])
def test_simplify_algebra(fn, remaining):
    g = fx.trace(fn, X).graph
    record = run_pass(simplify_algebra, g, X)
    run_pass(eliminate_dead_code, g, X)
    assert names(g) == remaining
    assert record.changed == (remaining != names(fx.trace(fn, X).graph))


def _cross_entropy_gradient(reduction, dim=1):
    def program(x, targets):
        loss = F.nll_loss(x.log_softmax(dim), targets, reduction=reduction)
        return jg.autograd.grad(loss.sum(), [x])
    return program


@pytest.mark.parametrize("reduction, dim, fused", [("mean", 1, True), ("sum", 1, True), ("none", 1, True),
                                                   ("mean", 0, False)])
def test_simplify_algebra_writes_a_cross_entropy_gradient_as_one_op(reduction, dim, fused):
    """log_softmax's backward of nll_loss's becomes cross_entropy_backward (an ignored target included),
    with the same values; not for a log_softmax over the batch."""
    x, targets = jg.randn(4, 5, dtype=jg.float64, requires_grad=True), jg.tensor([2, -100, 0, 4])
    g = fx.trace(_cross_entropy_gradient(reduction, dim), x, targets).graph
    run_pass(simplify_algebra, g, x, targets)
    run_pass(eliminate_dead_code, g, x, targets)
    backward = {"cross_entropy_backward", "nll_loss_backward", "log_softmax_backward"} & set(names(g))
    assert backward == ({"cross_entropy_backward"} if fused else {"nll_loss_backward", "log_softmax_backward"})


# ---- batch_matrix_products ----------------------------------------------------------------------------
def rnn(steps):
    """W4's shape: one matrix times a vector per step (independent of one another) plus a recurrence,
    and the gradients of both matrices."""
    def program(wh, wx, xs):
        h = jg.zeros(wh.shape[0], dtype=wh.dtype)
        for t in range(steps):
            h = jg.tanh(wh @ h + wx @ xs[t])
        return jg.autograd.grad((h * h).sum(), [wh, wx])
    return program


def rnn_inputs(steps=5, hidden=3, features=2):
    return (jg.randn(hidden, hidden, dtype=jg.float64, requires_grad=True),
            jg.randn(hidden, features, dtype=jg.float64, requires_grad=True),
            jg.randn(steps, features, dtype=jg.float64))


def test_batch_matrix_products_multiplies_independent_vectors_at_once_and_sums_outer_products_as_one():
    inputs = rnn_inputs()
    g = fx.trace(rnn(5), *inputs).graph
    assert names(g).count("mv") == 10 + 4          # forward wh @ h and wx @ x_t; backward wh.T @ g
    record = run_pass(batch_matrix_products, g, *inputs)
    for graph_pass in (simplify_algebra, eliminate_dead_code):
        run_pass(graph_pass, g, *inputs)
    assert names(g).count("mv") == 5 + 4           # the recurrence stays (wh @ h0 and the backward's)
    products = [n for n in g.nodes if n.target_name == "mm"]
    assert [tuple(p.meta["shape"]) for p in products] == [(5, 3), (3, 2), (3, 3)]
    xs = g.placeholders[2]
    assert products[0].args[0] is xs and products[1].args[1] is xs   # x[t] for every t: xs, no copy
    matrices = [n.target_name for n in g.nodes if len(n.meta.get("shape", ())) == 2]
    assert "add" not in matrices and "unsqueeze" not in names(g)     # no outer product is left
    assert len(record.changes) == 3


def test_batch_matrix_products_leaves_dependent_and_few_products():
    inputs = rnn_inputs(steps=3)
    g = fx.trace(rnn(3), *inputs).graph
    assert not run_pass(batch_matrix_products, g, *inputs).changed   # three of each: below MIN_PRODUCTS

    def chain(w, v):   # each vector is the previous product: nothing to batch
        for _ in range(6):
            v = w @ v
        return v
    w, v = jg.randn(3, 3), jg.randn(3)
    g = fx.trace(chain, w, v).graph
    assert not run_pass(batch_matrix_products, g, w, v).changed


def test_batch_matrix_products_groups_a_matrix_around_products_too_few_to_batch():
    """Only a matrix with MIN_PRODUCTS products or more is grouped, and only the stretch between its
    first and last product is walked for what the vectors depend on: ``u``'s products (one before,
    one reading ``w``'s results after) stay as they are, ``w``'s four become one product."""
    w, u, xs = jg.randn(3, 3, dtype=jg.float64), jg.randn(3, 3, dtype=jg.float64), jg.randn(4, 3, dtype=jg.float64)

    def program(w, u, xs):
        first = u @ xs[0]
        ys = [w @ first] + [w @ xs[t] for t in (1, 2, 3)]
        return u @ (ys[0] + ys[1] + ys[2] + ys[3])
    g = fx.trace(program, w, u, xs).graph
    record = run_pass(batch_matrix_products, g, w, u, xs)
    assert names(g).count("mv") == 2 and names(g).count("mm") == 1 and len(record.changes) == 1
    product = next(n for n in g.nodes if n.target_name == "mm")
    assert product.meta["shape"] == (4, 3)


def test_batch_matrix_products_adds_what_else_the_sum_holds():
    # float64: the pass sums in another order, which float32 would show at run_pass's tolerance
    a, b, c = (jg.randn(*shape, dtype=jg.float64) for shape in ((6, 3), (6, 2), (3, 2)))

    def program(a, b, c):
        total = c * 2.0
        for t in (4, 1, 5, 0, 2):       # outer products of rows in no order, and one more term
            total = total + a[t].unsqueeze(1) * b[t]
        return total
    g = fx.trace(program, a, b, c).graph
    run_pass(batch_matrix_products, g, a, b, c)
    run_pass(eliminate_dead_code, g, a, b, c)
    assert names(g).count("mm") == 1 and names(g).count("add") == 1 and names(g).count("stack") == 2


# ---- share_convolution_columns ------------------------------------------------------------------------

def conv_step(**attrs):
    def program(x, w, b):
        y = jg.nn.functional.conv2d(x, w, b, **attrs)
        return jg.autograd.grad(jg.tanh(y).sum(), [x, w, b])
    return program


def conv_inputs(channels=4, kernel=(3, 2)):
    return (jg.randn(2, channels, 7, 6, dtype=jg.float64, requires_grad=True),
            jg.randn(6, channels // 2, *kernel, dtype=jg.float64, requires_grad=True),
            jg.randn(6, dtype=jg.float64, requires_grad=True))


def test_the_weight_gradient_reads_the_forward_columns():
    inputs = conv_inputs()
    program = conv_step(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
    g = fx.trace(program, *inputs).graph
    assert names(g).count("convolution") == 1 and names(g).count("im2col") == 1
    record = run_pass(share_convolution_columns, g, *inputs)   # same values as the convolution's
    run_pass(eliminate_dead_code, g, *inputs)
    assert "convolution" not in names(g) and names(g).count("im2col") == 1
    columns = next(n for n in g.nodes if n.target_name == "im2col")
    assert "phase" not in columns.meta                          # gathered in the forward
    assert any(user.meta.get("phase") == "backward" for user in columns.users)
    assert len(record.changes) == 1


def test_two_convolutions_of_one_image_and_windows_read_the_first_ones_columns():
    """A layer called twice on one batch, or two weights of one shape: one gather for both forwards
    and both weight gradients, defined before the first (the second convolution once made its own
    columns after the first had read them: a node read before it was defined)."""
    x, w, b = conv_inputs()
    w2 = jg.randn(*w.shape, dtype=jg.float64, requires_grad=True)

    def twice(x, w, b, w2):
        f = jg.nn.functional.conv2d
        return jg.autograd.grad((f(x, w, b, groups=2).tanh() + f(x, w2, b, groups=2) * f(x, w, b, groups=2)).sum(),
                                [x, w, b, w2])
    g = fx.trace(twice, x, w, b, w2).graph
    assert names(g).count("convolution") == 3
    record = run_pass(share_convolution_columns, g, x, w, b, w2)
    run_pass(eliminate_dead_code, g, x, w, b, w2)
    assert "convolution" not in names(g) and names(g).count("im2col") == 1
    assert len(record.changes) == 3


def test_a_convolution_without_a_weight_gradient_or_of_one_dimension_is_left_alone():
    x, w, b = conv_inputs()

    def input_gradient_only(x, w, b):
        return jg.autograd.grad(jg.nn.functional.conv2d(x, w.detach(), b, groups=2).sum(), [x])
    g = fx.trace(input_gradient_only, x, w, b).graph
    assert not run_pass(share_convolution_columns, g, x, w, b).changed

    def one_dimensional(x, w):
        return jg.autograd.grad(jg.nn.functional.conv1d(x, w, padding=1).sum(), [w])
    x1, w1 = jg.randn(2, 3, 8, requires_grad=True), jg.randn(4, 3, 3, requires_grad=True)
    g = fx.trace(one_dimensional, x1, w1).graph
    assert not run_pass(share_convolution_columns, g, x1, w1).changed


# ---- group_fusions ------------------------------------------------------------------------------------
def test_group_fusions_marks_loops_and_respects_dependencies():
    def f(x, b):
        h = (x * b).tanh() + 1.0            # one loop over (3, 4), b broadcast
        s = h.sum(1)                        # ends that loop
        return (h @ jg.ones(4, 2)).relu(), s.exp() * 2.0   # matmul does not fuse; s.exp starts a new loop
    g = fx.trace(f, X, W).graph
    record = run_pass(group_fusions, g, X, W)
    group = {n.name: n.meta.get("fusion_group") for n in g.nodes}
    assert group["mul"] == group["tanh"] == group["add"] == group["sum"]
    assert group["mm"] is None
    assert group["exp"] == group["mul_1"] != group["sum"]
    assert group["relu"] not in (group["sum"], group["exp"])
    assert "fusion_group=fused_0" in str(g) and record.stats["groups"] == 3


def test_group_fusions_does_not_fuse_across_a_path_outside_the_group():
    def f(x):
        a = x.exp()
        m = (a @ jg.ones(4, 4))             # leaves the group and comes back
        return a + m
    g = fx.trace(f, X).graph
    run_pass(group_fusions, g, X)
    assert g.find("exp").meta["fusion_group"] != g.find("add").meta["fusion_group"]


def test_group_fusions_sees_a_dependency_through_another_member_of_a_group():
    def f(x, w):
        d = (w * 0.1).exp() / 4.0           # group A over (4,)
        t = x * 2.0                         # group B over (3, 4) ...
        p = t * d                           # ... reads A
        s = (t * x).sum(0)                  # ... and s does not, but B runs as a whole after A
        return d + s, p                     # so d + s must not join A: A would need B and B need A
    g = fx.trace(f, X, W).graph
    run_pass(group_fusions, g, X, W)
    group = {n.name: n.meta.get("fusion_group") for n in g.nodes}
    assert group["exp"] == group["div"] != group["mul_1"] == group["mul_2"] == group["mul_3"] == group["sum"]
    assert group["add"] not in (group["exp"], group["sum"])


def test_group_fusions_answers_each_dependency_question_as_a_walk_upwards_would(monkeypatch):
    """The pass searches whether a node needs a group from both ends; every answer must be the one a
    plain walk up from the node's nearest groups gives, on graphs with merges of groups and with a
    backward that reads every step of its forward."""
    asked, merged = [], []
    searched = fusion_module._Grouping.depends_on

    def walked_up(grouping, node, group):
        seen, pending = set(), [g.find() for g in grouping.reaches[node]]
        while pending:
            g = pending.pop()
            if g is group:
                return True
            if g not in seen:
                seen.add(g)
                pending += [u.find() for u in g.upstream]
        return False

    def compared(grouping, node, group):
        found = searched(grouping, node, group)
        assert found == walked_up(grouping, node, group), (node.name, group.name)
        asked.append(found)
        merged.append(bool(grouping.absorbed))
        return found
    monkeypatch.setattr(fusion_module._Grouping, "depends_on", compared)

    def lstm_like(w, xs):
        h, c = jg.zeros(4, dtype=w.dtype), jg.zeros(4, dtype=w.dtype)
        for t in range(6):
            f = (w @ h + xs[t]).sigmoid()
            c = f * c + (1 - f) * (xs[t] * 2.0).tanh()
            h = c.tanh() * f
        return jg.autograd.grad((h * h).sum(), [w])

    def merging(x, e, w):
        a, b = x.cos(), e * w                 # two open loops over (3, 4), then one: they merge
        return ((a + b).exp() * a).sum() + (b * 3.0).sum()
    fused(lstm_like, jg.tensor(0.3 * np.eye(4), requires_grad=True), jg.tensor(np.linspace(-1, 1, 24).reshape(6, 4)))
    fused(merging, X, X * 2.0, W)
    assert True in asked and False in asked and True in merged


# ---- rematerialize -----------------------------------------------------------------------------------
@pytest.fixture
def every_value_large(monkeypatch):
    """The pass looks at values of at least MIN_BYTES only: here every (3, 4) matrix, not (3, 1) rows."""
    monkeypatch.setattr(rematerialize_module, "MIN_BYTES", X.numel() * 4)


def fused(fn, *args):
    graph = fx.trace(fn, *args).graph
    group_fusions(graph)
    return graph


def group_of(graph, name):
    return graph.find(name).meta.get("fusion_group")


def test_rematerialize_computes_a_cheap_value_again_where_it_is_read(every_value_large):
    def f(x):
        z = x.exp() * 2.0
        d = z - z.mean(1, keepdim=True)       # its own loop, after the mean
        s = (d * d).sum(1, keepdim=True)      # closes that loop
        return d / s                          # a third loop, which reads d: it computes it again from z
    g = fused(f, X)
    record = run_pass(rematerialize, g, X)
    copy = g.find("sub_re")
    assert group_of(g, "sub_re") == group_of(g, "div") != group_of(g, "sub")
    assert copy.args[0] is g.find("mul") and g.find("div").args[0] is copy
    assert all(group_of(g, u.name) == group_of(g, "sub") for u in g.find("sub").users)  # no longer stored
    assert record.stats == {"recomputed": 1, "removed": 0}


def test_rematerialize_removes_a_value_nobody_reads_any_more(every_value_large):
    def f(x):
        r = x.sum(1, keepdim=True)
        b = r.expand(3, 4) * 0.5              # depends on r only: its loop stores a whole matrix
        t = (b + x).sum(1, keepdim=True)
        return b * t                          # computes b again from r: b's stored copy goes
    g = fused(f, X)
    record = run_pass(rematerialize, g, X)
    assert record.stats["recomputed"] >= 1
    assert "mul_re" in names_of(g) and group_of(g, "mul_re") == group_of(g, "mul_1")


def names_of(graph):
    return {n.name for n in graph.nodes}


def test_rematerialize_leaves_library_calls_loads_and_small_values(every_value_large, monkeypatch):
    def library(x):
        e = x.exp()                           # a C-library call: read back, not computed again
        return e / e.sum(1, keepdim=True)
    g = fused(library, X)
    assert run_pass(rematerialize, g, X).stats["recomputed"] == 0

    def two_loads(x, y):
        p = x * y                             # would load x and y in place of p
        return p / p.sum(1, keepdim=True)
    g = fused(two_loads, X, X * 2.0)
    assert run_pass(rematerialize, g, X, X * 2.0).stats["recomputed"] == 0

    monkeypatch.setattr(rematerialize_module, "MIN_BYTES", 1 << 20)
    g = fused(lambda x: (x * 2.0) / (x * 2.0).sum(1, keepdim=True).exp(), X)
    assert run_pass(rematerialize, g, X).stats["recomputed"] == 0


def test_rematerialize_keeps_values_of_traced_backward_graphs(every_value_large):
    x = jg.randn(3, 4, requires_grad=True)

    def standardize(x):
        z = jg.gelu(x, approximate="tanh") * 2.0
        return (z - z.mean(1, keepdim=True)) / (z.std(1, keepdim=True) + 1e-5)
    graph = fx.trace(with_backward(standardize), x).graph
    for graph_pass in (topological_sort, fold_constants, simplify_algebra, eliminate_common_subexpressions,
                       eliminate_dead_code, group_fusions):
        graph = graph_pass(graph)
    record = run_pass(rematerialize, graph, x)
    assert record.stats["recomputed"] >= 2 and record.stats["removed"] >= 1


def test_only_elementwise_ops_may_be_recomputed():
    from jitgrad.ops.registry import OpDef
    with pytest.raises(ValueError, match="only an elementwise op"):
        OpDef("bad", ("self",), np.sum, kind="reduction", recompute=True)


# ---- plan_memory --------------------------------------------------------------------------------------
def test_plan_memory_reuses_dead_buffers_of_the_same_size():
    g = fx.trace(lambda x: x.exp().sin().cos().tanh().sum(0), X).graph
    record = run_pass(plan_memory, g, X)
    buffers = [g.find(n).meta["buffer"] for n in ("exp", "sin", "cos", "tanh")]
    assert buffers == ["buf0", "buf1", "buf0", "buf1"]
    assert record.stats == {"unplanned_bytes": 4 * 48 + 16, "planned_bytes": 2 * 48 + 16,
                            "peak_live_bytes": 2 * 48, "buffers": 3}
    assert g.find("sin").meta["live"] == (2, 3)


def test_plan_memory_keeps_outputs_alive():
    g = fx.trace(lambda x: (x.exp(), x.exp().sin().cos()), X).graph
    run_pass(plan_memory, g, X)
    assert g.find("exp").meta["live"][1] == len(g)
    assert g.find("cos").meta["buffer"] != g.find("exp").meta["buffer"]


def test_plan_memory_runs_each_fusion_group_as_one_step():
    """A group's loop is one step: its members are put side by side, in the order the units run. A
    value read only inside its loop gets no memory, a view reads its base's, and an output of its own
    is computed into the output's memory; a view or an argument returned is copied there."""
    def program(x, w):
        a = x.exp()
        m = x @ w  # between the group's members in the trace
        return a.sin().sum(), m, m.T, x
    w = jg.randn(4, 5)
    g = group_fusions(fx.trace(program, X, w).graph)
    record = run_pass(plan_memory, g, X, w)
    assert names(g) == ["exp", "sin", "sum", "mm", "permute"]
    assert [[n.name for n in unit] for unit in units(g)] == [["exp", "sin", "sum"], ["mm"], ["permute"]]
    plan = {n.name: (n.meta.get("buffer"), n.meta.get("view_of")) for n in g.nodes if n.op == "call_function"}
    assert plan == {"exp": (None, None), "sin": (None, None), "sum": ("out0", None), "mm": ("out1", None),
                    "permute": (None, "mm")}
    assert record.stats == {"unplanned_bytes": 48 + 48 + 4 + 60 + 60, "planned_bytes": 4 + 60 + 60 + 48,
                            "peak_live_bytes": 4 + 60 + 60 + 48, "buffers": 4}
    assert run_pass(plan_memory, g, X, w).changes == []  # already in that order: nothing moves


def test_plan_memory_keeps_a_buffer_while_a_view_of_it_is_read():
    def program(x):
        first = x.exp()
        transposed = first.T  # first's last reader, were views not its memory
        second = x.sin()      # the same size and dtype as first: it would take first's buffer
        return (transposed.sum(1) + second.sum(0)).tanh()
    g = fx.trace(program, X).graph
    run_pass(plan_memory, g, X)
    assert g.find("permute").meta["view_of"] == "exp"
    assert g.find("exp").meta["buffer"] != g.find("sin").meta["buffer"]
    assert g.find("exp").meta["live"][1] == g.nodes.index(g.find("sum"))


# ---- partition_joint ----------------------------------------------------------------------------------
def test_partition_joint_recomputes_cheap_values_and_matches_the_joint_graph():
    def f(x, w):
        return (x @ w.reshape(4, 1)).tanh().exp() * x.sum()
    x, w = jg.randn(3, 4, requires_grad=True), jg.randn(4, requires_grad=True)
    joint = fx.trace_joint(f, x, w)
    tangent = jg.randn(3, 1)
    expected = values(joint.module(x, w, tangent))
    part = partition_joint(joint.graph)
    part.forward.lint()
    part.backward.lint()
    assert "mm" in part.saved and "tanh" not in part.saved and "exp" in part.recomputed
    assert part.saved_bytes_after < part.saved_bytes_before
    result, saved = GraphModule(part.forward)(x, w)
    grads = GraphModule(part.backward)(*saved, tangent)
    assert_same_values(values((result, grads)), expected)
    assert not any(is_backward(n) for n in part.forward.nodes)
    assert joint.graph.history[-1].stats["saved_bytes_after"] == part.saved_bytes_after


# ---- PassManager --------------------------------------------------------------------------------------
def test_a_listing_prints_the_graph_as_it_was_before_the_passes_edited_it():
    x, w = jg.randn(3, 4, requires_grad=True), jg.randn(4, requires_grad=True)
    gm = fx.trace(with_backward(lambda x, w: (x * w).exp() * 1.0 + (x * w).exp()), x, w)
    before = str(gm.graph)
    listing = Listing(gm.graph)
    graph = PassManager().run(gm.graph)
    assert str(graph) != before and "fusion_group" in str(graph)  # the passes edited the graph in place
    assert str(listing) == before


def test_pass_manager_runs_the_pipeline_and_logs_graphs(monkeypatch, capsys):
    monkeypatch.setenv("JITGRAD_LOG", "graph")
    x, w = jg.randn(3, 4, requires_grad=True), jg.randn(4, requires_grad=True)
    gm = fx.trace(with_backward(lambda x, w: (x * w).exp() * 1.0), x, w)
    expected_grads = raw(gm.graph, x, w)
    manager = PassManager()
    graph = manager.run(gm.graph)
    assert_same_values(raw(graph, x, w), expected_grads)
    assert [r.name for r in manager.runs][0] == "topological_sort"
    assert manager.runs[-1].nodes_after < manager.runs[0].nodes_before
    err = capsys.readouterr().err
    assert "--- before fold_constants ---" in err and "--- after plan_memory ---" in err
    assert "fold_constants" in manager.report()


@pytest.mark.parametrize("each", [True, False])
def test_a_pass_that_breaks_the_graph_is_caught_after_it_or_at_the_end(each):
    """``lint=True`` checks after every pass (the suite's setting, naming the pass); ``lint=False``, as
    ``jitgrad.compile`` runs, once after the last: a broken graph never reaches a backend either way."""
    calls = []

    def breaks(graph):
        nodes = list(graph.nodes)
        graph.reorder([nodes[-1], *nodes[:-1]])  # the output first: lint refuses it
        return graph

    def counts(graph):
        calls.append("after")
        return graph
    x = jg.randn(3, requires_grad=True)
    gm = fx.trace(lambda x: x.exp(), x)
    with pytest.raises(GraphError):
        PassManager([breaks, counts], lint=each).run(gm.graph)
    assert calls == ([] if each else ["after"])


def test_every_pass_on_traced_backward_graphs_keeps_values():
    x, w = jg.randn(3, 4, requires_grad=True), jg.randn(4, requires_grad=True)
    programs = [lambda x, w: (x * w).softmax(1).log(), lambda x, w: (x - w).pow(2).mean(0).sqrt(),
                lambda x, w: jg.cat([x, w.reshape(1, 4)], 0).max(0).values.relu()]
    for fn in programs:
        gm = fx.trace(with_backward(fn), x, w)
        expected = raw(gm.graph, x, w)
        graph = PassManager().run(gm.graph)
        assert_same_values(raw(graph, x, w), expected)
        assert len(graph) < len(fx.trace(with_backward(fn), x, w).graph)


def test_lint_after_a_hand_built_graph_goes_through_every_pass():
    g = Graph()
    meta = {"shape": (2,), "dtype": np.dtype("float32")}
    a = g.placeholder("a", meta)
    one = g.get_attr(jg.ones(2), "one")
    m = g.call_function(REGISTRY["mul"], (a, one), {}, meta)
    g.output(g.call_function(REGISTRY["exp"], (m,), {}, meta))
    PassManager().run(g)
    assert names(g) == ["exp"] and g.find("exp").args == (a,)
