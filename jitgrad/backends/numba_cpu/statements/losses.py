"""``nll_loss`` and its backward: a loop over the rows and their target classes, a target equal to
``ignore_index`` skipped (no loss, no gradient, not counted by "mean"); ``cross_entropy_backward``, a
loop over the rows writing each from its target."""
from __future__ import annotations

from ....ops.scalar import Var, exp
from ...expressions import render
from ..context import OpContext
from ..scalar_functions import NUMBA_CPU


def _each_target(ctx: OpContext, n: str, classes: str) -> tuple[str, str, str, list[str]]:
    """The loop over the rows and their targets (``for i: t = target[i]``), each target not ignored
    checked against the classes: outside them it would read or write outside the array, and numba
    checks no bounds. Returns the row and target variables, the test of a kept target, the lines."""
    t, i = f"{ctx.out}_t", f"{ctx.out}_i"
    kept = f"{t} != {int(ctx.attrs.get('ignore_index', -100))}"
    return i, t, kept, [f"for {i} in range({n}):", f"    {t} = {ctx.target}[{i}]",
                        f"    if {kept} and ({t} < 0 or {t} >= {classes}):",
                        "        raise IndexError('nll_loss: a target is out of bounds for the number of classes')"]


def _count(ctx: OpContext, n: str, kept: str, t: str, i: str) -> tuple[str, list[str]]:
    """The number of targets not ignored, the divisor of "mean"."""
    count = f"{ctx.out}_count"
    return count, [f"{count} = 0", f"for {i} in range({n}):", f"    {t} = {ctx.target}[{i}]",
                   f"    if {kept}:", f"        {count} += 1"]


def nll_loss(ctx: OpContext) -> list[str]:
    n, classes = ctx.shape(ctx.self)
    i, t, kept, loop = _each_target(ctx, n, classes)
    if ctx.attrs["reduction"] == "none":
        return loop + [f"    {ctx.out}[{i}] = -{ctx.self}[{i}, {t}] if {kept} else {ctx.T}(0)"]
    total, count = f"{ctx.out}_total", f"{ctx.out}_count"
    finish = f"{total} / {ctx.T}({count})" if ctx.attrs["reduction"] == "mean" else total
    return [f"{total} = {ctx.T}(0)", f"{count} = 0", *loop,
            f"    if {kept}:", f"        {total} = {total} - {ctx.self}[{i}, {t}]", f"        {count} += 1",
            f"{ctx.out}[0] = {finish}"]


def _row_value(ctx: OpContext, n: str, kept: str, t: str, i: str) -> tuple[str, list[str]]:
    """The gradient at a row's target (an expression of the row ``i``), and the lines computing what it
    needs: ``-grad[i]`` for "none", else one value for every row, ``-grad / count`` for "mean"."""
    if ctx.attrs["reduction"] == "none":
        return f"-{ctx.grad}[{i}]", []
    value = f"{ctx.out}_value"
    if ctx.attrs["reduction"] == "mean":
        count, counting = _count(ctx, n, kept, t, i)
        return value, [*counting, f"{value} = -{ctx.grad}[0] / {ctx.T}({count})"]
    return value, [f"{value} = -{ctx.grad}[0]"]


def nll_loss_backward(ctx: OpContext) -> list[str]:
    n, classes = ctx.shape()
    i, t, kept, loop = _each_target(ctx, n, classes)
    value, lines = _row_value(ctx, n, kept, t, i)
    return [f"{ctx.out}[...] = 0", *lines, *loop, f"    if {kept}:", f"        {ctx.out}[{i}, {t}] = {value}"]


def cross_entropy_backward(ctx: OpContext) -> list[str]:
    """Row i of ``g - exp(y) * sum(g)`` for the one-hot g of ``nll_loss_backward``: its sum ``s`` is the
    row's value (0 for an ignored target), every element ``0 - exp(y) * s`` and the target's ``value -
    exp(y) * s``, the arithmetic of the two ops. The targets are checked in a loop of their own first
    (a loop over rows in parallel must not raise); a large one then runs its rows with ``prange``."""
    n, classes = ctx.shape()
    i, t, kept, loop = _each_target(ctx, n, classes)
    value, lines = _row_value(ctx, n, kept, t, i)
    y, o, k, s, T = ctx.output, ctx.out, f"{ctx.out}_k", f"{ctx.out}_s", ctx.T

    def e(j: str) -> str:
        return render(exp(Var(f"{y}[{i}, {j}]")), NUMBA_CPU, ctx.dtype, ctx.dtype)
    return [*lines, *loop,
            f"for {i} in {'prange' if ctx.parallel else 'range'}({n}):",
            f"    {t} = {ctx.target}[{i}]",
            f"    {s} = {value} if {kept} else {T}(0)",
            f"    for {k} in range({classes}):",
            f"        {o}[{i}, {k}] = {T}(0) - {e(k)} * {s}",
            f"    if {kept}:",
            f"        {o}[{i}, {t}] = {value} - {e(t)} * {s}"]


STATEMENTS = {"nll_loss": nll_loss, "nll_loss_backward": nll_loss_backward,
              "cross_entropy_backward": cross_entropy_backward}
