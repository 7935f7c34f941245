"""``softmax`` and ``log_softmax`` and their backwards: a loop of their own over the rows along ``dim``."""
from __future__ import annotations

import numpy as np

from ....fx.node import Node
from ....ops.scalar import Var, exp
from ...expressions import render
from ..context import OpContext
from ..scalar_functions import NUMBA_CPU

LANES = 4  # running maxima and sums per row, as the loop nests' row reductions keep (loop_nest.LANES)


def vector_folds(ctx: OpContext) -> bool:
    """Whether the row's max and sums are ``row_reductions``' folds in vector lanes: its arrays all
    float32, or all float64, and its rows (traced) at least ``VECTOR_ROW_BYTES`` long, as the loop
    nests' row reductions."""
    from ..loop_nest import VECTOR_ROW_BYTES  # here: loop_nest imports the statements

    dtypes = {np.dtype(a.meta["dtype"]) for a in ctx.node.args[:2] if isinstance(a, Node)} | {np.dtype(ctx.dtype)}
    if len(dtypes) != 1 or not dtypes <= {np.dtype(np.float32), np.dtype(np.float64)}:
        return False
    return ctx.node.meta["shape"][-1] * np.dtype(ctx.dtype).itemsize >= VECTOR_ROW_BYTES


def softmax(ctx: OpContext, log: bool = False) -> list[str]:
    """A loop over the rows along ``dim``: the row's max; the exps written into the output, in a loop
    of their own (a float32 ``exp`` vectorizes, and a running sum beside it would keep the loop
    scalar); their sum; then the output scaled by 1 / sum (softmax) or overwritten with
    ``x - max - log(sum)`` (log_softmax). One ``exp`` per element: on 2048x2048 float32 softmax went
    from 37 to 15 ms. Over the last dimension (``_last_dim``) the rows are contiguous and the max and
    the sum keep ``LANES`` running values each, and a large softmax runs its rows in parallel."""
    rows = ctx.rows(ctx.attrs["dim"])
    if rows.endswith(", 1)"):
        return _last_dim(ctx, rows, log)
    T = ctx.T
    a, o, p, q, k, peak, total = (f"{ctx.out}_{s}" for s in ("in", "3d", "p", "q", "k", "peak", "total"))
    value = f"{a}[{p}, {k}, {q}] - {peak}"
    finish = ([f"        {total} = math.log({total})",
               f"        for {k} in range({a}.shape[1]):",
               f"            {o}[{p}, {k}, {q}] = {value} - {total}"] if log else
              [f"        {total} = {T}(1.0) / {total}",
               f"        for {k} in range({a}.shape[1]):",
               f"            {o}[{p}, {k}, {q}] *= {total}"])
    return [f"{a} = {ctx.contiguous(ctx.self)}.reshape({rows})",
            f"{o} = {ctx.out}.reshape({rows})",
            f"for {p} in range({a}.shape[0] if {a}.shape[1] else 0):",  # rows of no elements: nothing to read
            f"    for {q} in range({a}.shape[2]):",
            f"        {peak} = {a}[{p}, 0, {q}]",
            f"        for {k} in range(1, {a}.shape[1]):",
            f"            {peak} = max({peak}, {a}[{p}, {k}, {q}])",
            f"        for {k} in range({a}.shape[1]):",
            f"            {o}[{p}, {k}, {q}] = {render(exp(Var(value)), NUMBA_CPU, ctx.dtype, ctx.dtype)}",
            f"        {total} = {T}(0.0)",
            f"        for {k} in range({a}.shape[1]):",
            f"            {total} += {o}[{p}, {k}, {q}]",
            *finish]


def _last_dim(ctx: OpContext, rows: str, log: bool) -> list[str]:
    """Softmax over contiguous rows. A large one (``ctx.parallel``) runs its rows with ``prange`` and
    keeps ``LANES`` running maxima and sums per row, joined as ``(s0 + s1) + (s2 + s3)``: more
    independent work per step than one chain of dependent operations, in the same order whatever
    thread runs a row; a small one keeps one of each. A NaN is skipped by the max and comes back
    through its ``exp``, making the row NaN as eagerly."""
    T, lanes = ctx.T, LANES if ctx.parallel else 1
    a, o, p, k, b, rest, peak, total = (f"{ctx.out}_{s}" for s in ("in", "2d", "p", "k", "b", "rest", "peak",
                                                                    "total"))
    n = f"{a}.shape[1]"
    maxima = [f"{ctx.out}_m{j}" for j in range(lanes)]
    sums = [f"{ctx.out}_s{j}" for j in range(lanes)]
    outer, inner = rows[1:-1].split(", ")[:2]
    # A 2-d input is read as it is laid out (a slice or a transpose included), anything else as rows
    # of a C-contiguous array (a softmax over dim 0 of an (n, 1) input is one row of n).
    as_laid_out = ctx.rank(ctx.self) == 2 and ctx.attrs["dim"] % 2 == 1
    source = ctx.self if as_laid_out else f"{ctx.contiguous(ctx.self)}.reshape(({outer}, {inner}))"
    lines = [f"{a} = {source}",
             f"{o} = {ctx.out}.reshape(({outer}, {inner}))"]
    if lanes > 1:
        lines.append(f"{rest} = {n} - {n} % {lanes}")
    # rows of no elements are skipped: the log of their sum, 0, is an error in Python's math
    lines.append(f"for {p} in {'prange' if ctx.parallel else 'range'}({a}.shape[0] if {n} else 0):")

    def fold(accumulators: list[str], step: str, initial: str) -> list[str]:
        """The row folded into ``accumulators`` (``step(acc, element)`` gives a line), then joined pairwise."""
        out = [f"    {acc} = {initial}" for acc in accumulators]
        if lanes > 1:
            out.append(f"    for {b} in range(0, {rest}, {lanes}):")
            out += [f"        {step(acc, f'{b} + {j}')}" for j, acc in enumerate(accumulators)]
        out += [f"    for {k} in range({rest if lanes > 1 else 0}, {n}):", f"        {step(accumulators[0], k)}"]
        while len(accumulators) > 1:
            pairs = list(zip(accumulators[::2], accumulators[1::2]))
            out += [f"    {step(x, None).replace('@', y)}" for x, y in pairs]
            accumulators = [x for x, _ in pairs]
        return out

    def larger(acc: str, at: str | None) -> str:
        element = "@" if at is None else f"{a}[{p}, {at}]"
        return f"{acc} = {element} if {element} > {acc} else {acc}"

    def plus(acc: str, at: str | None) -> str:
        return f"{acc} += {'@' if at is None else f'{o}[{p}, {at}]'}"

    value = f"{a}[{p}, {k}] - {peak}"
    exps = [f"    for {k} in range({n}):",
            f"        {o}[{p}, {k}] = {render(exp(Var(value)), NUMBA_CPU, ctx.dtype, ctx.dtype)}"]
    if lanes > 1 and vector_folds(ctx):  # folded in vector lanes (row_reductions)
        lines += [f"    {peak} = row_max({a}, {p})", *exps, f"    {total} = row_sum({o}, {p})"]
    else:
        lines += fold(maxima, larger, f"{T}(-np.inf)")
        lines += [f"    {peak} = {maxima[0]}", *exps]
        lines += fold(sums, plus, f"{T}(0.0)")
        lines.append(f"    {total} = {sums[0]}")
    if log:
        lines += [f"    {total} = math.log({total})",
                  f"    for {k} in range({n}):",
                  f"        {o}[{p}, {k}] = {value} - {total}"]
    else:
        lines += [f"    {total} = {T}(1.0) / {total}",
                  f"    for {k} in range({n}):",
                  f"        {o}[{p}, {k}] *= {total}"]
    return lines


def log_softmax(ctx: OpContext) -> list[str]:
    return softmax(ctx, log=True)


def softmax_backward(ctx: OpContext, log: bool = False) -> list[str]:
    """``y * (g - sum(g * y))`` (softmax) or ``g - exp(y) * sum(g)`` (log_softmax) for the output y
    and its gradient g, one row at a time: the row's sum, then its gradient, written while the row is
    still in cache. Over the last dimension of a large one the rows run in parallel and the sum keeps
    ``LANES`` running values joined as ``(s0 + s1) + (s2 + s3)``, the same order whatever thread runs
    a row (a small one keeps one)."""
    node, dim = ctx.node, ctx.attrs["dim"]
    if any(a.meta["shape"] != node.meta["shape"] for a in node.args[:2]):
        raise NotImplementedError("a softmax backward whose gradient and output differ in shape")
    T, g, y = ctx.T, ctx.grad_output, ctx.output
    rows = ctx.rows(dim)
    last = rows.endswith(", 1)")
    lanes = LANES if ctx.parallel and last else 1
    gs, ys, o, p, q, k, b, rest, total = (f"{ctx.out}_{s}" for s in ("g", "y", "o", "p", "q", "k", "b", "rest",
                                                                      "total"))
    sums = [f"{ctx.out}_s{j}" for j in range(lanes)]
    if last:
        outer, inner = rows[1:-1].split(", ")[:2]
        as_laid_out = ctx.rank() == 2 and dim % 2 == 1  # a 2-d array is read in place, whatever its strides

        def view(var: str) -> str:
            return var if as_laid_out else f"{ctx.contiguous(var)}.reshape(({outer}, {inner}))"
        lines = [f"{gs} = {view(g)}", f"{ys} = {view(y)}", f"{o} = {ctx.out}.reshape(({outer}, {inner}))",
                 f"for {p} in {'prange' if ctx.parallel else 'range'}({o}.shape[0]):"]
        at, indent, n = (lambda i: f"{p}, {i}"), "    ", f"{o}.shape[1]"
    else:
        lines = [f"{gs} = {ctx.contiguous(g)}.reshape({rows})", f"{ys} = {ctx.contiguous(y)}.reshape({rows})",
                 f"{o} = {ctx.out}.reshape({rows})",
                 f"for {p} in range({o}.shape[0]):", f"    for {q} in range({o}.shape[2]):"]
        at, indent, n = (lambda i: f"{p}, {i}, {q}"), "        ", f"{o}.shape[1]"

    def term(i: str) -> str:
        return f"{gs}[{at(i)}]" if log else f"{gs}[{at(i)}] * {ys}[{at(i)}]"

    if lanes > 1 and vector_folds(ctx):  # folded in vector lanes (row_reductions)
        fold = f"row_sum({gs}, {p})" if log else f"row_dot({gs}, {ys}, {p})"
        lines.append(f"{indent}{total} = {fold}")
        sums = []
    lines += [f"{indent}{s} = {T}(0.0)" for s in sums]
    if lanes > 1 and sums:
        lines += [f"{indent}{rest} = {n} - {n} % {lanes}",
                  f"{indent}for {b} in range(0, {rest}, {lanes}):",
                  *(f"{indent}    {s} += {term(f'{b} + {j}')}" for j, s in enumerate(sums))]
    if sums:
        lines += [f"{indent}for {k} in range({rest if lanes > 1 else 0}, {n}):", f"{indent}    {sums[0]} += {term(k)}"]
    while len(sums) > 1:
        pairs = list(zip(sums[::2], sums[1::2]))
        lines += [f"{indent}{x} += {z}" for x, z in pairs]
        sums = [x for x, _ in pairs]
    if log:
        e = render(exp(Var(f"{ys}[{at(k)}]")), NUMBA_CPU, ctx.dtype, ctx.dtype)
        value = f"{gs}[{at(k)}] - {e} * {total}"
    else:
        value = f"{ys}[{at(k)}] * ({gs}[{at(k)}] - {total})"
    if sums:
        lines.append(f"{indent}{total} = {sums[0]}")
    return lines + [f"{indent}for {k} in range({n}):", f"{indent}    {o}[{at(k)}] = {value}"]


def log_softmax_backward(ctx: OpContext) -> list[str]:
    return softmax_backward(ctx, log=True)


STATEMENTS = {"softmax": softmax, "log_softmax": log_softmax, "softmax_backward": softmax_backward,
              "log_softmax_backward": log_softmax_backward}
