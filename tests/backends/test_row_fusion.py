"""Row fusion (jitgrad/backends/row_fusion.py, numba_cpu/row_fusion.py): the fusion group after a softmax
statement runs a row at a time inside the statement's row loop, with the same bits as unfused; it is
refused where the group would write over a row the statement has still to read. A group reading a
logsumexp's exponentials again (its gradient) runs in the logsumexp's row loop and reuses them, close to
eager's result but not its bits.

The generated code runs as plain Python here; test_numba_kernels.py checks the fused kernel compiled,
for any number of threads."""
from __future__ import annotations

import re

import numpy as np

import jitgrad as jg
from helpers import assert_close
from jitgrad.backends.numba_cpu import PARALLEL_ELEMENTS, codegen
from jitgrad.ops.registry import REGISTRY
from jitgrad.backends.row_fusion import exps_reuse, fusable_after
from jitgrad.fx.passes.schedule import units
from lowering_helpers import interpreted, lowered, optimized_graph

ROWS, COLUMNS = PARALLEL_ELEMENTS // 128 + 3, 131   # large (parallel), rows with a remainder after the lanes
X = np.random.default_rng(11).standard_normal((ROWS, COLUMNS)).astype(np.float32)


def k2_step(x):
    """K2 of the suite: the loss's ``mul, sum`` after the softmax, the gradient's ``add`` after its backward."""
    loss = (jg.softmax(x, dim=1) * x).sum()
    loss.backward()
    return loss


def test_k2_groups_run_inside_the_softmax_rows_with_unfused_bits(plain_python, monkeypatch):
    graph, kernel = lowered(k2_step, [X])
    body = kernel.source.split("def kernel(")[1]
    assert body.count("a row at a time in softmax's row loop") == 1
    assert body.count("a row at a time in softmax_backward's row loop") == 1
    assert body.count("prange(") == 2   # the two statements' row loops, and no loop of the groups' own
    assert "softmax_backward_v = " in body and not re.search(r"softmax_backward_o\[[^\]]*\] = ", body)
    fused = [a.copy() for a in kernel(X)]
    assert_close(fused, interpreted(graph, [X]), dtype=np.float32)
    x = jg.tensor(X.astype(np.float64), requires_grad=True)
    loss = k2_step(x)
    np.testing.assert_allclose(fused[0], loss.item(), rtol=1e-5)
    np.testing.assert_allclose(fused[1], x.grad.numpy(), rtol=1e-5, atol=1e-6)
    monkeypatch.setattr(codegen, "emit_row_fused", lambda *args: False)
    _, apart = lowered(k2_step, [X])
    assert "a row at a time" not in apart.source
    for a, b in zip(fused, apart(X)):
        np.testing.assert_array_equal(a, b)


def test_a_statement_value_the_group_reads_in_its_loop_is_still_stored_when_read_elsewhere(plain_python, monkeypatch):
    """The add takes softmax_backward's value in the statement's last loop; the value is also returned,
    so that loop still stores it. Same bits as unfused."""
    g = np.random.default_rng(15).standard_normal(X.shape).astype(np.float32)

    def program(x, g):
        y = jg.softmax(x, dim=1)
        b = REGISTRY["softmax_backward"](g, y, dim=1)
        return b + y, b
    _, kernel = lowered(program, [X, g])
    assert "a row at a time in softmax_backward's row loop" in kernel.source
    assert re.search(r"softmax_backward_o\[[^\]]*\] = softmax_backward_v", kernel.source)
    fused = [a.copy() for a in kernel(X, g)]
    monkeypatch.setattr(codegen, "emit_row_fused", lambda *args: False)
    _, apart = lowered(program, [X, g])
    for a, b in zip(fused, apart(X, g)):
        np.testing.assert_array_equal(a, b)


def test_a_log_softmax_value_taken_in_its_loop_is_rounded_as_stored(plain_python, monkeypatch):
    """log_softmax's last loop computes in float64 (``math.log`` of the row's sum) and stores float32: the
    group fused into that loop reads the value rounded to float32, as unfused. Same bits."""
    def program(x):
        return jg.log_softmax(x, dim=1) * 3.0 + x
    _, kernel = lowered(program, [X])
    assert "a row at a time in log_softmax's row loop" in kernel.source
    assert "log_softmax_v = np.float32(" in kernel.source
    fused = kernel(X)[0].copy()
    monkeypatch.setattr(codegen, "emit_row_fused", lambda *args: False)
    _, apart = lowered(program, [X])
    np.testing.assert_array_equal(fused, apart(X)[0])


def test_a_group_that_would_overwrite_the_statements_input_is_not_fused(plain_python):
    """``t = softmax(h.T) * 3`` is read by a product, so it has a buffer, and the plan hands it ``h``'s,
    dead after the softmax. The softmax reads ``h`` transposed: fused, writing row p of ``t`` would
    overwrite column p of ``h.T``, which the softmax's later rows still read."""
    rng = np.random.default_rng(12)
    x, w = rng.standard_normal((COLUMNS, ROWS)).astype(np.float32), rng.standard_normal((COLUMNS, 4)).astype(np.float32)

    def program(x, w):
        h = x * 2.0
        t = jg.softmax(h.T, dim=1) * 3.0
        return t @ w
    graph, kernel = lowered(program, [x, w])
    plan = units(graph)
    at = next(k for k, unit in enumerate(plan) if unit[0].target_name == "softmax")
    statement, group = plan[at][0], plan[at + 1]
    h = statement.args[0].args[0]
    assert [m.meta.get("buffer") for m in group] == [h.meta["buffer"]], "the plan no longer shares the buffer"
    assert not fusable_after(statement, group)
    assert "a row at a time" not in kernel.source
    assert_close(list(kernel(x, w)), interpreted(graph, [x, w]), dtype=np.float32)


def test_only_groups_over_the_statements_rows_that_read_it_are_fused():
    def program(x):
        s = jg.softmax(x, dim=1)
        return (s * x).sum(0), (s * 2.0).sum(1), (x * 2.0).exp()
    plan = units(optimized_graph(program, [X]))
    statement = next(unit[0] for unit in plan if unit[0].target_name == "softmax")
    groups = {f"{unit[-1].target_name} {unit[-1].kwargs.get('dim')}": unit for unit in plan if unit[0].kind.in_loop}
    assert not fusable_after(statement, groups["sum (0,)"])     # folds the columns: across rows
    assert fusable_after(statement, groups["sum (1,)"])         # folds each row
    assert not fusable_after(statement, groups["exp None"])     # does not read the softmax


# ---- a logsumexp's exponentials read again by its gradient's group ------------------------------------------
W = np.random.default_rng(13).standard_normal(ROWS).astype(np.float32)
SPECIAL = X.copy()
SPECIAL[3, 5], SPECIAL[3, 7] = np.inf, 100.0   # +inf: exps taken from 0, exp(100) overflows; eager gives 0 there
SPECIAL[4, 1] = np.nan                          # (a row of -inf only: Python's math.log(0) raises, numba's is -inf)


def k10_step(x, w):
    """K10 of the suite: the backward's ``w * exp(x - lse)`` reads the forward's exps again."""
    loss = (x.logsumexp(1) * w).sum()
    loss.backward()
    return loss


def test_k10_gradient_reuses_the_forward_exps_close_to_eager(plain_python, monkeypatch):
    graph, kernel = lowered(k10_step, [SPECIAL, W])
    body = kernel.source.split("def kernel(")[1]
    assert body.count("as the row's exps over their sum") == 1
    assert body.count("prange(") == 1            # the gradient has no loop over the rows of its own
    fused = [a.copy() for a in kernel(SPECIAL, W)]
    x = jg.tensor(SPECIAL.astype(np.float64), requires_grad=True)
    loss = k10_step(x, jg.tensor(W.astype(np.float64)))
    want = x.grad.numpy()
    np.testing.assert_array_equal(np.isnan(fused[1]), np.isnan(want))
    np.testing.assert_allclose(fused[1], want, rtol=2e-6, atol=1e-7)   # other bits than exp(x - lse)
    monkeypatch.setattr(codegen, "emit_exps_reused", lambda *args: ())
    _, apart = lowered(k10_step, [SPECIAL, W])
    assert "exps over their sum" not in apart.source
    unfused = apart(SPECIAL, W)
    np.testing.assert_array_equal(fused[0], unfused[0])                # the loss: the same forward
    for row in (3, 4):   # a sum that is not finite: the row is computed as unfused, bit for bit
        np.testing.assert_array_equal(fused[1][row], unfused[1][row])
    assert not np.array_equal(fused[1], unfused[1])
    np.testing.assert_allclose(loss.item(), fused[0], rtol=1e-5)


def test_exps_are_reused_only_where_the_group_reads_lse_at_its_row(plain_python):
    """``exp(x - lse.reshape(1, n))`` over a square ``x`` reads another row's lse at each column: that
    group keeps its own loop and exp; the next one, reading lse at its row, runs in the logsumexp's."""
    x = np.random.default_rng(14).standard_normal((300, 300)).astype(np.float32)

    def program(x):
        lse = x.logsumexp(1)
        return lse, (x - lse.reshape(1, -1)).exp() * 2.0, (x - lse.reshape(-1, 1)).exp() * 3.0
    graph, kernel = lowered(program, [x])
    plan = units(graph)
    at = next(k for k, unit in enumerate(plan) if unit[-1].target_name == "logsumexp")
    found = exps_reuse(plan, at)
    assert found is not None and [e.target_name for e in found.exps] == ["exp"]
    assert [n.args[1] for n in plan[found.group] if n.target_name == "mul"] == [3.0]
    assert kernel.source.count("exps over their sum") == 1
    assert_close(list(kernel(x)), interpreted(graph, [x]), dtype=np.float32)


def test_exps_are_not_reused_when_the_group_would_write_a_buffer_read_before_it():
    graph = optimized_graph(k10_step, [X, W])
    plan = units(graph)
    at = next(k for k, unit in enumerate(plan) if unit[-1].target_name == "logsumexp")
    found = exps_reuse(plan, at)
    assert found is not None
    written = next(m for m in plan[found.group] if "buffer" in m.meta)
    between = next(n for unit in plan[at + 1:found.group] for n in unit if "buffer" in n.meta)
    written.meta["buffer"] = between.meta["buffer"]   # as a plan would, had the value died before the group
    assert exps_reuse(plan, at) is None


def test_the_exps_go_into_an_output_row_only_when_the_group_reads_nothing_from_its_buffer():
    def program(x, w):
        h = x * 2.0
        lse = x.logsumexp(1)
        return lse, h.sum(), (x - lse.reshape(-1, 1)).exp() * h * w.reshape(-1, 1)
    graph = optimized_graph(program, [X, W])
    plan = units(graph)
    at = next(k for k, unit in enumerate(plan) if unit[-1].target_name == "logsumexp")
    found = exps_reuse(plan, at)
    assert found is not None and found.row_into is plan[found.group][-1]
    h = next(n for n in graph.nodes if n.target_name == "mul" and 2.0 in n.args)
    assert "buffer" in h.meta and h in {v for m in plan[found.group] for v in m.all_input_nodes}
    found.row_into.meta["buffer"] = h.meta["buffer"]   # as a plan would, had h died at the group
    assert exps_reuse(plan, at).row_into is None


def test_the_exps_of_a_plain_sum_go_into_its_gradient_the_exp_itself(plain_python):
    """``x.logsumexp(1).sum()``'s gradient is ``exp(x - lse)`` alone: its own output row holds the exps."""
    def program(x):
        loss = x.logsumexp(1).sum()
        loss.backward()
        return loss
    graph, kernel = lowered(program, [X])
    plan = units(graph)
    found = exps_reuse(plan, next(k for k, unit in enumerate(plan) if unit[-1].target_name == "logsumexp"))
    assert found is not None and found.row_into is found.exps[0]
    assert kernel.source.count("exps over their sum") == 1
    x = jg.tensor(X.astype(np.float64), requires_grad=True)
    program(x)
    np.testing.assert_allclose(kernel(X)[1], x.grad.numpy(), rtol=2e-6, atol=1e-7)


def test_the_exps_never_go_into_a_row_the_group_stores_before_reading_them(plain_python):
    """``d = x - lse`` is stored before ``exp(d)`` reads the row's exps: the exps go into the product's row."""
    def program(x):
        d = x - x.logsumexp(1).reshape(-1, 1)
        return d, d.exp() * 2.0
    graph, kernel = lowered(program, [X])
    plan = units(graph)
    found = exps_reuse(plan, next(k for k, unit in enumerate(plan) if unit[-1].target_name == "logsumexp"))
    assert found is not None and found.row_into.target_name == "mul"
    assert_close(list(kernel(X)), interpreted(graph, [X]), dtype=np.float32)
