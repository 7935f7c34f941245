"""``nll_loss`` and its backward: a loop over the rows and their target classes."""
from __future__ import annotations

from ..context import OpContext


def _each_target(ctx: OpContext, n: str, classes: str) -> tuple[str, str, list[str]]:
    """The loop over the rows and their targets (``for i: t = target[i]``), each target checked against
    the classes: outside them it would read or write outside the array, and numba checks no bounds."""
    t, i = f"{ctx.out}_t", f"{ctx.out}_i"
    return i, t, [f"for {i} in range({n}):", f"    {t} = {ctx.target}[{i}]",
                  f"    if {t} < 0 or {t} >= {classes}:",
                  "        raise IndexError('nll_loss: a target is out of bounds for the number of classes')"]


def nll_loss(ctx: OpContext) -> list[str]:
    n, classes = ctx.shape(ctx.self)
    i, t, loop = _each_target(ctx, n, classes)
    if ctx.attrs["reduction"] == "none":
        return loop + [f"    {ctx.out}[{i}] = -{ctx.self}[{i}, {t}]"]
    total = f"{ctx.out}_total"
    finish = f"{total} / {ctx.T}({n})" if ctx.attrs["reduction"] == "mean" else total
    return [f"{total} = {ctx.T}(0)", *loop, f"    {total} = {total} - {ctx.self}[{i}, {t}]",
            f"{ctx.out}[0] = {finish}"]


def nll_loss_backward(ctx: OpContext) -> list[str]:
    n, classes = ctx.shape()
    i, t, loop = _each_target(ctx, n, classes)
    lines = [f"{ctx.out}[...] = 0"]
    if ctx.attrs["reduction"] == "none":
        value = f"-{ctx.grad}[{i}]"
    else:  # one value for every row
        value = f"{ctx.out}_value"
        scale = f" / {ctx.T}({n})" if ctx.attrs["reduction"] == "mean" else ""
        lines.append(f"{value} = -{ctx.grad}[0]{scale}")
    return lines + loop + [f"    {ctx.out}[{i}, {t}] = {value}"]


STATEMENTS = {"nll_loss": nll_loss, "nll_loss_backward": nll_loss_backward}
