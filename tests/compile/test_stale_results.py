"""Silently stale results: what a trace read that neither its in-process key nor the warm-start index's
key held, so that a later call (or a later process) ran a program traced for something else. Each test
changes one thing between two calls and compares with the same code run eagerly.

What was probed, and found nothing, is listed in docs/compile.md ("The warm-start index"); these
tests run in one process, where the index is consulted by every new ``jitgrad.compile`` object, as in
a new process (tests/compile/test_warm_start.py runs two).
"""
from __future__ import annotations

import math
import types
import warnings

import numpy as np
import pytest

import jitgrad as jg

BACKEND = ""  # read by conftest.compile_backend: the default CPU lowering, which the index serves


@pytest.fixture
def cache(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("JITGRAD_LOG", "cache")

    def log() -> str:
        return capfd.readouterr().err
    return log


@pytest.mark.parametrize("reads", ["x.is_contiguous()", "x.stride()[0] == 2", "x.storage_offset() == 0",
                                   "x.data_ptr() == base.data_ptr()"])
def test_a_branch_on_a_tensors_layout_runs_eagerly(reads, cache):
    """A tensor's key holds its shape, not its strides, offset or address: a branch on them took the
    first call's branch for a transposed or sliced input, in the process and from the index."""
    namespace = {}
    exec(f"def step(x, base):\n    return x * 2.0 if {reads} else x * 3.0", namespace)
    step = namespace["step"]
    base = jg.tensor(np.arange(8, dtype=np.float32))
    calls = [(base[:4].reshape(2, 2), base), (base[4:].reshape(2, 2).t(), base)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # "running step eagerly": what this asks for
        first = jg.compile(step)
        for x, b in calls:
            want = step(x, b).numpy()
            np.testing.assert_array_equal(first(x, b).numpy(), want)
            np.testing.assert_array_equal(jg.compile(step)(x, b).numpy(), want)


def test_a_set_is_keyed_by_the_order_a_loop_visits_it(cache):
    """Equal sets can be visited in other orders (``{1, 9}`` and ``{9, 1}`` here; a set of strings in
    another process, whose hash seed differs), and a trace bakes the order in. The index described sets
    (a global one, a constant of the code) sorted and the in-process guard compared them as sets: a
    program traced for one order served the other."""
    one, other = {1, 9}, {9, 1}
    assert list(one) != list(other)
    namespace = {"jg": jg, "KEYS": one}
    exec("def step(x):\n    return jg.stack([x * k for k in KEYS])\n"
         "def literal(x):\n    return jg.stack([x * k for k in {1, 9}])", namespace)
    x = jg.ones(1)
    first = jg.compile(namespace["step"])
    assert first(x).flatten().tolist() == list(one)
    namespace["KEYS"] = other
    assert jg.compile(namespace["step"])(x).flatten().tolist() == list(other)   # not the stored entry
    assert first(x).flatten().tolist() == list(other)   # the in-process guard
    literal = namespace["literal"]
    constants = literal.__code__.co_consts
    for items in (one, other):   # the same code, its constant frozenset in either order
        code = literal.__code__.replace(co_consts=tuple(
            frozenset(items) if type(c) is frozenset else c for c in constants))
        literal.__code__ = code
        assert jg.compile(literal)(x).flatten().tolist() == list(frozenset(items)) == literal(x).flatten().tolist()


def test_a_module_two_functions_read_is_described_by_what_each_names(cache, tmp_path):
    """``step`` reads ``config.A`` and ``helper`` ``config.B``: the walk met ``config`` first from one of
    them, and the attribute only the other names was neither guarded in the process nor in the index's
    key: changed, it ran stale. Each attribute is changed in turn (the walk's order is the names')."""
    config = types.ModuleType("warm_config")
    config.__file__ = str(tmp_path / "warm_config.py")   # the user's module, not a library's
    config.A, config.B = 2.0, 3.0
    namespace = {"config": config}
    exec("def helper(x):\n    return x * config.B\ndef step(x):\n    return helper(x) + config.A", namespace)
    x = jg.tensor(np.ones(2, np.float32))
    first = jg.compile(namespace["step"])
    assert first(x).tolist() == [5.0, 5.0]
    for name, value, want in [("A", 10.0, 13.0), ("B", 4.0, 14.0)]:
        setattr(config, name, value)
        cache()
        assert jg.compile(namespace["step"])(x).tolist() == [want, want], name   # a new key, not the entry
        assert "no entry for this code" in cache(), name
        assert first(x).tolist() == [want, want], name   # the in-process guard


NESTED_TRY = """
def step(x):
    try:
        try:
            y = x * 2.0
            y = y * OPTS["b"]
        except KeyError:
            y = x * 3.0
    except KeyError:
        y = x * 5.0
    return y
"""


def test_code_that_differs_only_in_what_its_except_covers_is_another_key(cache):
    """A statement moved from a ``try`` body into its ``else`` leaves the bytecode as it was; only the
    exception table says the inner ``except`` no longer covers it. The index took it for the same code."""
    moved = NESTED_TRY.replace('            y = y * OPTS["b"]\n        except KeyError:\n            y = x * 3.0\n',
                               '        except KeyError:\n            y = x * 3.0\n        else:\n'
                               '            y = y * OPTS["b"]\n')
    steps = []
    for source in (NESTED_TRY, moved):
        namespace = {"OPTS": {}}
        exec(source, namespace)
        steps.append(namespace["step"])
    assert steps[0].__code__.co_code == steps[1].__code__.co_code
    x = jg.ones(1)
    for step, want in zip(steps, (3.0, 5.0)):
        assert jg.compile(step)(x).tolist() == step(x).tolist() == [want]


def test_a_set_of_tuples_is_guarded_by_its_items():
    """A set of tuples (of numbers) read from outside had a snapshot but no guard: an item added
    between calls ran the old program."""
    namespace = {"PAIRS": {(1.0, 2.0)}}
    exec("def step(x):\n    for a, b in sorted(PAIRS):\n        x = x * a + b\n    return x", namespace)
    compiled, x = jg.compile(namespace["step"], cache=False), jg.ones(2)
    assert compiled(x).tolist() == [3.0, 3.0]
    namespace["PAIRS"].add((3.0, 4.0))
    assert compiled(x).tolist() == namespace["step"](x).tolist() == [13.0, 13.0]

INHERITED = """
class Base:
    scale = 2.0
    def f(self, x):
        return x * 2.0
class Child(Base):
    pass
obj = Child()
def step(x):
    return obj.f(x) * obj.scale
"""


@pytest.mark.parametrize("change, want", [
    ("Base.scale = 5.0", 10.0), ("Base.f = lambda self, x: x * 3.0", 6.0), ("Child.scale = 7.0", 14.0)])
def test_what_an_object_inherits_is_guarded(change, want):
    """The walk entered an object's class but not the user's base classes, and guarded no class's
    set of attributes: a changed base attribute, or one its subclass now shadows, ran stale."""
    namespace = {"__name__": "user_module"}
    exec(INHERITED, namespace)
    compiled, x = jg.compile(namespace["step"], cache=False), jg.ones(1)
    assert compiled(x).tolist() == [4.0]
    exec(change, namespace)
    assert compiled(x).tolist() == namespace["step"](x).tolist() == [want]

SPECIAL_METHODS = """
SCALE = 2.0
class Scaler:
    def __mul__(self, x):
        return x * SCALE
    def __getattr__(self, name):
        return SCALE
s = Scaler()
"""


@pytest.mark.parametrize("body", ["s * x", "x * s.anything"])
def test_a_global_a_special_method_reads_is_guarded(body):
    """``__mul__`` and ``__getattr__`` of the user's class run its code, but the walk skipped every
    ``__dunder__`` entry of a class: a global they read went unguarded."""
    namespace = {"__name__": "user_module"}
    exec(f"{SPECIAL_METHODS}def step(x):\n    return {body}", namespace)
    compiled, x = jg.compile(namespace["step"], cache=False), jg.ones(1)
    assert compiled(x).tolist() == [2.0]
    namespace["SCALE"] = 5.0
    assert compiled(x).tolist() == [5.0]

@pytest.mark.parametrize("before, after, uses", [
    ("jg.tanh", "jg.sigmoid", "VALUE(x)"),                                # a library's function
    ("np.tanh", "np.sin", "x * float(VALUE(0.5))"),                       # a ufunc (a library's object)
    ("math.tanh", "math.sin", "x * VALUE(0.5)"),                          # a builtin function
    ("jg.float32", "jg.float64", "x.to(VALUE) * 2"),                      # a library's object
    ("np.float32", "np.int32", "x * float(np.array(1.5, dtype=VALUE))"),  # a library's class
])
def test_a_global_rebound_to_another_librarys_name_retraces(before, after, uses):
    """Globals holding a library's function, class or object were not entered by the free-variable
    walk and so not guarded at all: rebound, the old program ran, silently."""
    namespace = {"jg": jg, "np": np, "math": math}
    exec(f"VALUE = {before}\ndef step(x):\n    return {uses}", namespace)
    x = jg.tensor([-1.0, 2.0])
    compiled = jg.compile(namespace["step"], cache=False)
    np.testing.assert_allclose(compiled(x).numpy(), namespace["step"](x).numpy())
    exec(f"VALUE = {after}", namespace)
    want, got = namespace["step"](x), compiled(x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_a_compiled_function_the_function_calls_is_described_by_the_function_it_wraps(cache):
    """``inner = jg.compile(...)`` read as a global was described by its name alone: an edit of the
    function it wraps, or of a global that function reads, found the entry stored before."""
    source = "S = 2.0\n@jg.compile\ndef inner(x):\n    return x * S\ndef step(x):\n    return inner(x) + 1"
    x = jg.ones(1)
    for edited, want in [(source, 3.0), (source.replace("S = 2.0", "S = 6.0"), 7.0),
                         (source.replace("x * S", "x * S * 4"), 9.0)]:
        namespace = {"jg": jg}
        exec(edited, namespace)
        assert jg.compile(namespace["step"])(x).tolist() == namespace["step"](x).tolist() == [want], edited


@pytest.mark.parametrize("reads", ['helper.__globals__["X"]', 'config.__dict__["X"]', 'config.__getattribute__("X")',
                                   'float("{0.X}".format(config))'])
def test_a_value_read_by_a_name_in_a_string_is_guarded_and_not_indexed(reads, cache, tmp_path):
    """Code that reads a global or a module's attribute by a string names no attribute the walks
    follow: neither the in-process guards nor the index's key held it, and a change ran stale."""
    config = types.ModuleType("stale_config")
    config.__file__ = str(tmp_path / "stale_config.py")
    config.X = 2.0
    namespace = {"config": config, "X": 2.0}
    exec(f"def helper(x):\n    return x\ndef step(x):\n    return x * {reads}", namespace)
    x = jg.ones(1)
    first = jg.compile(namespace["step"])
    assert first(x).tolist() == [2.0]
    config.X = namespace["X"] = 5.0
    assert jg.compile(namespace["step"])(x).tolist() == [5.0]
    assert first(x).tolist() == [5.0]


@pytest.mark.parametrize("before, after", [
    ({0.0: 1.0}, {-0.0: 1.0}), ({1: 1.0}, {1.0: 1.0}), ({1: 1.0}, {True: 1.0}),   # dict keys, equal as keys
    (np.float64(0.0), np.float64(-0.0)), (np.float32(0.0), np.float32(-0.0)), (0j, complex(0.0, -0.0)),
])
def test_arguments_equal_to_python_but_not_to_the_code_are_other_keys(before, after):
    """A dict keyed by ``1`` then by ``True`` (or ``1.0``, or ``0.0`` then ``-0.0``), a numpy scalar or a
    complex -0.0 where 0.0 was: equal, so the in-process key ran the program traced for the other."""
    def step(x, d):
        if isinstance(d, dict):
            (key, value), = d.items()
            return x * value * {"int": 2.0, "float": 3.0, "bool": 5.0}[type(key).__name__] + math.copysign(1.0, key)
        if isinstance(d, complex):
            return x * math.copysign(1.0, d.imag)
        return x / d
    x = jg.tensor([1.0, -2.0])
    compiled = jg.compile(step, cache=False)
    with np.errstate(divide="ignore"):
        for d in (before, after):
            np.testing.assert_array_equal(compiled(x, d).numpy(), step(x, d).numpy())


def test_a_branch_on_a_tensors_class_follows_the_argument():
    """Until 2026-11-28 the trace lent a Parameter as a plain traced tensor: ``isinstance(x,
    nn.Parameter)`` was False inside, even at the first call, and the key did not hold the class."""
    def step(x):
        return x * (2.0 if isinstance(x, jg.nn.Parameter) else 3.0)
    compiled = jg.compile(step, cache=False)
    for x in (jg.tensor([1.0, 2.0], requires_grad=True), jg.nn.Parameter(jg.tensor([1.0, 2.0]))):
        np.testing.assert_array_equal(compiled(x).detach().numpy(), step(x).detach().numpy())


def test_an_attribute_set_on_the_compiled_function_is_part_of_the_index_key(cache):
    """The fingerprint described a compiled function by the function it wraps, not by the attributes set
    on it (``f.scale`` read inside ``f``): a new ``jitgrad.compile`` object with another ``scale`` found
    the stored entry and ran the old value until 2026-11-29."""
    namespace = {}
    exec("def scaled(x):\n    return x * scaled.scale", namespace)
    plain, x = namespace["scaled"], jg.tensor(np.ones(2, np.float32))
    for scale in (2.0, 3.0):
        compiled = namespace["scaled"] = jg.compile(plain)
        compiled.scale = scale
        assert compiled(x).tolist() == [scale, scale]
