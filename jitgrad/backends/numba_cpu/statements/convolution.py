"""``im2col``, ``col2im`` and ``convolution``: gathers and scatters by the window positions of one image
(``ops.convolution.window_positions``, computed when lowering and passed as a kernel argument, -1 on
the padding), and for a convolution the matrix products of each image's columns with the weight
(``matmat``, numpy's BLAS) into the output's planes."""
from __future__ import annotations

from ....ops.convolution import planar, window_positions
from ..context import OpContext


def _positions(ctx: OpContext, image_shape: tuple, kernel: tuple, stride: tuple, padding: tuple,
               dilation: tuple) -> str:
    """The kernel argument holding the window positions of one (C, H, W) image."""
    channels, size = image_shape[1], tuple(image_shape[2:])
    return ctx.index_argument(window_positions(channels, size, tuple(kernel), tuple(dilation), tuple(padding),
                                               tuple(stride)))


def _gather_columns(ctx: OpContext, image: str, columns: str, batch: str, positions: str) -> list[str]:
    """``columns`` (batch, C * kh * kw * L, flat) from ``image`` (batch, C * H * W, flat): zero on the
    padding."""
    n, j, p = f"{ctx.out}_n", f"{ctx.out}_j", f"{ctx.out}_p"
    return [f"for {n} in range({batch}):",
            f"    for {j} in range({positions}.size):",
            f"        {p} = {positions}[{j}]",
            f"        {columns}[{n}, {j}] = {image}[{n}, {p}] if {p} >= 0 else {ctx.T}(0)"]


def im2col(ctx: OpContext) -> list[str]:
    a = ctx.attrs
    shape = ctx.node.args[0].meta["shape"]
    positions = _positions(ctx, shape, a["kernel_size"], a["stride"], a["padding"], a["dilation"])
    n, c, h, w = ctx.shape(ctx.self)
    image, columns = f"{ctx.out}_image", f"{ctx.out}_columns"
    return [f"{image} = {ctx.contiguous(ctx.self)}.reshape(({n}, {c} * {h} * {w}))",
            f"{columns} = {ctx.out}.reshape(({n}, {positions}.size))",
            *_gather_columns(ctx, image, columns, n, positions)]


def col2im(ctx: OpContext) -> list[str]:
    """Zeros, and every column element added at its position in the image, in the columns' order."""
    a = ctx.attrs
    shape = ctx.node.meta["shape"]
    positions = _positions(ctx, shape, a["kernel_size"], a["stride"], a["padding"], a["dilation"])
    n, c, h, w = ctx.shape()
    image, columns, i, j, p = (f"{ctx.out}_{s}" for s in ("image", "columns", "n", "j", "p"))
    return [f"{ctx.out}[...] = 0",
            f"{image} = {ctx.out}.reshape(({n}, {c} * {h} * {w}))",
            f"{columns} = {ctx.contiguous(ctx.self)}.reshape(({n}, {positions}.size))",
            f"for {i} in range({n}):",
            f"    for {j} in range({positions}.size):",
            f"        {p} = {positions}[{j}]",
            f"        if {p} >= 0:",
            f"            {image}[{i}, {p}] += {columns}[{i}, {j}]"]


def convolution(ctx: OpContext) -> list[str]:
    """The input's columns (a new array), then per image and group one product of the group's weight
    (out_channels / groups, C / groups * kh * kw) with its columns, written into the output's planes;
    then the bias. A 1-d convolution is a 2-d one of height 1."""
    a = ctx.attrs
    stride, padding, dilation = planar(a["stride"], a["padding"], a["dilation"])
    in_shape, w_shape = (tuple(arg.meta["shape"]) for arg in ctx.node.args[:2])
    if len(a["stride"]) == 1:
        in_shape, w_shape = in_shape[:2] + (1,) + in_shape[2:], w_shape[:2] + (1,) + w_shape[2:]
    positions = _positions(ctx, in_shape, w_shape[2:], stride, padding, dilation)
    n = ctx.shape(ctx.input)[0]
    o = ctx.shape(ctx.weight)[0]
    spatial = ctx.shape()[2:]
    groups = ctx.size(a["groups"])
    image, columns, weight, out, i, g = (f"{ctx.out}_{s}" for s in ("image", "columns", "weight", "planes", "n",
                                                                    "g"))
    length = ctx.product(spatial)
    lines = [f"{image} = {ctx.contiguous(ctx.input)}.reshape(({n}, {ctx.product(ctx.shape(ctx.input)[1:])}))",
             f"{columns} = np.empty(({n}, {positions}.size), {ctx.T})",
             *_gather_columns(ctx, image, columns, n, positions),
             f"{columns}_grouped = {columns}.reshape(({n}, {groups}, {positions}.size // ({groups} * {length}), "
             f"{length}))",
             f"{weight} = {ctx.contiguous(ctx.weight)}.reshape(({groups}, {o} // {groups}, "
             f"{positions}.size // ({groups} * {length})))",
             f"{out} = {ctx.out}.reshape(({n}, {groups}, {o} // {groups}, {length}))",
             f"for {i} in range({n}):",
             f"    for {g} in range({groups}):",
             f"        matmat({weight}[{g}], {columns}_grouped[{i}, {g}], {out}[{i}, {g}])"]
    if ctx.bias is not None:
        k, l = f"{ctx.out}_k", f"{ctx.out}_l"
        flat = f"{ctx.out}_flat"
        lines += [f"{flat} = {ctx.out}.reshape(({n}, {o}, {length}))",
                  f"for {i} in range({n}):",
                  f"    for {k} in range({o}):",
                  f"        for {l} in range({length}):",
                  f"            {flat}[{i}, {k}, {l}] += {ctx.bias}[{k}]"]
    return lines


STATEMENTS = {"im2col": im2col, "col2im": col2im, "convolution": convolution}
