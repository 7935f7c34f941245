"""``softmax`` and ``log_softmax``, as the numba CPU backend writes a small one
(``numba_cpu/statements/activations.py``, one running value per row): the row's max, the exps written
into the output, their sum, then the output scaled or overwritten with ``x - max - log(sum)``. Over
the last dimension the max starts from -inf; over another from the row's first element, as numba's
two loops do (they differ where a row starts with NaN). Their backwards as numba writes a small one: the
row's sum, then its gradient. A large (parallel) one of either goes to numba."""
from __future__ import annotations

import math

from ....ops.scalar import Var, exp, log
from ..arrays import load, store
from ..expressions import ExpressionWriter, Value, arithmetic, compare, convert, select
from ..function_writer import literal, value_type
from ..fused_loops import PARALLEL_ELEMENTS
from .context import Statement


def softmax(s: Statement, log_of: bool = False) -> None:
    shape = s.input_shape()
    if not shape:
        raise NotImplementedError("a softmax of a 0-d tensor")
    dim = s.attrs["dim"] % len(shape)
    if s.k.parallel_mode is True or (s.k.parallel_mode is None and math.prod(shape) >= PARALLEL_ELEMENTS):
        raise NotImplementedError("a parallel softmax")
    x, out, w, dtype = s.inputs[0], s.out, s.w, s.dtype
    kind = value_type(dtype)
    others = [d for d in range(len(shape)) if d != dim]
    n = x.sizes[dim]
    last = dim == len(shape) - 1

    def at(index: dict[int, str], k: str) -> list[str]:
        return [k if d == dim else index[d] for d in range(len(shape))]

    def rows(depth: int, index: dict[int, str]) -> None:
        if depth < len(others):
            with w.loop(x.sizes[others[depth]], f"row{depth}") as i:
                rows(depth + 1, {**index, others[depth]: i})
            return
        if last:
            row(index)
            return
        with w.when(w.assign("filled", f"icmp sgt i64 {n}, 0"), "filled"):  # an empty row has no first element
            row(index)

    def row(index: dict[int, str]) -> None:
        peak_slot, total_slot = w.slot(kind, "peak"), w.slot(kind, "total")
        w.store(kind, literal(float("-inf"), dtype) if last else load(w, x, at(index, "0"), "x").name, peak_slot)
        with w.loop(n, "k", "0" if last else "1") as k:
            element = load(w, x, at(index, k), "x")
            peak = Value(w.load(kind, peak_slot, "peak"), dtype)
            w.store(kind, select(w, compare(w, "gt", element, peak), element, peak).name, peak_slot)
        peak = Value(w.load(kind, peak_slot, "peak"), dtype)
        with w.loop(n, "k") as k:
            shifted = arithmetic(w, "sub", load(w, x, at(index, k), "x"), peak)
            store(w, out, at(index, k), ExpressionWriter(w, {"v": shifted}).write(exp(Var("v")), dtype, dtype))
        w.store(kind, literal(0.0, dtype), total_slot)
        with w.loop(n, "k") as k:
            total = Value(w.load(kind, total_slot, "total"), dtype)
            w.store(kind, arithmetic(w, "add", total, load(w, out, at(index, k), "e")).name, total_slot)
        total = Value(w.load(kind, total_slot, "total"), dtype)
        if log_of:
            logged = ExpressionWriter(w, {"t": total}).write(log(Var("t")), dtype, dtype)
            with w.loop(n, "k") as k:
                shifted = arithmetic(w, "sub", load(w, x, at(index, k), "x"), peak)
                store(w, out, at(index, k), arithmetic(w, "sub", shifted, logged))
        else:
            scale = arithmetic(w, "truediv", Value(literal(1.0, dtype), dtype), total)
            with w.loop(n, "k") as k:
                store(w, out, at(index, k), arithmetic(w, "mul", load(w, out, at(index, k), "e"), scale))

    rows(0, {})


def log_softmax(s: Statement) -> None:
    softmax(s, log_of=True)


def softmax_backward(s: Statement, log_of: bool = False) -> None:
    """``y * (g - sum(g * y))`` (``g - exp(y) * sum(g)`` with ``log_of``) row by row, the sum in one
    running value as numba's small loop keeps it, in the output's dtype."""
    shape = tuple(s.node.meta["shape"])
    if not shape:
        raise NotImplementedError("a softmax backward of a 0-d tensor")
    if any(s.input_shape(i) != shape for i in (0, 1)):
        raise NotImplementedError("a softmax backward whose gradient and output differ in shape")
    if s.k.parallel_mode is True or (s.k.parallel_mode is None and math.prod(shape) >= PARALLEL_ELEMENTS):
        raise NotImplementedError("a parallel softmax backward")
    (g, y), out, w, dtype = s.inputs, s.out, s.w, s.dtype
    kind = value_type(dtype)
    dim = s.attrs["dim"] % len(shape)
    others = [d for d in range(len(shape)) if d != dim]
    n = out.sizes[dim]

    def at(index: dict[int, str], k: str) -> list[str]:
        return [k if d == dim else index[d] for d in range(len(shape))]

    def read(view, index: list[str], hint: str) -> Value:
        return convert(w, load(w, view, index, hint), dtype)

    def rows(depth: int, index: dict[int, str]) -> None:
        if depth < len(others):
            with w.loop(out.sizes[others[depth]], f"row{depth}") as i:
                rows(depth + 1, {**index, others[depth]: i})
            return
        total_slot = w.slot(kind, "total")
        w.store(kind, literal(0.0, dtype), total_slot)
        with w.loop(n, "k") as k:
            term = read(g, at(index, k), "g")
            if not log_of:
                term = arithmetic(w, "mul", term, read(y, at(index, k), "y"))
            total = Value(w.load(kind, total_slot, "total"), dtype)
            w.store(kind, arithmetic(w, "add", total, term).name, total_slot)
        total = Value(w.load(kind, total_slot, "total"), dtype)
        with w.loop(n, "k") as k:
            gk, yk = read(g, at(index, k), "g"), read(y, at(index, k), "y")
            if log_of:
                e = ExpressionWriter(w, {"y": yk}).write(exp(Var("y")), dtype, dtype)
                value = arithmetic(w, "sub", gk, arithmetic(w, "mul", e, total))
            else:
                value = arithmetic(w, "mul", yk, arithmetic(w, "sub", gk, total))
            store(w, out, at(index, k), value)

    rows(0, {})


def log_softmax_backward(s: Statement) -> None:
    softmax_backward(s, log_of=True)


STATEMENTS = {"softmax": softmax, "log_softmax": log_softmax, "softmax_backward": softmax_backward,
              "log_softmax_backward": log_softmax_backward}
