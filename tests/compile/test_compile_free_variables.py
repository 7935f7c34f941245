"""Tensors a compiled function reads from outside its arguments (closures, globals, defaults, objects)
are inputs read afresh at every call; Python values read from outside are guarded; Python side effects
are never run only once in silence."""
from __future__ import annotations

import argparse
import collections
import functools
import itertools
import random
import time
import types
import warnings

import numpy as np
import pytest

import jitgrad as jg
from compile_helpers import assert_close
from jitgrad.compile import CompileError, CompileWarning


def weights(seed=0, shape=(3, 2)):
    rng = np.random.default_rng(seed)
    return jg.tensor(rng.standard_normal(shape), requires_grad=True)


def inputs(seed=1, shape=(4, 3)):
    return jg.tensor(np.random.default_rng(seed).standard_normal(shape))


def train(make_step, compiled, steps=4):
    """Runs ``steps`` steps of the step ``make_step(W)`` builds around a fresh W; the losses and W."""
    W = weights()
    step = make_step(W)
    if compiled:
        step = jg.compile(step, cache=False, fullgraph=True)
    x = inputs()
    losses = [step(x).item() for _ in range(steps)]
    return losses, W


def sgd_step_on(W):
    def step(x):
        loss = (x @ W).tanh().sum()
        loss.backward()
        with jg.no_grad():
            W.sub_(0.1 * W.grad)
        W.grad = None
        return loss
    return step


def test_a_step_updating_a_captured_tensor_trains_as_eager():
    eager, w_eager = train(sgd_step_on, compiled=False)
    ours, w_ours = train(sgd_step_on, compiled=True)
    assert len(set(ours)) == len(ours)  # it trains: every loss differs
    np.testing.assert_allclose(ours, eager, rtol=1e-12)
    assert_close(w_ours, w_eager)
    assert w_ours.grad is None and w_ours.requires_grad and w_ours.is_leaf


def test_a_loss_over_a_captured_tensor_gives_it_its_gradient():
    W, x = weights(), inputs()
    f = jg.compile(lambda x: (x @ W).tanh().sum(), cache=False, fullgraph=True)
    for _ in range(3):
        loss = f(x)
        assert loss.requires_grad and loss.grad_fn.name() == "CompiledFunctionBackward"
        loss.backward()
        W_eager = W.detach().clone().requires_grad_()
        (x @ W_eager).tanh().sum().backward()
        assert_close(W.grad, W_eager.grad)
        with jg.no_grad():
            W -= 0.5 * W.grad      # an update outside, in place: the next call sees it
        W.grad = None
        assert_close(f(x), (x @ W).tanh().sum())


GLOBAL_W = weights(2)


def global_loss(x):
    return (x @ GLOBAL_W).sum()


def test_global_tensors_and_their_in_place_updates_are_read_at_every_call():
    f = jg.compile(global_loss, cache=False, fullgraph=True)
    x = inputs()
    for scale in (1.0, 10.0):
        with jg.no_grad():
            GLOBAL_W.mul_(scale)
        assert_close(f(x), global_loss(x))
    GLOBAL_W.data = jg.ones(3, 2, dtype=jg.float64)
    assert_close(f(x), global_loss(x))
    assert f.recompiles == 0


def test_rebinding_a_captured_tensor_is_seen_and_a_new_shape_retraces_naming_it():
    W = weights()

    def loss(x):
        return (x @ W).sum()
    f = jg.compile(loss, cache=False, fullgraph=True)
    x = inputs()
    assert_close(f(x), loss(x))
    W = weights(7)  # same kind of tensor: read afresh, nothing traced again
    assert_close(f(x), loss(x))
    assert len(f.programs) == 1
    W = weights(7, shape=(3, 5))
    assert_close(f(x), loss(x))
    assert "closure variable 'W': shape was (3, 2), now (3, 5)" in f.log[-1] and f.recompiles == 0


class Model:
    def __init__(self):
        self.layers = [weights(3, (3, 4)), weights(4, (4, 2))]
        self.scale = 0.5

    def __call__(self, x):
        for w in self.layers:
            x = (x @ w).tanh()
        return x * self.scale


MODEL = Model()


def test_a_model_object_reached_from_a_global_gives_its_weights_gradients():
    f = jg.compile(lambda x: MODEL(x).sum(), cache=False, fullgraph=True)
    x = inputs()
    f(x).backward()
    grads = [w.grad for w in MODEL.layers]
    eager = Model()
    for w, original in zip(eager.layers, MODEL.layers):
        w.data = original.detach().clone()
    eager(x).sum().backward()
    for ours, theirs in zip(grads, [w.grad for w in eager.layers]):
        assert_close(ours, theirs)


def test_a_model_passed_as_an_argument_and_a_default_argument_are_inputs_too():
    model, bias = Model(), weights(5, (2,))

    def loss(m, x, b=bias):
        return (m(x) + b).sum()
    f = jg.compile(loss, cache=False, fullgraph=True)
    x = inputs()
    out = f(model, x)
    out.backward()
    assert bias.grad is not None and all(w.grad is not None for w in model.layers)
    with jg.no_grad():
        model.layers[0].mul_(2.0)
        bias.add_(1.0)
    assert_close(f(model, x), loss(model, x))


SCALES = {"s": 2.0}


def scaled(x):
    return (x * SCALES["s"]).sum()


def test_a_global_number_is_guarded_and_the_log_names_it():
    f = jg.compile(scaled, cache=False)
    x = inputs()
    assert_close(f(x), scaled(x))
    SCALES["s"] = 3.0
    try:
        assert_close(f(x), scaled(x))
        assert "global 'SCALES['s']': value was 2.0, now 3.0" in f.log[-1]
    finally:
        SCALES["s"] = 2.0


def test_a_global_read_through_globals_is_guarded():
    """The code names ``globals``, not the global: every global of its module is guarded then (a module
    of its own here, so that the walk stays small)."""
    namespace = {"SCALE": 2.0}
    exec("def f(x):\n    return (x * globals()['SCALE']).sum()\n", namespace)
    f = namespace["f"]
    compiled = jg.compile(f, cache=False, fullgraph=True)
    x = inputs()
    assert_close(compiled(x), f(x))
    namespace["SCALE"] = 5.0
    assert_close(compiled(x), f(x))
    assert "global 'SCALE': value was 2.0, now 5.0" in compiled.log[-1]


def test_a_module_attribute_read_by_a_computed_name_is_guarded():
    config = types.ModuleType("user_config")
    config.SCALE = 2.0

    def f(x):
        return (x * vars(config)["SCALE"] + getattr(config, "SC" + "ALE")).sum()
    compiled = jg.compile(f, cache=False)
    x = inputs()
    assert_close(compiled(x), f(x))
    config.SCALE = 5.0
    assert_close(compiled(x), f(x))


def test_a_set_read_from_outside_is_guarded_by_its_items():
    scales = {1.0, 2.0}

    def f(x):
        return (x * max(scales)).sum()
    compiled = jg.compile(f, cache=False)
    x = inputs()
    assert_close(compiled(x), f(x))
    scales.add(4.0)
    assert_close(compiled(x), f(x))


def test_a_bytearray_read_from_outside_or_passed_is_guarded_by_its_bytes():
    table = bytearray(np.ones(3).tobytes())

    def f(x, extra):
        return (x * float(np.frombuffer(table)[0]) + float(np.frombuffer(extra)[1])).sum()
    compiled = jg.compile(f, cache=False)
    x, extra = inputs(), bytearray(np.ones(3).tobytes())
    assert_close(compiled(x, extra), f(x, extra))
    table[:8] = np.float64(5.0).tobytes()
    assert_close(compiled(x, extra), f(x, extra))
    extra[8:16] = np.float64(7.0).tobytes()
    assert_close(compiled(x, memoryview(extra)), f(x, memoryview(extra)))


def _set_attribute(record, value):
    record.scale = value


def _set_item(record, value):
    record["scale"] = value


def _set_first(record, value):
    record[0] = value


RECORDS = [  # how a number can be kept in the standard library's containers, and changed there
    ("SimpleNamespace", lambda: types.SimpleNamespace(scale=2.0), lambda r: r.scale, _set_attribute),
    ("argparse.Namespace", lambda: argparse.Namespace(scale=2.0), lambda r: r.scale, _set_attribute),
    ("OrderedDict", lambda: collections.OrderedDict(scale=2.0), lambda r: r["scale"], _set_item),
    ("defaultdict", lambda: collections.defaultdict(float, scale=2.0), lambda r: r["scale"], _set_item),
    ("deque", lambda: collections.deque([2.0]), lambda r: r[0], _set_first),
    ("tuple-keyed dict", lambda: {(1, "scale"): 2.0}, lambda r: r[(1, "scale")],
     lambda r, v: r.__setitem__((1, "scale"), v)),
]


@pytest.mark.parametrize("make,read,change", [r[1:] for r in RECORDS], ids=[r[0] for r in RECORDS])
def test_a_number_kept_in_a_standard_library_container_is_guarded(make, read, change):
    """These were neither entered nor guarded (the standard library's objects), so a changed number
    gave the first trace's result, silently."""
    record = make()
    f = jg.compile(lambda x: (x * read(record)).sum(), cache=False)
    x = inputs()
    assert_close(f(x), (x * 2.0).sum())
    change(record, 3.0)
    assert_close(f(x), (x * 3.0).sum())
    assert "value was 2.0, now 3.0" in f.log[-1]


def test_a_dict_keyed_by_objects_cannot_be_guarded_and_runs_eagerly():
    key = object()
    table = {key: 2.0}
    f = jg.compile(lambda x: (x * table[key]).sum(), cache=False)
    x = inputs()
    with pytest.warns(CompileWarning, match="a dict keyed by object, whose entries cannot be guarded"):
        assert_close(f(x), (x * 2.0).sum())
    table[key] = 3.0
    assert_close(f(x), (x * 3.0).sum())


def test_a_learning_rate_read_from_an_optimizer_is_read_at_every_call():
    """jitgrad.optim's objects were not entered (a library's), so a changed ``lr`` was baked in; a
    parameter group's ``lr`` is now a run-time input: the new rate runs the same program."""
    w = jg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    opt = jg.optim.SGD([w], lr=0.1)

    def step(x):
        loss = (x * w).sum()
        loss.backward()
        with jg.no_grad():
            w.sub_(opt.param_groups[0]["lr"] * w.grad)
        w.grad = None
        return loss
    f = jg.compile(step, cache=False)
    x = jg.tensor([1.0, 1.0, 1.0])
    f(x)
    opt.param_groups[0]["lr"] = 1.0
    f(x)
    assert w.tolist() == pytest.approx([1.0 - 0.1 - 1.0, 2.0 - 0.1 - 1.0, 3.0 - 0.1 - 1.0])
    assert f.log == [] and len(f.programs) == 1


def test_a_value_reached_by_two_paths_is_guarded_on_both():
    """The walk enters an object once; a second path to it (a tuple an optimizer's group shares with
    its defaults) was not guarded, so rebinding it there ran the stale program."""
    w = jg.tensor([1.0, 2.0], requires_grad=True)
    shared = (2.0, 3.0)
    config = {"first": shared, "second": shared}

    def f(x):
        return (x * w * config["second"][0]).sum()
    compiled = jg.compile(f, cache=False)
    x = jg.tensor([1.0, 1.0])
    assert compiled(x).item() == 6.0
    config["second"] = (5.0, 3.0)
    assert compiled(x).item() == 15.0
    assert "config['second']" in compiled.log[-1]


UNSEEN_CHANGES = [  # values from calls into libraries, which no guard sees
    ("random.random", lambda: lambda x: (x * random.random()).sum()),
    ("np.random", lambda: lambda x: (x * jg.tensor(np.random.rand(4, 3))).sum()),
    ("a counter", lambda: (lambda counter: lambda x: (x * next(counter)).sum())(itertools.count())),
    ("at every step of a loop", lambda: _every_step(lambda: random.random())),
    ("at one step of a loop", lambda: _every_step(lambda: 0.5, (lambda counter: lambda: next(counter) % 2)(
        itertools.count()))),
]


def _every_step(scale, step_of=lambda: 3):
    """A loop of 8 steps, as a trace unrolls it (and ``roll_loops`` rolls it), scaled by ``scale()``,
    read once before the loop, and at step ``step_of()`` by 2 more."""
    def f(x):
        h, factor, special = x[0], scale(), step_of()
        for t in range(8):
            h = (h * factor + x[t % 4]).tanh() * (2.0 if t == special else 1.0)
        return h.sum()
    return f


@pytest.mark.parametrize("make", [c[1] for c in UNSEEN_CHANGES], ids=[c[0] for c in UNSEEN_CHANGES])
def test_a_value_no_guard_sees_changing_runs_eagerly_with_the_reason(make):
    """Such a value was baked into the graph as a constant, and every call returned the first one.
    Two traces of the first call differ, or a draw from random's or numpy.random's global state is a
    side effect, or an iterator it moves is one no guard sees, so the function runs eagerly and says why."""
    f = jg.compile(make(), cache=False)
    x = inputs()
    with pytest.warns(CompileWarning, match="two traces of one call gave different graphs|a random draw|"
                                            "whose position no guard sees"):
        first = f(x).item()
    assert f(x).item() != first
    assert not f.programs


def test_a_difference_the_function_catches_still_runs_it_eagerly():
    """The second trace is checked as it runs: a difference raises inside the function, which may catch
    it; the check keeps it and the capture still refuses the graph."""
    def f(x):
        total = x.sum()
        try:
            x * time.perf_counter()
        except Exception:  # noqa: BLE001 - what a careless function does
            pass
        return total
    g = jg.compile(f, cache=False)
    with pytest.warns(CompileWarning, match="two traces of one call gave different graphs"):
        g(inputs())
    assert not g.programs


def test_the_second_trace_builds_no_node(monkeypatch):
    """Each node the second trace asks for is the first trace's, once checked (fx.checked_graph)."""
    import importlib
    from jitgrad.fx.node import Node
    capture_module = importlib.import_module("jitgrad.compile.capture")
    made, init = [], Node.__init__

    def counted(self, *args, **kwargs):
        made.append(self)
        init(self, *args, **kwargs)
    monkeypatch.setattr(Node, "__init__", counted)
    w = jg.randn(3, requires_grad=True)

    def step(x):
        loss = (x * w).tanh().sum() * 0.5
        loss.backward()
        return loss
    captured = capture_module.capture(step, (jg.ones(3),), {}, ["x"])
    assert len(made) == len(captured.graph) > 10


def helper(x):
    return x * 2.0


def calls_helper(x):
    return helper(x).sum()


def test_a_rebound_global_function_recompiles():
    global helper
    f = jg.compile(calls_helper, cache=False)
    x = inputs()
    assert_close(f(x), calls_helper(x))
    original = helper
    helper = lambda v: v * 3.0  # noqa: E731
    try:
        assert_close(f(x), calls_helper(x))
        assert "global 'helper'" in f.log[-1]
    finally:
        helper = original


@pytest.mark.parametrize("wrap", [staticmethod, lambda g: classmethod(lambda cls, v: g(v)),
                                  lambda g: property(lambda self: g)], ids=["staticmethod", "classmethod", "property"])
def test_a_descriptor_rebound_on_a_class_recompiles(wrap):
    """Before 2026-11-28 the walk entered the function a staticmethod, classmethod or property wraps but
    guarded neither: ``Act.fn = staticmethod(g)`` between calls ran the old function, silently."""
    class Act:
        pass
    act = Act()
    activations = [lambda v: v.tanh(), lambda v: v.exp()]

    def f(x):
        return act.fn(x).sum()
    compiled = jg.compile(f, cache=False)
    x = inputs()
    for g in activations:
        Act.fn = wrap(g)
        assert_close(compiled(x), f(x))
    assert len(compiled.programs) == 2


def test_code_replaced_in_place_recompiles():
    """A reloader (IPython's autoreload) edits a function by setting its ``__code__``: the function
    compiled and a helper it calls are the same objects, with other code. Before 2026-11-28 both kept
    running the program traced from the old code, silently."""
    def helper(v):
        return v.tanh()

    def f(x):
        return helper(x).sum()
    compiled = jg.compile(f, cache=False)
    x = inputs()
    assert_close(compiled(x), f(x))
    helper.__code__ = (lambda v: v.exp()).__code__
    assert_close(compiled(x), f(x))
    f.__code__ = (lambda x: helper(x).mean()).__code__
    assert_close(compiled(x), f(x))
    assert len(compiled.programs) == 3


def test_a_numpy_array_read_from_outside_is_an_input():
    table = np.arange(6.0).reshape(3, 2)

    def f(x):
        return (x @ jg.tensor(table)).sum()
    compiled = jg.compile(f, cache=False, fullgraph=True)
    x = inputs()
    assert_close(compiled(x), f(x))
    table *= 10.0
    assert_close(compiled(x), f(x))


HISTORY: list = []


def logs_its_loss(x):
    loss = (x * x).sum()
    HISTORY.append(loss)
    return loss


def test_a_python_side_effect_is_undone_reported_and_run_eagerly():
    HISTORY.clear()
    x = inputs()
    line = logs_its_loss.__code__.co_firstlineno + 2
    with pytest.raises(CompileError, match=rf"global 'HISTORY' grew from 0 to 1 items at .*test_compile_free_variables"
                                           rf"\.py:{line} \(HISTORY\.append\(loss\)\)"):
        jg.compile(logs_its_loss, cache=False, fullgraph=True)(x)
    assert HISTORY == []  # the trace's append was undone
    with pytest.warns(CompileWarning, match="changes Python state outside itself"):
        f = jg.compile(logs_its_loss, cache=False)
        for _ in range(2):
            f(x)
    assert len(HISTORY) == 2 and all(type(v) is jg.Tensor for v in HISTORY)
    assert_close(HISTORY[0], (x * x).sum())


def test_an_attribute_set_on_a_captured_object_is_a_side_effect():
    class Counter:
        calls = 0
    counter = Counter()

    def f(x):
        counter.calls += 1
        return x.sum()
    with pytest.raises(CompileError, match=r"attributes calls changed at .*:\d+ \(counter\.calls \+= 1\)"):
        jg.compile(f, cache=False, fullgraph=True)(inputs())
    assert counter.calls == 0


class Calls:
    count = 0


CONFIG_MODULE = types.ModuleType("user_config")
CONFIG_MODULE.count = 0
SEEN: set = set()
TALLY = np.zeros(2)


def count_in_class(x):
    Calls.count += 1
    return x.sum()


def count_in_module(x):
    CONFIG_MODULE.count += 1
    return x.sum()


def count_on_itself(x):
    count_on_itself.count = getattr(count_on_itself, "count", 0) + 1
    return x.sum()


def count_in_set(x):
    SEEN.add(len(SEEN))
    return x.sum()


def count_in_array(x):
    TALLY[0] += 1
    return x.sum()


COUNTERS = {count_in_class: lambda: Calls.count, count_in_module: lambda: CONFIG_MODULE.count,
            count_on_itself: lambda: getattr(count_on_itself, "count", 0), count_in_set: lambda: len(SEEN),
            count_in_array: lambda: int(TALLY[0])}


@pytest.mark.parametrize("fn", list(COUNTERS), ids=["class attribute", "module attribute", "function attribute",
                                                      "set", "numpy array"])
def test_a_change_to_a_class_module_function_set_or_array_is_a_side_effect(fn):
    """Until 2026-11-28 these places had no snapshot: both traces made the change and no call did
    (the count went 2, 2, 2 where eager mode counts 1, 2, 3)."""
    count = COUNTERS[fn]
    start = count()
    with pytest.raises(CompileError, match="changes Python state outside itself"):
        jg.compile(fn, cache=False, fullgraph=True)(inputs())
    assert count() == start   # the traces' changes were undone
    with pytest.warns(CompileWarning, match="changes Python state outside itself"):
        f = jg.compile(fn, cache=False)
        for _ in range(3):
            f(inputs())
    assert count() == start + 3


def test_a_tensor_reached_in_no_way_a_call_could_read_runs_eagerly_with_the_reason():
    @functools.lru_cache(maxsize=None)
    def cached():
        return jg.tensor([1.0, 2.0, 3.0], dtype=jg.float64)
    cached()  # made before the compiled function runs: only the cache holds it

    def f(x):
        return (x * cached()).sum()
    with pytest.raises(CompileError, match="not among its arguments and was not found"):
        jg.compile(f, cache=False, fullgraph=True)(inputs())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        x = inputs()
        assert_close(jg.compile(f, cache=False)(x), f(x))


def test_check_mode_compares_a_step_on_captured_tensors_without_updating_twice():
    eager, w_eager = train(sgd_step_on, compiled=False, steps=2)
    W, x = weights(), inputs()
    step = jg.compile(sgd_step_on(W), cache=False, check=True)
    ours = [step(x).item() for _ in range(2)]
    np.testing.assert_allclose(ours, eager, rtol=1e-12)
    assert_close(W, w_eager)


def test_a_view_read_after_its_base_was_written_in_place_sees_the_write():
    def f(x):
        view = x[0]
        x.add_(1.0)
        return view * 2.0
    x, xe = jg.zeros(2, 2, dtype=jg.float64), jg.zeros(2, 2, dtype=jg.float64)
    assert_close(jg.compile(f, cache=False, fullgraph=True)(x), f(xe))
    assert_close(x, xe)


class Cube(jg.autograd.Function):
    """A custom Function in jitgrad ops: its own backward runs inside the compiled graph."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3.0 * x * x


@pytest.mark.parametrize("use", [
    lambda W, x: (x @ W.T.T).exp().mean(),           # tensor methods and properties on it
    lambda W, x: Cube.apply(x @ W).sum(),            # a custom Function applied to it
    lambda W, x: Cube.apply(W).sum() + (x @ W).sum(),
], ids=["methods", "function_of_product", "function_of_weight"])
def test_the_forms_a_captured_tensor_is_used_in(use):
    W, x = weights(), inputs()
    f = jg.compile(lambda x: use(W, x), cache=False, fullgraph=True)
    f(x).backward()
    We = W.detach().clone().requires_grad_()
    use(We, x).backward()
    assert_close(W.grad, We.grad)


def test_a_hook_on_a_captured_tensor_of_a_step_is_a_clear_graph_break():
    W = weights()
    W.register_hook(lambda g: g * 2.0)
    with pytest.raises(CompileError, match="has a hook and the function runs backward inside"):
        jg.compile(sgd_step_on(W), cache=False, fullgraph=True)(inputs())
    assert W.grad is None and W._hooks  # nothing ran, the hook is still there (no public view of hooks)


def test_a_global_sharing_its_name_with_an_attribute_is_not_guarded():
    """``for step in range(n):`` at module level and ``opt.step()`` inside: the code names ``step``
    only as an attribute, so the loop variable is no guard (each iteration recompiled)."""
    namespace = {"__name__": "a_user_module", "jg": jg, "w": jg.tensor([1.0, 2.0], requires_grad=True)}
    exec("class Holder:\n    step = 2.0\n"
         "holder = Holder()\n"
         "def f(x):\n    return (x * w * holder.step).sum()\n", namespace)
    compiled = jg.compile(namespace["f"], cache=False)
    x = jg.tensor([1.0, 1.0])
    for step in range(3):
        namespace["step"] = step
        assert compiled(x).item() == 6.0
    assert compiled.log == [] and len(compiled.programs) == 1
    namespace["holder"].step = 3.0             # the attribute itself is guarded
    assert compiled(x).item() == 9.0


def test_a_function_attribute_it_reads_is_guarded():
    """``f.scale = 2`` read inside as ``f.scale`` (through the global ``f``, and through a helper's
    global): changing it recompiles; it was not guarded, and the call returned the old value."""
    namespace = {"jg": jg}
    exec("def helper(x):\n    return x * helper.offset\n"
         "def f(x):\n    return (helper(x) * f.scale).sum()\n", namespace)
    f, helper = namespace["f"], namespace["helper"]
    f.scale, helper.offset = 2.0, 1.0
    compiled = jg.compile(f, cache=False)
    x = jg.ones(3)
    assert compiled(x).item() == 6.0
    f.scale = 3.0
    assert compiled(x).item() == 9.0
    helper.offset = 2.0
    assert compiled(x).item() == 18.0 and compiled.recompiles == 2


_held = {"w": jg.ones(2, requires_grad=True)}


@pytest.mark.parametrize("read", [lambda x, w: x * w.shape[0], lambda x, w: x * 2 if w.requires_grad else x,
                                  lambda x, w: x * 2 if w.dtype == jg.float32 else x,
                                  lambda x, w: x * 2 if w.grad is None else x],
                         ids=["shape", "requires_grad", "dtype", "grad-is-None"])
def test_a_tensor_read_from_outside_only_in_python_is_guarded(read):
    # the trace never reads the tensor itself, so it had no guard: x * w.shape[0] stayed 2 after w was
    # rebound to a tensor of 5 elements
    def fn(x):
        return read(x, _held["w"])
    step = jg.compile(fn)
    for w in (jg.ones(2, requires_grad=True), jg.ones(5, dtype=jg.float64), jg.ones(2, requires_grad=True)):
        _held["w"] = w
        assert_close(step(jg.ones(2)), fn(jg.ones(2)))
    _held["w"].grad = jg.ones(2)
    assert_close(step(jg.ones(2)), fn(jg.ones(2)))


def test_the_grad_of_a_tensor_from_outside_read_alone():
    """The .grad is read through its tensor at each call (which becomes an input, unread): it raised
    KeyError while capturing."""
    w = jg.ones(2, requires_grad=True)
    w.grad = jg.full((2,), 3.0)
    f = jg.compile(lambda x: x * w.grad, cache=False)
    assert_close(f(jg.ones(2)), jg.ones(2) * 3)
    w.grad.fill_(5.0)
    assert_close(f(jg.ones(2)), jg.ones(2) * 5)
    w.grad = jg.full((2,), 7.0)
    assert_close(f(jg.ones(2)), jg.ones(2) * 7)


@pytest.mark.parametrize("module", [random, np.random], ids=["random", "numpy.random"])
def test_a_random_draw_while_tracing_is_undone_and_runs_eagerly(module):
    # a draw taken only in Python (a branch), which two traces may take alike: it was baked in, and
    # the traces' draws shifted the caller's sequence from eager mode's
    def f(x):
        return x * 2 if module.random() < 0.99 else x * 3
    step = jg.compile(f, cache=False)
    results = []
    for fn in (f, step):
        module.seed(3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CompileWarning)
            results.append([fn(jg.ones(1)).item() for _ in range(3)] + [module.random()])
    assert results[1] == results[0]
    assert not step.programs
