"""What a compiled function reads outside the user's own code (a library's module attributes, the
process's environment, a library's mutable objects) is guarded: a change between two calls recompiles,
and each call matches the same code run eagerly."""
from __future__ import annotations

import array
import os
import threading
import types

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn.functional as F
from jitgrad.compile import CompileWarning


def relu_of(x):
    return F.relu(x) * 2.0


def test_a_library_function_patched_between_calls_recompiles(monkeypatch):
    """``F.relu = mine`` (a test's monkeypatch, a user's replacement) between calls: the program traced
    with the old function ran, silently, until 2026-11-29."""
    x = jg.tensor([-1.0, 0.5, 2.0])
    compiled = jg.compile(relu_of, cache=False)
    np.testing.assert_array_equal(compiled(x).numpy(), relu_of(x).numpy())
    monkeypatch.setattr(F, "relu", jg.sigmoid)
    np.testing.assert_array_equal(compiled(x).numpy(), relu_of(x).numpy())
    assert "global 'F.relu'" in compiled.log[-1]


def scaled_by_environment(x):
    return x * float(os.environ.get("JITGRAD_TEST_SCALE", "1")) + float(os.getenv("JITGRAD_TEST_SHIFT", "0"))


def test_an_environment_variable_changed_between_calls_recompiles(monkeypatch):
    """The trace bakes what it reads from ``os.environ`` into the graph: a changed variable ran the old
    value, silently, until 2026-11-29."""
    x = jg.tensor([1.0, 2.0])
    monkeypatch.setenv("JITGRAD_TEST_SCALE", "2")
    compiled = jg.compile(scaled_by_environment, cache=False)
    for name, value in [(None, None), ("JITGRAD_TEST_SCALE", "3"), ("JITGRAD_TEST_SHIFT", "1")]:
        if name:
            monkeypatch.setenv(name, value)
        np.testing.assert_array_equal(compiled(x).numpy(), scaled_by_environment(x).numpy())
    assert "environment variables changed: JITGRAD_TEST_SHIFT" in compiled.log[-1]
    assert len(compiled.programs) == 3


KEYED = {1: 2.0}
ITEMS = {1, 2}


def branch_on_key_types(x):
    ints = type(next(iter(KEYED))) is int and all(type(v) is int for v in ITEMS)
    return x * (3.0 if ints else 4.0) / next(iter(KEYED))


def rekey(container, key):
    container.clear()
    container.update({key: 2.0} if isinstance(container, dict) else {key, 2})


def test_dict_keys_and_set_items_equal_but_of_another_type_recompile(monkeypatch):
    """``1``, ``1.0`` and ``True`` (and ``0.0``, ``-0.0``) are one key to a dict but not to the code
    reading it: a global dict rekeyed in place by ``1.0``, or a set holding it, ran the program traced
    for ``1`` until 2026-11-29 (arguments were fixed the day before)."""
    x = jg.tensor([1.0, 2.0])
    compiled = jg.compile(branch_on_key_types, cache=False)
    try:
        for container, key in [(None, None), (ITEMS, 1.0), (KEYED, 1.0), (KEYED, 0.0), (KEYED, -0.0)]:
            if container is not None:
                rekey(container, key)
            np.testing.assert_array_equal(compiled(x).numpy(), branch_on_key_types(x).numpy())
    finally:
        rekey(KEYED, 1)
        rekey(ITEMS, 1)
    assert "global 'KEYED': value was keys [0.0], now keys [-0.0]" in compiled.log[-1]


SETTINGS = threading.local()
TABLE = array.array("d", [2.0])


def scaled_by_library_objects(x):
    return x * SETTINGS.scale * TABLE[0]


def test_values_kept_in_a_thread_local_or_an_array_array_are_guarded():
    """A ``threading.local()`` (per-thread settings) and an ``array.array`` are a library's objects, which
    the walk guarded by identity alone: a value set in them between calls ran the old program until
    2026-11-29."""
    x = jg.tensor([1.0, 2.0])
    SETTINGS.scale = 2.0
    compiled = jg.compile(scaled_by_library_objects, cache=False)
    for change in [lambda: None, lambda: setattr(SETTINGS, "scale", 3.0), lambda: TABLE.__setitem__(0, 5.0)]:
        change()
        np.testing.assert_array_equal(compiled(x).numpy(), scaled_by_library_objects(x).numpy())
    assert "global 'TABLE': value was array('d', [2.0]), now array('d', [5.0])" in compiled.log[-1]


def test_a_function_moving_an_iterator_it_reaches_runs_eagerly():
    """``lr = next(SCHEDULE)``: both traces read 0.1 and agreed, so the program ran 0.1 at every call and
    never moved the iterator (until 2026-11-29, silently). The function now runs eagerly, and is not
    traced at all: the traces no longer consume two values."""
    x = jg.tensor([1.0, 2.0])
    eager_schedule, compiled_schedule = iter([0.5] * 3 + [0.25] * 2), iter([0.5] * 3 + [0.25] * 2)
    namespace = {}
    exec("def step(x):\n    return x * next(SCHEDULE)", namespace)
    eager = types.FunctionType(namespace["step"].__code__, {"SCHEDULE": eager_schedule})
    compiled = jg.compile(types.FunctionType(namespace["step"].__code__, {"SCHEDULE": compiled_schedule}),
                          cache=False)
    with pytest.warns(CompileWarning, match="whose position no guard sees"):
        results = [compiled(x).tolist() for _ in range(5)]
    assert results == [eager(x).tolist() for _ in range(5)]
    take = iter([0.5] * 3 + [0.25] * 2).__next__   # the same through its bound ``__next__``
    with pytest.warns(CompileWarning, match="whose position no guard sees"):
        assert [jg.compile(lambda x: x * take(), cache=False)(x).tolist() for _ in range(5)] == results


SETTINGS_TABLE = {"scale": 2.0}


class Settings:
    """A config object whose ``__getattr__`` raises ``KeyError`` for names it does not hold."""

    __slots__ = ("unset",)

    def __getattr__(self, name):
        return SETTINGS_TABLE[name]


def test_an_argument_whose_getattr_raises_key_error_is_walked_and_guarded():
    """The walk asked such an object for ``__wrapped__`` and an unset slot, and its ``KeyError`` came out of
    the call until 2026-11-29, where eager mode never asks for either."""
    x, settings = jg.tensor([1.0, 2.0]), Settings()
    compiled = jg.compile(lambda x, s: x * s.scale, cache=False)
    for scale in (2.0, 3.0):
        SETTINGS_TABLE["scale"] = scale
        assert compiled(x, settings).tolist() == [scale, 2 * scale]


def test_a_user_modules_attribute_made_by_its_getattr_is_guarded(tmp_path):
    """A module's ``__getattr__`` (PEP 562) makes ``config.scale`` on each read; the walk found no
    ``scale`` in the module's dict and guarded nothing, so a changed value ran the old program until
    2026-11-29."""
    config = types.ModuleType("computed_config")
    config.__file__ = str(tmp_path / "computed_config.py")   # the user's module, not a library's
    exec("TABLE = {'scale': 2.0}\ndef __getattr__(name):\n    return TABLE[name]\n", vars(config))
    namespace = {"config": config}
    exec("def step(x):\n    return x * config.scale", namespace)
    step, x = namespace["step"], jg.tensor([1.0, 2.0])
    compiled = jg.compile(step, cache=False)
    for scale in (2.0, 5.0):
        config.TABLE["scale"] = scale
        assert compiled(x).tolist() == step(x).tolist() == [scale, 2 * scale]


SCALES = {np.float64(1.5), 2}


class Half:
    def __float__(self):
        return 0.5


def sum_of_scales(x):
    return x * sum(float(s) for s in SCALES)


def test_a_set_holding_numpy_scalars_is_guarded_by_its_items():
    """A set with a numpy scalar had no guard (only sets of plain values had one): an item discarded ran
    the old program, silently, until 2026-11-29; and comparing such items with a typed key raised
    ``ValueError`` (a numpy scalar broadcasts against a tuple). A set of other objects runs eagerly."""
    x = jg.tensor([1.0, 2.0])
    compiled = jg.compile(sum_of_scales, cache=False)
    try:
        for change in [lambda: None, lambda: SCALES.discard(2), lambda: SCALES.add(np.float32(0.5)),
                       lambda: SCALES.discard(np.float64(1.5))]:
            change()
            assert compiled(x).tolist() == sum_of_scales(x).tolist()
        SCALES.add(Half())
        with pytest.warns(CompileWarning, match="a set holding Half objects"):
            assert compiled(x).tolist() == sum_of_scales(x).tolist()
    finally:
        SCALES.clear()
        SCALES.update({np.float64(1.5), 2})


def test_an_attribute_set_on_the_compiled_function_itself_is_guarded():
    """``f.scale``, read inside ``f`` where the global ``f`` is the compiled function: its attributes were
    not walked (only the function it wraps), so ``f.scale = 3.0`` between calls ran the old program until
    2026-11-29. Its own state (``log``, ``programs``) is not guarded: ``x.log()`` names ``log`` too."""
    namespace = {}
    exec("def scaled(x):\n    return x * scaled.scale + 0.0 * x.log()", namespace)
    compiled = namespace["scaled"] = jg.compile(namespace["scaled"], cache=False)
    x = jg.tensor([1.0, 2.0])
    for scale in (2.0, 3.0):
        compiled.scale = scale
        assert compiled(x).tolist() == [scale, 2 * scale]
    assert len(compiled.programs) == 2 and "scaled.scale" in compiled.log[-1]
