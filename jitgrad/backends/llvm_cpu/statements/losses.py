"""``nll_loss`` and its backward, as the numba CPU backend writes them (``numba_cpu/statements/losses.py``):
a loop over the rows and their target classes, a target equal to ``ignore_index`` skipped (no loss, no
gradient, not counted by "mean"), any other checked against the classes (``IndexError``, as numba's
kernel raises: outside them it would read or write outside the array)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..arrays import load, store
from ..expressions import Value, arithmetic, convert, negate
from ..function_writer import literal, memory_type, value_type
from .context import Statement

INT64 = np.dtype(np.int64)


def _each_target(s: Statement, n: str, classes: str, body: Callable[[str, str], None]) -> None:
    """``body(i, t)`` for each row ``i`` whose target ``t`` is not ignored, after its bounds check."""
    w, target = s.w, s.inputs[1]
    ignore = int(s.attrs.get("ignore_index", -100))
    with w.loop(n, "row") as i:
        t = convert(w, load(w, target, [i], "target"), INT64).name
        kept = w.assign("kept", f"icmp ne i64 {t}, {ignore}")
        low = w.assign("low", f"icmp slt i64 {t}, 0")
        high = w.assign("high", f"icmp sge i64 {t}, {classes}")
        outside = w.assign("outside", f"or i1 {low}, {high}")
        bad = w.assign("bad", f"and i1 {kept}, {outside}")
        with w.when(bad, "bad_target"):
            s.k.raise_error("IndexError", "nll_loss: a target is out of bounds for the number of classes")
        with w.when(kept, "kept"):
            body(i, t)


def _counter(s: Statement) -> str:
    w = s.w
    count = w.slot("i64", "count")
    w.store("i64", "0", count)
    return count


def _increment(s: Statement, count: str) -> None:
    w = s.w
    value = w.load("i64", count, "count")
    w.store("i64", w.assign("count", f"add i64 {value}, 1"), count)


def nll_loss(s: Statement) -> None:
    x, out, w, dtype = s.inputs[0], s.out, s.w, s.dtype
    n, classes = x.sizes
    if s.attrs["reduction"] == "none":
        with w.loop(w.product(out.sizes), "zero") as j:
            store(w, out, [j], Value(literal(0, dtype), dtype))
        _each_target(s, n, classes, lambda i, t: store(w, out, [i], negate(w, load(w, x, [i, t], "x"))))
        return
    kind = value_type(dtype)
    total, count = w.slot(kind, "total"), _counter(s)
    w.store(kind, literal(0, dtype), total)

    def add(i: str, t: str) -> None:
        running = Value(w.load(kind, total, "total"), dtype)
        w.store(kind, arithmetic(w, "sub", running, load(w, x, [i, t], "x")).name, total)
        _increment(s, count)
    _each_target(s, n, classes, add)
    result = Value(w.load(kind, total, "total"), dtype)
    if s.attrs["reduction"] == "mean":
        result = arithmetic(w, "truediv", result, convert(w, Value(w.load("i64", count, "count"), INT64), dtype))
    store(w, out, ["0"], result)


def nll_loss_backward(s: Statement) -> None:
    grad, out, w, dtype = s.inputs[0], s.out, s.w, s.dtype
    n, classes = out.sizes
    with w.loop(w.product(out.sizes), "zero") as j:
        w.store(memory_type(dtype), literal(0, dtype), w.element_pointer(dtype, out.pointer, j))
    if s.attrs["reduction"] == "none":
        _each_target(s, n, classes, lambda i, t: store(w, out, [i, t], negate(w, load(w, grad, [i], "g"))))
        return
    value = negate(w, load(w, grad, ["0"], "g"))
    if s.attrs["reduction"] == "mean":
        count = _counter(s)
        _each_target(s, n, classes, lambda i, t: _increment(s, count))
        value = arithmetic(w, "truediv", value, convert(w, Value(w.load("i64", count, "count"), INT64), dtype))
    _each_target(s, n, classes, lambda i, t: store(w, out, [i, t], value))


STATEMENTS = {"nll_loss": nll_loss, "nll_loss_backward": nll_loss_backward}
