"""``nll_loss``, its backward and ``cross_entropy_backward``, as the numba CPU backend writes them
(``numba_cpu/statements/losses.py``):
a loop over the rows and their target classes, a target equal to ``ignore_index`` skipped (no loss, no
gradient, not counted by "mean"), any other checked against the classes (``IndexError``, as numba's
kernel raises: outside them it would read or write outside the array)."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ....ops.scalar import Var, exp
from ..arrays import load, store
from ..expressions import ExpressionWriter, Value, arithmetic, compare, convert, negate, select
from ..fused_loops import PARALLEL_ELEMENTS
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


def _row_value(s: Statement, n: str, classes: str) -> Callable[[str], Value]:
    """The gradient at row i's target, ``-grad[i]`` for "none", else one value for every row:
    ``-grad``, divided by the number of targets kept for "mean" (counted here, bounds checked)."""
    grad, w, dtype = s.inputs[0], s.w, s.dtype
    if s.attrs["reduction"] == "none":
        return lambda i: negate(w, load(w, grad, [i], "g"))
    value = negate(w, load(w, grad, ["0"], "g"))
    if s.attrs["reduction"] == "mean":
        count = _counter(s)
        _each_target(s, n, classes, lambda i, t: _increment(s, count))
        value = arithmetic(w, "truediv", value, convert(w, Value(w.load("i64", count, "count"), INT64), dtype))
    return lambda i: value


def nll_loss_backward(s: Statement) -> None:
    out, w, dtype = s.out, s.w, s.dtype
    n, classes = out.sizes
    with w.loop(w.product(out.sizes), "zero") as j:
        w.store(memory_type(dtype), literal(0, dtype), w.element_pointer(dtype, out.pointer, j))
    value = _row_value(s, n, classes)
    _each_target(s, n, classes, lambda i, t: store(w, out, [i, t], value(i)))


def cross_entropy_backward(s: Statement) -> None:
    """Row i: ``0 - exp(y) * v`` everywhere, then ``v - exp(y) * v`` at the target, v the row's value
    (0 where the target is ignored), as numba's loop writes it."""
    target, y, out, w, dtype = s.inputs[1], s.inputs[2], s.out, s.w, s.dtype
    large = math.prod(s.node.meta["shape"]) >= PARALLEL_ELEMENTS
    if s.k.parallel_mode is True or (s.k.parallel_mode is None and large):
        raise NotImplementedError("a parallel cross_entropy_backward")
    n, classes = out.sizes
    value = _row_value(s, n, classes)
    zero = Value(literal(0, dtype), dtype)
    ignore = Value(str(int(s.attrs.get("ignore_index", -100))), INT64)

    def minus_exp_times(first: Value, i: str, k: str, row: Value) -> Value:
        e = ExpressionWriter(w, {"y": load(w, y, [i, k], "y")}).write(exp(Var("y")), dtype, dtype)
        return arithmetic(w, "sub", first, arithmetic(w, "mul", e, row))

    with w.loop(n, "row") as i:
        kept = compare(w, "ne", convert(w, load(w, target, [i], "target"), INT64), ignore)
        row = select(w, kept, value(i), zero)
        with w.loop(classes, "k") as k:
            store(w, out, [i, k], minus_exp_times(zero, i, k, row))
    _each_target(s, n, classes, lambda i, t: store(w, out, [i, t], minus_exp_times(value(i), i, t, value(i))))


STATEMENTS = {"nll_loss": nll_loss, "nll_loss_backward": nll_loss_backward,
              "cross_entropy_backward": cross_entropy_backward}
