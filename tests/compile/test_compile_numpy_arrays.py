"""Numpy arrays a compiled function reads, as arguments or from outside: whatever the trace computed from
their values (through a factory, or in numpy where no tracer sees) is baked into the program, so each is
guarded by its values, and a changed element recompiles, in this process and through the warm-start
index. Before these guards a changed argument array ran the program of the old values, silently."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from compile_helpers import assert_close
from jitgrad.compile import CompileWarning, guards

X = np.array([1.0, 2.0, 3.0])


def through_factory(x, a):
    return (x * jg.tensor(a)).sum()


def through_numpy(x, a):
    return (x * float(a[1]) + jg.tensor(a * 2.0)).sum()


@pytest.mark.parametrize("fn", [through_factory, through_numpy], ids=["factory", "numpy"])


def test_an_argument_array_changed_in_place_or_replaced_gives_its_new_values(fn):
    compiled = jg.compile(fn, cache=False)
    x, a = jg.tensor(X), np.ones(3)
    assert_close(compiled(x, a), fn(x, a))
    assert_close(compiled(x, a), fn(x, a))
    assert compiled.recompiles == 0           # the same values: the same program
    a[1] = 4.0
    assert_close(compiled(x, a), fn(x, a))
    assert "argument 'a': the values of a numpy array (float64[3]) changed" in compiled.log[-1]
    assert "jg.from_numpy" in compiled.log[-1]
    other = np.full(3, 2.0)
    assert_close(compiled(x, other), fn(x, other))


def test_an_array_read_from_outside_through_numpy_gives_its_new_values():
    table = np.ones(3)

    def f(x):
        return (x * float(table[1]) + jg.tensor(table * 2.0)).sum()
    compiled = jg.compile(f, cache=False)
    x = jg.tensor(X)
    assert_close(compiled(x), f(x))
    table[1] = 5.0
    assert_close(compiled(x), f(x))
    assert "the values of a numpy array (float64[3]) changed" in compiled.log[-1]


def test_an_array_holding_nan_is_the_same_values_at_every_call():
    a = np.array([1.0, np.nan, 3.0])
    compiled = jg.compile(through_numpy, cache=False)
    x = jg.tensor(X)
    for _ in range(3):
        compiled(x, a)
    assert compiled.recompiles == 0


def test_an_array_too_large_to_guard_or_of_objects_runs_eagerly_and_says_what_to_do(monkeypatch):
    monkeypatch.setattr(guards, "ARRAY_GUARD_BYTES", 16)
    x = jg.tensor(X)
    compiled = jg.compile(through_numpy, cache=False)
    with pytest.warns(CompileWarning, match=r"argument 'a', a numpy array \(float64\[3\]\) that has 0.0 MiB, more "
                                            r"than the [0-9.e-]+ MiB guarded by value.*jg.from_numpy"):
        result = compiled(x, np.ones(3))
    assert_close(result, through_numpy(x, np.ones(3)))
    objects = np.array([1.0, 2.0, 3.0], dtype=object)

    def f(x):
        return (x * float(objects[1])).sum()
    compiled = jg.compile(f, cache=False)
    with pytest.warns(CompileWarning, match=r"a numpy array \(object\[3\]\) that holds Python objects"):
        compiled(x)
    objects[1] = 7.0
    assert_close(compiled(x), f(x))


def test_the_warm_start_index_keys_an_argument_array_by_its_values(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("JITGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "llvm_cpu")   # the interpreter keeps no index
    monkeypatch.setenv("JITGRAD_LOG", "cache")
    x = jg.tensor(X)
    first, second = np.ones(3), np.array([1.0, 4.0, 1.0])
    assert_close(jg.compile(through_factory)(x, first), through_factory(x, first))
    assert "stored" in capfd.readouterr().err
    # a compiled function new to the process, as in a later process: the index entry of ``first`` must
    # not serve ``second``
    assert_close(jg.compile(through_factory)(x, second), through_factory(x, second))
    assert_close(jg.compile(through_factory)(x, first), through_factory(x, first))
    assert "used" in capfd.readouterr().err   # the first array's entry, found again
