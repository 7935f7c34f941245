"""``nll_loss`` and its backward: a loop over the rows and their target classes, a target equal to
``ignore_index`` skipped (no loss, no gradient, not counted by "mean")."""
from __future__ import annotations

from ..context import OpContext


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


def nll_loss_backward(ctx: OpContext) -> list[str]:
    n, classes = ctx.shape()
    i, t, kept, loop = _each_target(ctx, n, classes)
    lines = [f"{ctx.out}[...] = 0"]
    if ctx.attrs["reduction"] == "none":
        value = f"-{ctx.grad}[{i}]"
    else:  # one value for every row
        value = f"{ctx.out}_value"
        if ctx.attrs["reduction"] == "mean":
            count, counting = _count(ctx, n, kept, t, i)
            lines += [*counting, f"{value} = -{ctx.grad}[0] / {ctx.T}({count})"]
        else:
            lines.append(f"{value} = -{ctx.grad}[0]")
    return lines + loop + [f"    if {kept}:", f"        {ctx.out}[{i}, {t}] = {value}"]


STATEMENTS = {"nll_loss": nll_loss, "nll_loss_backward": nll_loss_backward}
