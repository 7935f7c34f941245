"""The eager autograd core against PyTorch's documented behaviour: hooks' results, ``autograd.grad``'s
arguments, custom Functions and the error messages users search for. Each test runs without torch
(the expected behaviour is written out), and where torch is installed the same program runs on it too,
so a test that drifts from PyTorch fails. Sizes are tiny and nothing here compiles a kernel."""
from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np
import pytest

import jitgrad as jg

try:
    import torch
except ImportError:  # the comparisons with PyTorch are skipped, the written-out expectations still run
    torch = None

LIBRARIES = [jg] if torch is None else [jg, torch]


def leaf(lib: Any, *values: float) -> Any:
    return lib.tensor(values, dtype=lib.float64, requires_grad=True)


def each_library(test: Callable) -> Callable:
    """Runs ``test(lib)`` on jitgrad, and on torch where it is installed."""
    return pytest.mark.parametrize("lib", LIBRARIES, ids=lambda lib: lib.__name__)(test)


def values(tensor: Any) -> list | None:
    return None if tensor is None else tensor.detach().numpy().tolist()


class TestNodeHookResults:
    """A node's pre- and post-hooks may return replacements, checked as PyTorch checks them: before
    2026-11-28 a short tuple from a pre-hook made every gradient None, and numbers went into the
    formulas, silently."""

    @each_library
    @pytest.mark.parametrize("kind", ["pre", "post"])
    @pytest.mark.parametrize("returned, error, message", [
        (lambda grads: list(grads), TypeError, "expected tuple, but hook returned 'list'"),
        (lambda grads: 3, TypeError, "expected tuple, but hook returned 'int'"),
        (lambda grads: (), RuntimeError, r"hook '<lambda>' has returned an incorrect number of values \(got 0, "
                                         r"but expected \d\)"),
        (lambda grads: (3,) * len(grads), TypeError, "expected Variable, but hook returned 'int'"),
        (lambda grads: (grads[0][:1],) + grads[1:], RuntimeError, "hook '<lambda>' has changed the size of value"),
    ], ids=["list", "int", "empty", "numbers", "shape"])
    def test_a_wrong_result_is_an_error(self, lib, kind, returned, error, message):
        x, w = leaf(lib, 1.0, 2.0), leaf(lib, 3.0, 4.0)
        y = x * w
        if kind == "pre":
            y.grad_fn.register_prehook(lambda grads: returned(grads))
        else:
            y.grad_fn.register_hook(lambda grads, _: returned(grads))
        with pytest.raises(error, match=message):
            y.sum().backward()

    @each_library
    def test_a_post_hook_cannot_give_a_gradient_where_there_was_none(self, lib):
        x = leaf(lib, 1.0, 2.0)
        y = x * 2  # the number's slot has no gradient
        y.grad_fn.register_hook(lambda grads, _: (grads[0], grads[0]))
        with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None value"):
            y.sum().backward()

    @each_library
    def test_none_entries_drop_gradients_and_tensors_replace_them(self, lib):
        x, w = leaf(lib, 1.0, 2.0), leaf(lib, 3.0, 4.0)
        y = x * w
        y.grad_fn.register_prehook(lambda grads: (grads[0] * 10,))
        y.grad_fn.register_hook(lambda grads, _: (None, grads[1] + 1))
        y.sum().backward()
        assert x.grad is None and values(w.grad) == [11.0, 21.0]


@each_library
def test_a_multi_grad_hook_gets_a_list(lib):
    a, b = leaf(lib, 1.0, 2.0), leaf(lib, 3.0, 4.0)
    calls = []
    lib.autograd.graph.register_multi_grad_hook((a, b), calls.append)
    (a * 2).sum().backward()
    assert len(calls) == 1 and type(calls[0]) is list
    assert values(calls[0][0]) == [2.0, 2.0] and calls[0][1] is None
