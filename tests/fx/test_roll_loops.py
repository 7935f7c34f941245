"""``roll_loops`` the FX way (a traced program, the pass, the loops it made, the same outputs through the
interpreter and the printed Python), the cases it must leave unrolled, and the CPU backends'
loops: values against eager and PyTorch, and a kernel whose source does not grow with the steps."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import jitgrad as jg
from jitgrad import fx
from jitgrad.backends.nodes import check_lowerings
from jitgrad.fx import GraphModule
from jitgrad.fx.loop import Loop
from jitgrad.fx.passes import LOOP_PIPELINE, PIPELINES, PassManager, roll_loops
from jitgrad.fx.passes.roll_loops import MIN_ITERATIONS

BEFORE_ROLLING = LOOP_PIPELINE[:LOOP_PIPELINE.index(roll_loops)]
roll_loops_module = importlib.import_module("jitgrad.fx.passes.roll_loops")  # the package exports the pass


def rnn(steps, scales=None):
    """W4's step: h = tanh(wh @ h + wx @ x_t) over ``steps``, then the gradients of both matrices;
    ``scales[t]`` multiplies step t's recurrent term when given (a step that differs from the others)."""
    def program(wh, wx, xs):
        h = jg.zeros(wh.shape[0], dtype=wh.dtype)
        for t in range(steps):
            recurrent = wh @ h if scales is None else (wh @ h) * scales[t]
            h = jg.tanh(recurrent + wx @ xs[t])
        loss = (h * h).sum()
        return loss, jg.autograd.grad(loss, [wh, wx])
    return program


def rnn_inputs(steps, hidden=3, features=2, seed=0):
    rng = np.random.default_rng(seed)
    return (jg.tensor(0.5 * rng.standard_normal((hidden, hidden)), requires_grad=True),
            jg.tensor(0.5 * rng.standard_normal((hidden, features)), requires_grad=True),
            jg.tensor(rng.standard_normal((steps, features))))


def arrays(result):
    if isinstance(result, (tuple, list)):
        return [a for r in result for a in arrays(r)]
    return [result.detach().numpy()]


def assert_close(a, b):
    for x, y in zip(arrays(a), arrays(b), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)


def rolled(fn, *inputs):
    """The traced graph through the passes before rolling, then ``roll_loops``; its loops."""
    graph = PassManager(BEFORE_ROLLING).run(fx.trace(fn, *inputs).graph)
    before = fx.Interpreter(graph).run(*inputs)
    assert roll_loops(graph) is graph
    graph.lint()
    return graph, before, [n for n in graph.nodes if isinstance(n.target, Loop)]


@pytest.mark.parametrize("steps", [MIN_ITERATIONS + 2, 9, 16])
def test_an_rnn_rolls_into_a_forward_and_a_backward_loop_with_the_same_values(steps):
    inputs = rnn_inputs(steps)
    graph, before, loops = rolled(rnn(steps), *inputs)
    assert len(loops) == 2
    forward, backward = (loop.target for loop in loops)
    assert not forward.reverse and backward.reverse              # the backward walks the steps back
    assert forward.carries == backward.carries == 1
    assert forward.count >= steps - 2 and backward.count >= steps - 2
    assert len(graph) < 40                                       # nothing left per step
    eager = rnn(steps)(*inputs)
    assert_close(fx.Interpreter(graph).run(*inputs), before)
    assert_close(fx.Interpreter(graph).run(*inputs), eager)
    module = GraphModule(graph)                                  # the printed Python runs the loops too
    assert "def loop_body(" in module.code and "run_loop(loop_body" in module.code
    assert_close(module.forward(*inputs, constants=module.constants), eager)
    assert "graph(" in str(graph).split("call_function loop(")[1]   # the listing shows each body


def test_a_step_with_another_constant_is_not_rolled_into_the_others():
    steps = 12
    scales = [0.5] * steps
    scales[6] = 2.0                        # step 6 differs: no loop spans it
    inputs = rnn_inputs(steps)
    graph, before, loops = rolled(rnn(steps, scales), *inputs)
    assert loops
    for loop in loops:
        assert loop.target.count <= 6
    assert_close(fx.Interpreter(graph).run(*inputs), before)
    assert_close(fx.Interpreter(graph).run(*inputs), rnn(steps, scales)(*inputs))


def test_steps_that_all_differ_or_run_too_few_times_stay_unrolled():
    steps = 8
    inputs = rnn_inputs(steps)
    _, _, loops = rolled(rnn(steps, [0.5 + t for t in range(steps)]), *inputs)   # a constant per step
    assert not loops
    few = MIN_ITERATIONS - 1
    _, _, loops = rolled(rnn(few), *rnn_inputs(few))
    assert not loops


def test_a_step_with_another_op_or_shape_ends_the_loop():
    def program(w, xs):
        h = jg.zeros(w.shape[0], dtype=w.dtype)
        for t in range(10):
            h = (w @ h + xs[t]).tanh() if t != 5 else (w @ h + xs[t]).sigmoid()
        return h.sum()
    w, xs = jg.tensor(np.eye(3) * 0.5), jg.tensor(np.ones((10, 3)))
    graph, before, loops = rolled(program, w, xs)
    assert all(loop.target.count < 6 for loop in loops)
    assert_close(fx.Interpreter(graph).run(w, xs), before)

    def widening(w, xs):                    # the carried value grows at one step: no loop spans it
        h = jg.zeros(3, dtype=w.dtype)
        for t in range(10):
            h = (w @ h[:3] + xs[t]).tanh()
            if t == 4:
                h = jg.cat([h, h])
        return h.sum()
    graph, before, loops = rolled(widening, w, xs)
    assert all(loop.target.count <= 5 for loop in loops)
    assert_close(fx.Interpreter(graph).run(w, xs), before)


def test_a_step_reading_a_row_where_the_others_read_an_argument_is_not_rolled_into_them():
    """The first step reads ``xs[0]``, the rest one argument (no arguments of its own, unlike a row
    read): the steps after the first roll, and the pass does not fail looking for a row there."""
    def program(w, xs, c):
        h = jg.zeros(3, dtype=w.dtype)
        for r in [xs[0]] + [c] * (MIN_ITERATIONS + 3):
            h = (w @ h + r).tanh()
        return h.sum()
    inputs = jg.tensor(np.eye(3) * 0.5), jg.tensor(np.ones((MIN_ITERATIONS + 4, 3))), jg.tensor(np.full(3, 0.25))
    graph, before, loops = rolled(program, *inputs)
    assert [loop.target.count for loop in loops] == [MIN_ITERATIONS + 3]
    assert_close(fx.Interpreter(graph).run(*inputs), before)
    assert_close(fx.Interpreter(graph).run(*inputs), program(*inputs))


def test_the_search_checks_as_many_stretches_at_any_number_of_steps(monkeypatch):
    """An RNN whose input term is elementwise (``wx * xs[t]``): its backward carries ``wx``'s gradient
    through elementwise adds, which a loop would keep from fusing, so that rotation is rejected; its
    shifts by whole periods must not be checked one by one again (they were: the pass was quadratic in
    the number of steps, 7 s at 400)."""
    checks = []
    check = roll_loops_module._check

    def counted_check(run):  # a whole candidate's check (a check of its first iterations costs little)
        if run.count > MIN_ITERATIONS:
            checks.append(run)
        return check(run)
    monkeypatch.setattr(roll_loops_module, "_check", counted_check)

    def program_of(steps):
        def program(wh, wx, xs):
            h = jg.zeros(wh.shape[0], dtype=wh.dtype)
            for t in range(steps):
                h = jg.tanh(wh @ h + wx * xs[t])
            loss = (h * h).sum()
            return loss, jg.autograd.grad(loss, [wh, wx])
        return program
    counted = {}
    for steps in (3 * MIN_ITERATIONS, 6 * MIN_ITERATIONS):
        wh, wx, xs = rnn_inputs(steps, features=3)
        inputs = (wh, jg.tensor(wx.detach().numpy()[0], requires_grad=True), xs)
        checks.clear()
        graph, before, loops = rolled(program_of(steps), *inputs)
        counted[steps] = len(checks)
        assert [loop.target.count for loop in loops] == [steps]     # the forward rolls, whole
        assert_close(fx.Interpreter(graph).run(*inputs), before)
    assert counted[6 * MIN_ITERATIONS] == counted[3 * MIN_ITERATIONS]


def test_candidates_failing_on_their_first_iterations_cost_no_walk_over_all_of_them(monkeypatch):
    """An LSTM-like step whose backward reads the forward's gate of each step (no row of one array
    while the forward is unrolled): no loop, and every candidate fails on its second iteration. The
    work grows with the steps as the graph does, not as its square (it did: each candidate walked all
    its iterations at its first offsets before failing at a later one, and each start counted the
    repeats of its stretch again)."""
    looked_up = [0]   # iterations' nodes looked up, and signatures compared to count a stretch's repeats
    at, column = roll_loops_module._Run.at, roll_loops_module._Run.column
    signatures_of = roll_loops_module.Signatures.of

    def counted_at(run, iteration, offset):
        looked_up[0] += 1
        return at(run, iteration, offset)

    def counted_column(run, offset, first, stop):
        looked_up[0] += max(stop - first, 0)
        return column(run, offset, first, stop)

    class CountedSignatures(list):
        def __getitem__(self, key):
            if isinstance(key, slice):
                looked_up[0] += key.stop - key.start
            return list.__getitem__(self, key)
    monkeypatch.setattr(roll_loops_module._Run, "at", counted_at)
    monkeypatch.setattr(roll_loops_module._Run, "column", counted_column)
    monkeypatch.setattr(roll_loops_module.Signatures, "of", lambda known, nodes: CountedSignatures(
        signatures_of(known, nodes)))

    def program_of(steps):
        def program(w, xs):
            h, c = jg.zeros(2, dtype=w.dtype), jg.zeros(2, dtype=w.dtype)
            for t in range(steps):
                f = jg.sigmoid(w @ h + xs[t])
                c = f * c + (1 - f) * xs[t]
                h = jg.tanh(c) * f
            return jg.autograd.grad((h * h).sum(), [w])
        return program
    work = {}
    for steps in (2 * MIN_ITERATIONS, 8 * MIN_ITERATIONS):
        xs = np.linspace(-1, 1, 2 * steps).reshape(steps, 2)
        inputs = jg.tensor(0.3 * np.eye(2), requires_grad=True), jg.tensor(xs)
        graph = PassManager(BEFORE_ROLLING).run(fx.trace(program_of(steps), *inputs).graph)
        looked_up[0] = 0
        before = fx.Interpreter(graph).run(*inputs)
        roll_loops(graph)
        work[steps] = looked_up[0]
        assert_close(fx.Interpreter(graph).run(*inputs), before)
    assert work[8 * MIN_ITERATIONS] < 5 * work[2 * MIN_ITERATIONS]   # 4x the steps: about 4x (it was 8x)


def test_an_elementwise_chain_and_independent_steps_stay_unrolled():
    def chain(x):                           # W1: one fused loop over x beats a loop per step
        for _ in range(10):
            x = (x.sin() * 1.01 + 0.1).tanh() * x
        return x.sum()
    _, _, loops = rolled(chain, jg.tensor(np.linspace(0, 1, 5)))
    assert not loops

    def independent(w, xs):                 # nothing carried from step to step
        return [(w @ xs[t]).tanh() for t in range(8)]
    _, _, loops = rolled(independent, jg.tensor(np.eye(3)), jg.tensor(np.ones((8, 3))))
    assert not loops


# ---- the numba CPU backend -----------------------------------------------------------------------------
numba_cpu = pytest.importorskip("jitgrad.backends.numba_cpu")


def test_a_backend_that_does_not_lower_loops_says_so():
    inputs = rnn_inputs(6)
    graph, _, loops = rolled(rnn(6), *inputs)
    assert loops
    from jitgrad.backends.numba_cpu.statements import STATEMENTS
    with pytest.raises(RuntimeError, match="no lowering for op 'loop'"):   # so it falls back
        check_lowerings(graph, STATEMENTS, "other", RuntimeError)
    check_lowerings(loops[0].target.body, STATEMENTS, "other", RuntimeError)   # its body's ops have some
    check_lowerings(graph, STATEMENTS, "numba CPU", RuntimeError, loops=True)


def kernel_source(steps):
    """The numba kernel's source for the RNN at ``steps`` (generated, not compiled)."""
    from jitgrad.backends.numba_cpu.codegen import generate
    graph = PassManager(LOOP_PIPELINE).run(fx.trace(rnn(steps), *rnn_inputs(steps)).graph)
    return generate(graph).source


def test_the_kernel_does_not_grow_with_the_number_of_steps():
    source = kernel_source(8)
    assert len(source.splitlines()) == len(kernel_source(20).splitlines())   # no line per step
    assert source.count("for loop_j in range(") == 1 and source.count("for loop_2_j in range(") == 1


def test_compiled_rnn_loops_give_eager_and_pytorch_values(monkeypatch):
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "numba_cpu")  # the backend that lowers loops
    steps = 7
    inputs = rnn_inputs(steps, hidden=4, features=3, seed=1)
    compiled = jg.compile(rnn(steps), fullgraph=True)
    out = compiled(*inputs)
    assert_close(out, rnn(steps)(*inputs))
    assert "for loop_j in range(" in compiled.explain(*inputs).source
    torch = pytest.importorskip("torch")
    wh, wx, xs = (torch.tensor(t.detach().numpy(), requires_grad=t.requires_grad) for t in inputs)
    h = torch.zeros(4, dtype=torch.float64)
    for t in range(steps):
        h = torch.tanh(wh @ h + wx @ xs[t])
    loss = (h * h).sum()
    expected = [loss.detach().numpy(), *(g.numpy() for g in torch.autograd.grad(loss, [wh, wx]))]
    for got, want in zip(arrays(out), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_the_default_cpu_lowering_rolls_every_loop_and_the_llvm_generator_compiles_it(monkeypatch, capsys):
    """The default lowering runs ``LOOP_PIPELINE`` and the LLVM generator lowers the loop nodes itself
    (no numba): its kernel is the same code at 8 and at 20 steps (the trip count is a run-time size),
    and gives eager's values and the unrolled graph's bits."""
    from jitgrad.backends import llvm_cpu
    from jitgrad.compile import get_backend
    from jitgrad.fx.passes import DEFAULT_PIPELINE

    monkeypatch.delenv("JITGRAD_COMPILE_BACKEND", raising=False)
    assert PIPELINES[get_backend().pipeline] == LOOP_PIPELINE
    keys = []
    for steps in (8, 20):
        graph = PassManager(LOOP_PIPELINE).run(fx.trace(rnn(steps), *rnn_inputs(steps)).graph)
        assert sum(isinstance(n.target, Loop) for n in graph.nodes) == 2
        keys.append(llvm_cpu.structural_key(graph))
    assert keys[0] == keys[1]
    monkeypatch.setenv("JITGRAD_LOG", "backend")
    steps = 7
    inputs = rnn_inputs(steps, hidden=4, features=3, seed=2)
    compiled = jg.compile(rnn(steps), fullgraph=True)
    out = compiled(*inputs)
    assert "does not cover" not in capsys.readouterr().err
    assert "_j_head:" in compiled.explain(*inputs).source            # the kernel's IR, with its loop
    assert_close(out, rnn(steps)(*inputs))
    unrolled = llvm_cpu.lower(PassManager(DEFAULT_PIPELINE).run(fx.trace(rnn(steps), *inputs).graph))
    for got, want in zip(arrays(out), unrolled(*(a.detach().numpy() for a in inputs)), strict=True):
        np.testing.assert_array_equal(got, np.asarray(want).reshape(got.shape))
