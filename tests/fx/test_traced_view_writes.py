"""An in-place op on a view of a value the traced function made (``c = a * 1; c[:, :3].mul_(2)``) must
change that value in the graph, as it changes it in eager mode, with or without gradients.

With gradients recorded, ``ops/inplace.apply_inplace`` takes ``_apply_through_view`` (PyTorch's
CopySlices: the root's new value is a ``copy_slices`` node, which the tracer sees through
``note_alias``). Without them it writes the view's memory only and tells the tracer that the *view*
holds the result, so the root's node keeps its old value: every backend, the Interpreter included,
computes the program as if the write never happened (``jitgrad.compile`` of such a step returns
wrong values, silently). Found by the 2026-11-28 hunt for wrong results in the CPU code generators;
the fix belongs to ``jitgrad/ops/inplace.py`` (take ``_apply_through_view`` when ``observed()`` too,
one condition: with it every case here passes), outside the hunt's area."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad import fx

WRITES = {
    "fill_ of a strided slice": lambda c: c[1:3, ::2].fill_(0.5),
    "zero_ of a row": lambda c: c[1].zero_(),
    "mul_ of columns": lambda c: c[:, :3].mul_(2.0),
    "+= of columns": lambda c: c[:, :3].__iadd__(1.0),
    "clamp_ of rows": lambda c: c[1:].clamp_(0, 5),
    "zero_ through a transpose": lambda c: c.t()[0].zero_(),
    "copy_ of another row": lambda c: c[0].copy_(c[1]),
    "mul_ through a reshape": lambda c: c.reshape(24)[:5].mul_(0),
}


def _traced_and_eager(write, requires_grad):
    def program(a):
        c = a * 1
        write(c)
        return c + 0
    a = np.arange(24.0).reshape(4, 6)
    graph = fx.trace(program, jg.tensor(a, requires_grad=requires_grad)).graph
    traced = fx.Interpreter(graph).run(jg.tensor(a, requires_grad=requires_grad))
    return traced.detach().numpy(), program(jg.tensor(a, requires_grad=requires_grad)).detach().numpy()


@pytest.mark.parametrize("name", WRITES)
def test_a_write_through_a_view_with_gradients_changes_the_root(name):
    traced, eager = _traced_and_eager(WRITES[name], requires_grad=True)
    np.testing.assert_array_equal(traced, eager)


@pytest.mark.parametrize("name", WRITES)
def test_a_write_through_a_view_without_gradients_changes_the_root(name):
    """Until 2026-11-28 ``apply_inplace`` wrote such a view's memory only: the tracer kept the root's
    old node, and the program lost the write (every backend, the interpreter too)."""
    traced, eager = _traced_and_eager(WRITES[name], requires_grad=False)
    np.testing.assert_array_equal(traced, eager)
