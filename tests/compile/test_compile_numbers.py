"""Python numbers that change between calls (a learning-rate schedule, Adam's step count) become
run-time inputs after their first change ("automatic dynamic"): at most two compiles, every value
computed exactly as eager computes it."""
from __future__ import annotations

import math

import numpy as np
import pytest

import jitgrad as jg
from compile_helpers import assert_close
from jitgrad.fx.numbers import Specialize, SymbolicNumber
from jitgrad.fx.tracer import Tracer


def weights(seed=0):
    return jg.tensor(np.random.default_rng(seed).standard_normal((3, 2)), requires_grad=True)


def data(seed=1):
    return jg.tensor(np.random.default_rng(seed).standard_normal((4, 3)))


def adam_like_step(x, w, m, lr, t):
    """One step with a bias-corrected momentum: ``lr`` and the step count ``t`` change every call."""
    loss = (x @ w).tanh().sum()
    loss.backward()
    with jg.no_grad():
        m.mul_(0.9).add_(w.grad * 0.1)
        w -= lr * m / (1 - 0.9 ** t)
    w.grad = None
    return loss


def test_a_schedule_and_a_step_count_compile_twice_and_match_eager(monkeypatch, capsys):
    monkeypatch.setenv("JITGRAD_LOG", "recompiles")
    x = data()
    w, m = weights(), jg.zeros(3, 2, dtype=jg.float64)
    we, me = weights(), jg.zeros(3, 2, dtype=jg.float64)
    step = jg.compile(adam_like_step, cache=False, fullgraph=True)
    for t in range(1, 8):
        lr = 0.1 * math.cos(t / 10)
        assert_close(step(x, w, m, lr, t), adam_like_step(x, we, me, lr, t))
        assert_close(w, we)
    assert step.recompiles == 1 and len(step.programs) == 2
    err = capsys.readouterr().err
    assert "made dynamic (a run-time input from now on): argument 'lr', argument 't'" in err


def test_a_dynamic_number_reaches_the_backward_of_a_loss():
    def loss(x, w, scale):
        return ((x @ w) * scale).exp().mean()
    compiled = jg.compile(loss, cache=False, fullgraph=True)
    x = data()
    for scale in (0.5, -1.5, 2.25):
        w, we = weights(), weights()
        out = compiled(x, w, scale)
        out.backward()
        loss(x, we, scale).backward()
        assert_close(out, loss(x, we.detach(), scale))
        assert_close(w.grad, we.grad)
    assert len(compiled.programs) == 2


def test_a_number_the_backward_of_a_loss_compares_stays_a_run_time_input():
    """pow's derivative asks whether the exponent is 0: in a compiled loss that is the backward traced
    with the forward, so the comparison is a predicate of the joint program, checked before the forward
    runs (before predicates it made the exponent a guarded constant; earlier still it raised
    Specialize out of the call)."""
    def loss(x, p):
        return (x ** p).sum()
    compiled = jg.compile(loss, cache=False, fullgraph=True)
    x = jg.tensor(np.array([0.5, 1.0, 2.0]), requires_grad=True)
    xe = jg.tensor(np.array([0.5, 1.0, 2.0]), requires_grad=True)
    for p in (2, 3, 2, 0, 4, 0):
        x.grad = xe.grad = None
        out = compiled(x, p)
        out.backward()
        loss(xe, p).backward()
        assert_close(out, loss(xe.detach(), p))
        assert_close(x.grad, xe.grad)
    assert not any("stays a guarded constant" in line for line in compiled.log), compiled.log
    assert len(compiled.programs) == 3, compiled.log   # p=2 as a constant, then p != 0 and p == 0


@pytest.mark.parametrize("use", [
    lambda x, s: x * math.sqrt(s),                 # math calls float()
    lambda x, s: x * np.float64(s),                # numpy asks for the value
    lambda x, s: x.clamp(min=s),                   # an attribute of an op
    # until 2026-11-28 these four gave the traced value (or type) silently, or raised
    lambda x, s: x * float(f"{s}"),                # formatting
    lambda x, s: x * (2.0 if isinstance(s, float) else 3.0),   # its type, through isinstance
    lambda x, s: x * (2.0 if s.is_integer() else 3.0),         # a method of the number
    lambda x, s: x * divmod(s, 0.3)[0] + divmod(s, 0.3)[1],    # divmod, recorded as // and %
    lambda x, s: x * (2.0 if type(s) is float else 3.0),       # type(), until 2026-11-29 the other branch
])
def test_every_way_of_reading_the_value_specializes_never_bakes_it_in(use):
    def f(x, s):
        return use(x, s).sum()
    compiled = jg.compile(f, cache=False, fullgraph=True)
    x = data()
    for s in (0.5, 2.0, 4.0):
        assert_close(compiled(x, s), f(x, s))


def test_a_method_calling_type_leaves_the_numbers_dynamic():
    """A function calling ``type()`` keeps its numbers constants (``type(lr)`` names the symbolic number's
    class), but a method of an object it reaches (a model's ``type(x) is tuple``) does not: the numbers
    it is given reach the function and its helpers, and a schedule would otherwise recompile each step."""
    class Model:
        def forward(self, x):
            return x if type(x) is tuple else x * 2.0
    model = Model()
    compiled = jg.compile(lambda x, lr: model.forward(x) * lr, cache=False)
    for lr in (0.5, 0.25, 0.125):
        assert_close(compiled(data(), lr), data() * 2.0 * lr)
    assert len(compiled.programs) == 2 and "made dynamic" in compiled.log[0], compiled.log


def test_a_negative_constant_raised_to_a_run_time_power_keeps_its_sign():
    """The prelude's source read ``(-2.0) ** t`` as ``-2.0 ** t``, that is ``-(2.0 ** t)``: -4.0 at
    ``t = 2.0``, silently, until 2026-11-29."""
    compiled = jg.compile(lambda x, t: x * (-2.0) ** t + (-1) ** (t * 2.0), dynamic=True, cache=False)
    x = data()
    for t in (2.0, 3.0):
        assert_close(compiled(x, t), x * (-2.0) ** t + (-1) ** (t * 2.0))


def test_a_negative_run_time_exponent_of_an_integer_tensor_traces_again():
    """Eager refuses an integer tensor to a negative integer power; numba's kernel gave 0 and 1, silently,
    until 2026-11-29. The exponent's sign is a predicate, so such a call traces again and raises eager's
    error (here on the interpreter backend, which would raise anyway: the log shows the predicate)."""
    power = jg.compile(lambda c, n: c ** n, dynamic=True, cache=False)
    c = jg.tensor(np.array([1, 2], dtype=np.int32))
    assert power(c, 3).tolist() == [1, 8]
    with pytest.raises(RuntimeError, match="negative integer powers"):
        power(c, -1)
    assert "a comparison of run-time numbers changed" in power.log[-1], power.log


def test_a_loss_scaled_by_a_run_time_number_compiles_its_gradient():
    """The gradient of ``loss * scale`` starts as ``1 * scale``, which simplify_algebra took for
    ``scale``, a Python number a reshape cannot take: until 2026-11-28 the call that made ``scale``
    dynamic raised AttributeError."""
    w = jg.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)

    def step(x, scale):
        ((x * w).sum() * scale).backward()
        return w.grad

    compiled = jg.compile(step, cache=False, fullgraph=True)
    x = data()
    for scale in (1.0, 2.0, 0.5):
        w.grad = None
        assert_close(compiled(x, scale), x.sum(0) * scale)
    assert any("made dynamic" in line for line in compiled.log), compiled.log


def test_an_int_argument_an_op_takes_as_a_dimension_specializes():
    """``sum(dim=t)`` tells an int from a tuple of them by ``isinstance``: until 2026-11-28 the
    symbolic ``t`` was neither, and the call raised ``TypeError`` where eager mode sums."""
    def f(x, t):
        return x.sum(dim=t).pow(2).sum()
    compiled = jg.compile(f, cache=False, fullgraph=True)
    x = data()
    for t in (0, 1, 0, -1):
        assert_close(compiled(x, t), f(x, t))


@pytest.mark.parametrize("branch", [
    lambda s: s > 1, lambda s: 1 < s, lambda s: s >= 2.0, lambda s: s != 4.0, lambda s: bool(s - 0.5),
    lambda s: 0.2 < s * 2 <= 5, lambda s: s == s * 1,
])
def test_a_comparison_keeps_the_number_a_run_time_input(branch):
    """A comparison gives the bool of this call's values and is checked at each call (a predicate):
    values that compare alike share a program, a value that compares otherwise runs another, traced
    for that outcome, and nothing is ever run on the other outcome's program."""
    def f(x, s):
        return (x * s).sum() if branch(s) else (x - s).sum()
    compiled = jg.compile(f, cache=False, fullgraph=True)
    x = data()
    values = (0.5, 0.75, 2.0, 3.0, 4.0, 0.6, 2.5, 4.0)
    for s in values:
        assert_close(compiled(x, s), f(x, s))
    outcomes = {bool(branch(s)) for s in values[1:]}   # the first call's value is a guarded constant
    assert len(compiled.programs) == 1 + len(outcomes), compiled.log
    assert compiled.recompiles == len(outcomes), compiled.log


def test_a_predicate_is_checked_before_what_its_branch_computes():
    """``1 / (1 - m)`` is computed only where ``m < 1``: a call with ``m == 1`` must find the
    comparison changed before it reaches the division (eager mode never divides there)."""
    def f(x, m):
        if m < 1:
            return (x * (1 / (1 - m))).sum()
        return x.sum()
    compiled = jg.compile(f, cache=False, fullgraph=True)
    x = data()
    for m in (0.5, 0.6, 1.0, 2.0, 0.25):
        assert_close(compiled(x, m), f(x, m))
    assert len(compiled.programs) == 3, compiled.log


def test_an_outcome_that_cannot_compile_runs_eagerly_and_leaves_the_others_compiled():
    """One branch calls an op no trace can hold: calls taking it run eagerly (said once, traced once),
    calls taking the other still run its compiled program."""
    from jitgrad.compile import CompileWarning

    def f(x, s):
        if s > 1:
            return jg.special.ndtri(x.sigmoid()).sum()
        return (x * s).sum()
    compiled = jg.compile(f, cache=False)
    x = data()
    with pytest.warns(CompileWarning, match="special.ndtri cannot run inside"):
        for s in (0.5, 0.7, 2.0, 0.3, 3.0, 0.4, 2.5):
            assert_close(compiled(x, s), f(x, s))
    assert compiled.recompiles == 2, compiled.log      # 0.7 made s dynamic; 2.0 took the other outcome
    assert compiled.explain(x, 0.2).program != "eager" and compiled.explain(x, 5.0).program == "eager"


def test_a_predicate_names_the_line_that_compared():
    def f(x, s):
        if s > 1:
            return x.sum()
        return x.mean()
    compiled = jg.compile(f, cache=False, fullgraph=True)
    x = data()
    for s in (0.5, 0.7, 2.0):
        assert_close(compiled(x, s), f(x, s))
    assert "a comparison of run-time numbers changed: a comparison made at" in compiled.log[-1], compiled.log
    assert "if s > 1: (False when traced, True now)" in compiled.log[-1], compiled.log


def test_bools_strings_and_none_stay_guarded_by_value():
    def f(x, flag, mode, extra):
        y = x.sum() if mode == "sum" else x.mean()
        return y * 2.0 if flag else y
    compiled = jg.compile(f, cache=False, fullgraph=True)
    x = data()
    for flag, mode in ((True, "sum"), (False, "sum"), (True, "mean"), (False, "mean")):
        assert_close(compiled(x, flag, mode, None), f(x, flag, mode, None))
    assert len(compiled.programs) == 4


def test_symbolic_numbers_follow_python_arithmetic():
    tracer = Tracer()
    with tracer.running():
        a, b = tracer.number_input("a", 7), tracer.number_input("b", 2.5)
        values = [a + 1, 2 - a, a * b, a / 2, a // 2, -a, abs(-b), b ** 2, a % 3, 1.5 ** a]
    assert [v.value for v in values] == [8, -5, 17.5, 3.5, 3, -7, 2.5, 6.25, 1, 1.5 ** 7]
    assert all(isinstance(v, SymbolicNumber) for v in values)
    assert [type(v.value) for v in values[:2]] == [int, int] and type(values[3].value) is float
    with tracer.running(), pytest.raises(Specialize, match="int\\(\\) needs the value of a"):
        int(a)
    assert tracer.specialized == {"a"}
