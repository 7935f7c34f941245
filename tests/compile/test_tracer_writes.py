"""The tracer edits jitgrad.compile needs: writes into arguments are captured (or refused), and
``w.data``/``w.detach()`` read the argument rather than a constant copy of its example value."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from compile_helpers import assert_close
from jitgrad import fx
from jitgrad.fx.node import Opcode
from jitgrad.fx.tracer import Tracer
from jitgrad.ops.registry import observing


def test_fx_trace_still_refuses_a_write_into_an_argument():
    def update(w):
        with jg.no_grad():
            w.data -= 0.1
        return w
    with pytest.raises(fx.TraceError, match="in-place change to an argument"):
        fx.trace(update, jg.ones(3))


def test_data_of_an_argument_is_the_argument_not_a_constant():
    graph = fx.trace(lambda w: w.detach() * 2.0, jg.ones(3)).graph
    assert not graph.constants
    mul = next(n for n in graph.nodes if n.op is Opcode.CALL_FUNCTION)
    assert mul.args[0].op is Opcode.PLACEHOLDER


def test_a_captured_write_is_read_by_later_ops():
    tracer = Tracer(capture_writes=True)
    w = tracer.placeholder("w", jg.ones(3, dtype=jg.float64))
    with observing(tracer.observe, tracer.alias):
        with jg.no_grad():
            w.data.mul_(3.0)     # through a tensor sharing w's memory
            w -= 1.0             # in place on w itself
        out = w * 2.0
    placeholder = tracer.graph.placeholders[0]
    written = tracer.writes[placeholder]
    assert written.target_name == "sub" and tracer.node_of(out).args[0] is written
    assert_close(out._data, np.full(3, 4.0))  # a traced tensor refuses .numpy(), even after the trace


@pytest.mark.parametrize("make", [lambda: jg.zeros(2, 3, dtype=jg.float64),
                                  lambda: jg.arange(6.0, dtype=jg.float64).reshape(2, 3),
                                  lambda: jg.zeros(3, 2, dtype=jg.float64).t()],
                         ids=["owns its memory", "a view of an array (randn's too)", "transposed"])
def test_a_write_through_a_view_of_an_argument_is_refused_and_the_step_runs_eagerly(make):
    """numpy's ``base`` names the array owning the memory, not the one a view was taken of: an argument
    that is itself a view (``randn``'s result, a reshape, a transpose) made the write through ``w[0]``
    look like a write into a temporary. Before 2026-11-28 each trace wrote into the caller's memory and
    the program dropped the write: ``w[0]`` doubled at the first call and never again."""
    import warnings

    from jitgrad.compile import CompileWarning

    def step(w):
        with jg.no_grad():
            w[0].mul_(2.0).add_(1.0)   # a view of w: changes part of it
        return w * 1.0
    w, we = make(), make()
    compiled = jg.compile(step, cache=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            assert_close(compiled(w), step(we))
            assert_close(w, we)
    assert any(issubclass(c.category, CompileWarning) and "through a view" in str(c.message) for c in caught)


def _overlapping_views():
    base = jg.arange(6.0)
    return base[:4], base[2:]


def _base_and_view():
    base = jg.arange(6.0)
    return base, base[1:3]


def _one_array_twice():
    a = jg.arange(4.0)
    return a, a.detach()      # two tensors over one numpy array


def _write_then_read(a, b):
    with jg.no_grad():
        a.add_(10.0)
    return (b * 1.0).sum()


def _read_write_read(a, b):
    s = (b * 1.0).sum()
    with jg.no_grad():
        b.mul_(2.0)
    return s + a.sum()


@pytest.mark.parametrize("make", [_overlapping_views, _base_and_view, _one_array_twice],
                         ids=["overlapping views", "base and view", "one array twice"])
@pytest.mark.parametrize("fn", [_write_then_read, _read_write_read], ids=["write, read", "read, write, read"])
def test_a_write_into_an_input_sharing_memory_with_another_runs_eagerly_and_says_so(make, fn):
    """The program reads every input before writing any; eager sees a write through the other view at
    once. Before the check, these calls returned the sums of the old values, silently."""
    from jitgrad.compile import CompileError, CompileWarning
    compiled = jg.compile(fn, cache=False)
    eager_args, args = make(), make()
    with pytest.warns(CompileWarning, match="shares memory with another input"):
        result = compiled(*args)
    assert_close(result, fn(*eager_args))
    for got, want in zip(args, eager_args):
        assert_close(got, want)
    with pytest.raises(CompileError, match="cannot run this call: it writes in place into an input that shares"):
        jg.compile(fn, cache=False, fullgraph=True)(*make())


def test_inputs_sharing_memory_that_are_only_read_still_run_compiled():
    compiled = jg.compile(lambda a, b: (a * b).sum(), cache=False, fullgraph=True)
    base = jg.arange(6.0)
    assert_close(compiled(base[:4], base[2:]), (base[:4] * base[2:]).sum())
    assert compiled.programs


def test_template_filler_rebuilds_every_kind_of_container():
    """A compiled function's result is rebuilt by one generated expression per template: slots wrapped
    by index, tuples (empty and of one), lists, dicts, named tuples and constants as they were."""
    from collections import namedtuple

    from jitgrad.compile.result_template import Slot, TupleOf, template_filler
    Pair = namedtuple("Pair", "left right")
    constant = object()
    template = (Slot(2), [Slot(0), (), (Slot(1),)], {"a": Slot(0), 3: None}, TupleOf(Pair, (Slot(1), constant)), 7)
    filled = template_filler(template)(["x", "y", "z"], lambda i, value: (i, value))
    assert filled == ((2, "z"), [(0, "x"), (), ((1, "y"),)], {"a": (0, "x"), 3: None},
                      Pair((1, "y"), constant), 7)
    assert type(filled[3]) is Pair and filled[3].right is constant and type(filled[1]) is list


def _write_then_rebind(w, x):
    with jg.no_grad():
        w.add_(1.0)                # written in place: the trace binds w to the sum
    w.data = x.data * 3.0          # then given other memory: later reads see this value
    return (w * 2.0).sum()


def _rebind(w, x):
    w.data = w.data - x            # the idiom of hand-written updates
    return (w * 2.0).sum()


def _rebind_to_float32(w, x):
    w.data = w.data.float()
    return (w * x).sum()


def _add_one(w, x):
    with jg.no_grad():
        w.add_(x)
    return w.sum()


@pytest.mark.parametrize("fn", [_write_then_rebind, _rebind], ids=["written, then .data set", ".data set"])
def test_data_set_gives_the_input_new_memory_as_eager_mode_does(fn):
    """``w.data = ...`` gives ``w`` new memory: a view of its old memory taken before keeps the old
    values (until 2026-11-28 a compiled call wrote the new value into the old memory). After an
    in-place write of ``w`` it runs eagerly: the write stays in the old memory (until then the
    result and ``w`` took the written value instead of the one set)."""
    import warnings
    compiled = jg.compile(fn, cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            w, x = jg.zeros(3, dtype=jg.float64), jg.arange(3.0, dtype=jg.float64)
            we = w.clone()
            held, held_eager = w.detach(), we.detach()
            assert_close(compiled(w, x), fn(we, x))
            assert_close(w, we)
            assert_close(held, held_eager)


def test_data_set_to_another_dtype_runs_eagerly():
    """A compiled call writes an input back in its own dtype: ``w.data = w.data.float()`` kept w
    float64 (until 2026-11-28, silently)."""
    import warnings
    from jitgrad.compile import CompileWarning
    compiled = jg.compile(_rebind_to_float32, cache=False)
    w, x = jg.ones(3, dtype=jg.float64), jg.ones(3, dtype=jg.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(w, x)
    assert w.dtype == jg.float32
    assert any(issubclass(c.category, CompileWarning) and "sets .data" in str(c.message) for c in caught)


def test_a_write_into_an_expanded_input_raises_as_eagerly():
    """An expanded view is read-only: eager's in-place write raises. Until 2026-11-28 a compiled step
    gave the input new memory instead (traced on it, or on an ordinary tensor first), silently."""
    compiled = jg.compile(_add_one, cache=False)
    x = jg.ones(3, dtype=jg.float64)
    assert_close(compiled(jg.zeros(2, 3, dtype=jg.float64), x), 6.0)
    for _ in range(2):
        w = jg.zeros(1, 3, dtype=jg.float64).expand(2, 3)
        with pytest.raises(RuntimeError, match="read-only"):
            compiled(w, x)
        assert_close(w, np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match="read-only"):
        jg.compile(_add_one, cache=False)(jg.zeros(1, 3, dtype=jg.float64).expand(2, 3), x)


def test_a_write_into_an_input_whose_elements_share_memory_raises_as_eagerly():
    """A writeable stride-0 array from ``from_numpy``: eager refuses the write (as PyTorch does); until
    2026-11-28 a compiled one wrote its own order's values (``x.add_(arange(4)).sum()`` gave 18 where
    eager's memory held 36)."""
    def step(x):
        x.add_(jg.arange(4.0))
        return x.sum() * 1.0
    compiled = jg.compile(step, cache=False)
    assert_close(compiled(jg.zeros(3, 4, dtype=jg.float64)), 18.0)
    for _ in range(2):
        x = jg.from_numpy(np.lib.stride_tricks.as_strided(np.zeros((3, 1)), (3, 4), (8, 0)))
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            compiled(x)
        assert_close(x, np.zeros((3, 4)))


def _grad_set_to_a_value_then_backward(x, w, into_argument):
    g = x if into_argument else x * 0.0 + 1.0
    w.grad = g                    # backward sums into g's memory, as AccumulateGrad does eagerly
    (x * w).sum().backward()
    return g * 1.0


@pytest.mark.parametrize("into_argument", [False, True], ids=["a value of the function", "an argument"])
def test_backward_sums_into_a_grad_set_inside_as_eagerly(into_argument):
    """Until 2026-11-28 the trace summed into a new tensor: ``g`` (and the argument set as ``.grad``)
    kept its old value in the compiled call, silently."""
    compiled = jg.compile(_grad_set_to_a_value_then_backward, cache=False)
    for _ in range(2):
        x, w = jg.tensor(np.array([1.0, 2.0, 3.0])), jg.ones(3, dtype=jg.float64, requires_grad=True)
        xe, we = x.clone(), w.detach().clone().requires_grad_()
        assert_close(compiled(x, w, into_argument), _grad_set_to_a_value_then_backward(xe, we, into_argument))
        assert_close(x, xe)
        assert_close(w.grad, we.grad)
