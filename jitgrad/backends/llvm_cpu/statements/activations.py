"""``softmax`` and ``log_softmax`` over the last dimension, as the numba CPU backend writes a small one
(``numba_cpu/statements/activations.py``, one running value per row): the row's max, the exps written
into the output, their sum, then the output scaled or overwritten with ``x - max - log(sum)``. Another
dimension, or a large (parallel) one, goes to numba."""
from __future__ import annotations

import math

from ....ops.scalar import Var, exp, log
from ..arrays import load, store
from ..expressions import ExpressionWriter, Value, arithmetic, compare, select
from ..function_writer import literal, value_type
from ..fused_loops import PARALLEL_ELEMENTS
from .context import Statement


def softmax(s: Statement, log_of: bool = False) -> None:
    shape, dim = s.input_shape(), s.attrs["dim"]
    if not shape or dim % len(shape) != len(shape) - 1:
        raise NotImplementedError("a softmax over another dimension than the last")
    if s.k.parallel_mode is True or (s.k.parallel_mode is None and math.prod(shape) >= PARALLEL_ELEMENTS):
        raise NotImplementedError("a parallel softmax")
    x, out, w, dtype = s.inputs[0], s.out, s.w, s.dtype
    kind = value_type(dtype)
    outer = x.sizes[:-1]
    n = x.sizes[-1]

    def rows(depth: int, index: list[str]) -> None:
        if depth < len(outer):
            with w.loop(outer[depth], f"row{depth}") as i:
                rows(depth + 1, index + [i])
            return
        peak_slot, total_slot = w.slot(kind, "peak"), w.slot(kind, "total")
        w.store(kind, literal(float("-inf"), dtype), peak_slot)
        with w.loop(n, "k") as k:
            element = load(w, x, index + [k], "x")
            peak = Value(w.load(kind, peak_slot, "peak"), dtype)
            w.store(kind, select(w, compare(w, "gt", element, peak), element, peak).name, peak_slot)
        peak = Value(w.load(kind, peak_slot, "peak"), dtype)
        with w.loop(n, "k") as k:
            shifted = arithmetic(w, "sub", load(w, x, index + [k], "x"), peak)
            store(w, out, index + [k], ExpressionWriter(w, {"v": shifted}).write(exp(Var("v")), dtype, dtype))
        w.store(kind, literal(0.0, dtype), total_slot)
        with w.loop(n, "k") as k:
            total = Value(w.load(kind, total_slot, "total"), dtype)
            w.store(kind, arithmetic(w, "add", total, load(w, out, index + [k], "e")).name, total_slot)
        total = Value(w.load(kind, total_slot, "total"), dtype)
        if log_of:
            logged = ExpressionWriter(w, {"t": total}).write(log(Var("t")), dtype, dtype)
            with w.loop(n, "k") as k:
                shifted = arithmetic(w, "sub", load(w, x, index + [k], "x"), peak)
                store(w, out, index + [k], arithmetic(w, "sub", shifted, logged))
        else:
            scale = arithmetic(w, "truediv", Value(literal(1.0, dtype), dtype), total)
            with w.loop(n, "k") as k:
                store(w, out, index + [k], arithmetic(w, "mul", load(w, out, index + [k], "e"), scale))

    rows(0, [])


def log_softmax(s: Statement) -> None:
    softmax(s, log_of=True)


STATEMENTS = {"softmax": softmax, "log_softmax": log_softmax}
