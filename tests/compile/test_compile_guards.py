"""Guards: what recompiles, what only retraces for new sizes, and what the log says."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg
from compile_helpers import assert_close
from jitgrad.compile import MAX_RECOMPILES, CompileWarning


def mean_by_hand(x, w):
    return (x * w).sum() / x.shape[0]  # a shape read as a Python value


def test_new_batch_size_retraces_and_never_bakes_in_a_shape(monkeypatch, capsys):
    monkeypatch.setenv("JITGRAD_LOG", "recompiles")
    f = jg.compile(mean_by_hand)
    w = jg.randn(3, dtype=jg.float64, requires_grad=True)
    for batch in (4, 6, 4):
        x = jg.randn(batch, 3, dtype=jg.float64)
        we = w.detach().requires_grad_()
        assert_close(f(x, w), mean_by_hand(x, we))
    assert f.recompiles == 0
    err = capsys.readouterr().err
    assert "retracing mean_by_hand for new sizes: argument 'x': shape was (4, 3), now (6, 3)" in err
    assert err.count("retracing") == 1  # batch 4 again: its graph is still there


@pytest.mark.parametrize("change,expected", [
    (lambda x, w: (x.to(jg.float32), w.detach().to(jg.float32).requires_grad_()),
     "argument 'x': dtype was float64, now float32"),
    (lambda x, w: (x.reshape(1, 2, 3), w), "argument 'x': rank was 2, now 3"),
    (lambda x, w: (x[:1], w), "argument 'x': dimensions of size 1 was (False, False), now (True, False)"),
    (lambda x, w: (x, w.detach()), "argument 'w': requires_grad was True, now False"),
])
def test_a_failed_guard_recompiles_and_says_which(monkeypatch, capsys, change, expected):
    monkeypatch.setenv("JITGRAD_LOG", "recompiles")
    f = jg.compile(mean_by_hand)
    x, w = jg.randn(2, 3, dtype=jg.float64), jg.randn(3, dtype=jg.float64, requires_grad=True)
    f(x, w)
    x2, w2 = change(x, w)
    assert_close(f(x2, w2), mean_by_hand(x2, w2))
    assert f.recompiles == 1
    err = capsys.readouterr().err
    assert expected in err and "test_compile_guards.py" in err, err


def test_grad_mode_and_non_tensor_values_are_guarded(capsys):
    f = jg.compile(lambda x, scale: (x * scale).sum())
    x = jg.randn(3, dtype=jg.float64, requires_grad=True)
    f(x, 2.0)
    with jg.no_grad():
        assert not f(x, 2.0).requires_grad
    assert "grad mode changed" in f.log[-1]
    assert_close(f(x, 3.0), (x * 3.0).sum())
    assert "argument 'scale': value was 2.0, now 3.0" in f.log[-1]


def grad_inside(x, w):
    with jg.enable_grad():
        return (x * w).sum() * 2.0


def test_inference_mode_is_a_grad_mode_of_its_own_and_the_results_are_inference_tensors():
    """Until 2026-11-28 a call under ``inference_mode`` ran what a ``no_grad`` call had traced (the key
    held only is_grad_enabled()), its results were not inference tensors, and a function turning grad
    mode on inside a ``no_grad`` call returned its result without the graph eager mode makes."""
    f = jg.compile(grad_inside, cache=False)
    x, w = jg.randn(3, dtype=jg.float64), jg.randn(3, dtype=jg.float64, requires_grad=True)
    with jg.inference_mode():
        out = f(x, w)
        assert out.is_inference() and grad_inside(x, w).is_inference()
        assert_close(out, grad_inside(x, w))
    with jg.no_grad(), pytest.warns(CompileWarning, match="turns grad mode on"):
        out = f(x, w)
    assert out.requires_grad and not out.is_inference()
    out.backward()
    assert_close(w.grad, 2.0 * x)
    with jg.inference_mode():
        assert f(x, w).is_inference()
    assert any("was inference_mode, now is_grad_enabled() False" in line for line in f.log), f.log


def test_a_view_of_a_normal_argument_returned_under_inference_mode_is_normal():
    """As eager's: until 2026-11-28 every tensor a call returned under ``inference_mode`` was an inference
    tensor, but the arguments returned themselves."""
    f = jg.compile(lambda x: (x[1:], x * 2.0), cache=False)
    x = jg.ones(3, dtype=jg.float64)
    with jg.inference_mode():
        view, product = f(x)
        inference = jg.ones(3, dtype=jg.float64)
        assert f(inference)[0].is_inference()
    assert not view.is_inference() and product.is_inference()


def test_an_inference_tensor_is_not_the_normal_tensor_of_its_shape(capsys):
    """Until 2026-11-28 the key did not hold ``is_inference()``: a function branching on it ran the branch
    traced for a normal tensor, and an inference tensor went where eager refuses to save it."""
    def f(x, w):
        if x.is_inference():
            return (x * 2.0).sum()
        return (x * w).sum()
    compiled = jg.compile(f, cache=False)
    x, w = jg.randn(3), jg.randn(3, requires_grad=True)
    with jg.inference_mode():
        inference = jg.randn(3)
    for argument in (x, inference, x):
        assert_close(compiled(argument, w), f(argument, w))
    assert any("was a leaf, now an inference tensor" in line for line in compiled.log), compiled.log
    product = jg.compile(lambda x, w: (x * w).sum(), cache=False)
    product(x, w)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        product(inference, w)


SIGN = {"zero": 0.0}


def test_a_negative_zero_is_not_the_zero_it_equals():
    """``0.0 == -0.0``, so until 2026-11-28 a program with 0.0 baked in served -0.0: ``1 / (x * a)``
    gave inf where eager mode gives -inf, as an argument or read from outside."""
    def reciprocals(x, a):
        return jg.stack([1.0 / (x * a), 1.0 / (x * SIGN["zero"])])
    f = jg.compile(reciprocals, cache=False)
    x = jg.ones(2, dtype=jg.float64)
    for a in (0.0, -0.0, 0.0):
        SIGN["zero"] = a
        np.testing.assert_array_equal(f(x, a).numpy(), reciprocals(x, a).numpy())
    assert "value was 0.0, now -0.0" in f.log[0], f.log


def repeat_rows(x, n):
    return jg.stack([x] * n).sum()  # n is needed as a Python value: a guarded constant


def test_after_max_recompiles_it_warns_once_and_runs_eagerly():
    f = jg.compile(repeat_rows)
    x = jg.randn(3, dtype=jg.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, MAX_RECOMPILES + 5):
            assert_close(f(x, n), repeat_rows(x, n))
    assert f.recompiles == MAX_RECOMPILES
    messages = [str(w.message) for w in caught if issubclass(w.category, CompileWarning)]
    assert len(messages) == 1 and "running it eagerly" in messages[0]


def test_a_new_size_is_lowered_again_and_marked_as_reusing_kernels(monkeypatch):
    """A backend caches its kernels by structure; a retrace for new sizes lowers the new graph (cheap
    then) and explain/logs say the kernels were reused. No recompile is counted."""
    from jitgrad.compile import backend as backend_module

    def without_sizes(graph):
        return tuple((n.op, n.target_name, str(n.meta.get("dtype")), len(n.meta.get("shape", ()))) for n in graph.nodes)
    monkeypatch.setattr(backend_module.INTERPRETER, "structural_key", without_sizes)

    def f(x, w):
        return (x * w).sin().sum()
    compiled = jg.compile(f, cache=False)
    w = jg.randn(3, dtype=jg.float64, requires_grad=True)
    for batch in (2, 5):
        x = jg.randn(batch, 3, dtype=jg.float64)
        we = w.detach().requires_grad_()
        out = compiled(x, w)
        assert_close(out, f(x, we))
        out.backward()
        f(x, we).backward()
        assert_close(w.grad, we.grad)
        w.grad = None
    programs = compiled.programs
    assert [p.lowered_graphs[0].reused for p in programs] == [False, True]
    assert compiled.recompiles == 0


def test_the_call_key_tells_apart_every_guarded_difference_and_nothing_else():
    """Programs are found by one exact key: two calls that differ in anything a guard covers must get
    different keys, and the same situation (with other tensors of the same kind) the same key."""
    import itertools

    from jitgrad.compile import guards
    from jitgrad.compile.pytree import flatten

    def tensor(shape, dtype, requires_grad=False, with_grad=False, hooked=False):
        t = jg.zeros(*shape, dtype=dtype, requires_grad=requires_grad)
        if with_grad:
            t.grad = jg.ones(*shape, dtype=dtype)
        if hooked:
            t.register_hook(lambda g: g)
        return t
    kinds = list(itertools.product([(2, 3), (2, 1), (3,), (1,)], [jg.float32, jg.float64],
                                   [(False, False, False), (True, False, False), (True, True, False),
                                    (True, False, True)]))
    values = [1, 1.0, True, 2, "mean", None, 0.5]
    situations = [(k, v) for k in kinds for v in values[:3]] + [(kinds[0], v) for v in values[3:]]
    situations += [(kinds[0], [1.0]), (kinds[0], (1.0,)), (kinds[0], {"a": 1.0})]

    def key(situation, grad_enabled, dtype):
        (shape, kind, flags), value = situation
        leaves, spec = flatten((tensor(shape, kind, *flags), value), {})
        jg.set_default_dtype(dtype)
        try:
            with jg.set_grad_enabled(grad_enabled):
                return guards.call_key(spec, leaves, (), [])
        finally:
            jg.set_default_dtype(jg.float32)
    seen = {}
    for grad_enabled, dtype in itertools.product((True, False), (jg.float32, jg.float64)):
        for situation in situations:
            k = key(situation, grad_enabled, dtype)
            assert key(situation, grad_enabled, dtype) == k     # fresh tensors, the same situation
            assert seen.setdefault(k, (situation, grad_enabled, dtype)) == (situation, grad_enabled, dtype)
    assert len(seen) == 4 * len(situations)
    shared = jg.zeros(3)
    twice, spec = flatten((shared, shared), {})
    two, _ = flatten((jg.zeros(3), jg.zeros(3)), {})
    assert guards.call_key(spec, twice, (), []) != guards.call_key(spec, two, (), [])


def test_a_tensor_where_a_number_was_made_dynamic_is_guarded_as_a_tensor():
    # a KeyError from the trace (the tensor was taken for the run-time number), and its key kept only
    # the shape of the tensor there
    step = jg.compile(lambda a, b: a * b)
    x = jg.ones(2)
    step(x, 2.0), step(x, 3.0)                     # b becomes a run-time number
    for b in (jg.tensor([1.0, 2.0]), jg.tensor([1, 2]), jg.tensor([3.0, 4.0], dtype=jg.float64), 5.0, 6):
        expected = x * b
        got = step(x, b)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_the_reader_reads_a_container_once_for_all_the_sources_under_it():
    """A training step guards hundreds of values down a few paths (``model._modules['0']...``): the
    generated reader reads each shared container once per call, where each source walked its path."""
    from jitgrad.compile.sources import Source, reader

    class Layers:
        def __init__(self):
            self.a, self.b, self.items = 1.0, 2.0, {"w": [3.0, 4.0]}

    class Holder:
        reads = 0

        @property
        def layers(self):
            Holder.reads += 1
            return self._layers
    holder = Holder()
    holder._layers = Layers()
    root = Source("held", holder, None)
    layers = root.attr("layers")
    read = reader([(layers.attr("a"), "{0}"), (layers.attr("b"), "{0}"), (layers.attr("items").entry("w").item(1),
                   "{0}"), (layers.attr("items"), "len({0})"), (root, "id({0})")], {})
    assert read((), {}) == (1.0, 2.0, 4.0, 1, id(holder)) and Holder.reads == 1
    del holder._layers.b
    assert read((), {}) is None


def test_a_call_key_from_free_kinds_is_the_key_from_their_list():
    from jitgrad.compile import guards
    from jitgrad.compile.pytree import flatten
    kinds = ["identity", "tensor", "number", "value", "array", "tensor", "keys"]
    shared = jg.ones(2)
    free = (7, shared, 0.5, ("v",), np.ones(2), shared, ("k",))
    leaves, spec = flatten((jg.zeros(3), 1.5), {})
    for count in (len(free), 4, 0):
        assert guards.call_key(spec, leaves, free[:count], guards.FreeKinds(kinds), frozenset({4})) == \
            guards.call_key(spec, leaves, free[:count], kinds, frozenset({4}))
    key = guards.call_key(spec, leaves, free, guards.FreeKinds(kinds))
    assert key[3:5] == (guards.tensor_descriptor(leaves[0]), (float, 1.5))
    assert key[5:12] == (7, guards.tensor_descriptor(shared), (float,), ("v",), guards.value_descriptor(np.ones(2)),
                         guards.tensor_descriptor(shared), ("k",))
    assert key[-1] == (0, 1, 1)   # the second and third tensors are one


def _row_major():
    return jg.arange(6.0, dtype=jg.float64).reshape(2, 3)


def _column_major():
    return jg.from_numpy(np.asfortranarray(np.arange(6.0).reshape(2, 3)))


@pytest.mark.parametrize("fn", [lambda x: x.reshape(-1).add_(1), lambda x: x.contiguous().add_(1)],
                         ids=["reshape", "contiguous"])
def test_a_program_traced_for_one_layout_never_serves_another(fn):
    """Whether ``reshape``/``contiguous()`` of an argument is a view of it (writes reach the caller) or a
    copy depends on its strides, which a trace reads: a row-major and a column-major argument of the same
    shape get programs of their own (one served the other, silently, until 2026-11-28)."""
    f = jg.compile(fn, cache=False)
    for make in (_column_major, _row_major, _column_major):
        x, expected = make(), make()
        fn(expected)
        f(x)
        assert np.array_equal(x.numpy(), expected.numpy()), make.__name__
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        jg.compile(lambda x: x.view(-1) * 2, cache=False)(_column_major())


def test_a_layout_change_is_a_retrace_named_in_the_log():
    from jitgrad.compile import guards
    from jitgrad.compile.pytree import flatten

    keys = [guards.call_key(spec, leaves, (), []) for leaves, spec in (flatten((make(),), {}) for make in
                                                                     (_column_major, _row_major))]
    miss = guards.describe_miss(keys[0], keys[1], ["", "", "", "x", ""])
    assert (miss.reason, miss.retrace) == ("x: strides were [1, 2], now C-contiguous", True)
    strided = jg.zeros(2, 1, 4)[..., ::2], jg.zeros(2, 4).unsqueeze(1)[..., ::2]
    assert guards.tensor_descriptor(strided[0]) == guards.tensor_descriptor(strided[1])  # size-1 strides unread
