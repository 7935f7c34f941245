"""``im2col``, ``col2im`` and ``convolution``. The columns are gathered by loops over the windows
(channel, kernel row and column, output row), whose innermost loop copies a run of one image row: a
bounds test only on a padded side, and no table to read (K12's gathers took 88 µs by a table of
positions, 34 µs so). ``col2im`` scatters by the window positions of one image
(``ops.convolution.window_positions``, computed when lowering and passed as a kernel argument, -1 on
the padding), in the columns' order. A convolution multiplies each image's columns by the weight
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


def _gather_columns(ctx: OpContext, image: str, columns: str, image_shape: tuple, kernel: tuple, stride: tuple,
                    padding: tuple, dilation: tuple, out_size: tuple) -> list[str]:
    """``columns`` (N, C * kh * kw, oh * ow) from ``image`` (N, C, H, W), zero on the padding. Sizes
    are run-time values (``ctx.size``), so a kernel serves other shapes; whether a side is padded
    decides the code."""
    n, c, h, w = image_shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = ((ctx.size(v) for v in pair)
                                              for pair in (kernel, stride, padding, dilation))
    oh, ow = out_size
    v = {k: f"{ctx.out}_{k}" for k in ("n", "c", "i", "j", "row", "oy", "ox", "y", "x", "at")}
    y = f"{v['oy']} * {sh} - {ph} + {v['i']} * {dh}"
    x = f"{v['ox']} * {sw} - {pw} + {v['j']} * {dw}"
    read = f"{image}[{v['n']}, {v['c']}, {v['y']}, {v['x']}]"
    lines = [f"for {v['n']} in range({n}):",
             f"    for {v['c']} in range({c}):",
             f"        for {v['i']} in range({kh}):",
             f"            for {v['j']} in range({kw}):",
             f"                {v['row']} = ({v['c']} * {kh} + {v['i']}) * {kw} + {v['j']}",
             f"                for {v['oy']} in range({oh}):",
             f"                    {v['y']} = {y}",
             f"                    {v['at']} = {v['oy']} * {ow}"]
    inner = [f"for {v['ox']} in range({ow}):",
             f"    {v['x']} = {x}",
             f"    {columns}[{v['n']}, {v['row']}, {v['at']} + {v['ox']}] = "
             + (f"{read} if {v['x']} >= 0 and {v['x']} < {w} else {ctx.T}(0)" if padding[1] else read)]
    if padding[0]:
        lines += [f"                    if {v['y']} < 0 or {v['y']} >= {h}:",
                  f"                        {columns}[{v['n']}, {v['row']}, {v['at']}:{v['at']} + {ow}] = 0",
                  "                        continue"]
    return lines + [" " * 20 + line for line in inner]


def _image(ctx: OpContext, var: str, shape: tuple) -> str:
    """``var`` as (N, C, H, W): a 1-d input is an image of height 1."""
    return f"{ctx.contiguous(var)}.reshape(({', '.join(shape)}))"


def im2col(ctx: OpContext) -> list[str]:
    a = ctx.attrs
    n, c, h, w = ctx.shape(ctx.self)
    image, columns = f"{ctx.out}_image", f"{ctx.out}_columns"
    kernel, stride, padding, dilation = (tuple(a[k]) for k in ("kernel_size", "stride", "padding", "dilation"))
    out_size = tuple(_output_size(ctx, size, k, s, p, d)
                     for size, k, s, p, d in zip((h, w), kernel, stride, padding, dilation))
    return [f"{image} = {_image(ctx, ctx.self, (n, c, h, w))}",
            f"{columns} = {ctx.out}.reshape(({n}, {c} * {ctx.size(kernel[0])} * {ctx.size(kernel[1])}, "
            f"{out_size[0]} * {out_size[1]}))",
            *_gather_columns(ctx, image, columns, (n, c, h, w), kernel, stride, padding, dilation, out_size)]


def _output_size(ctx: OpContext, size: str, kernel: int, stride: int, padding: int, dilation: int) -> str:
    """The number of windows along a side of ``size``, as source (``ops.convolution.output_size``)."""
    k, s, p, d = (ctx.size(v) for v in (kernel, stride, padding, dilation))
    return f"(({size} + 2 * {p} - {d} * ({k} - 1) - 1) // {s} + 1)"


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
    w_shape = tuple(ctx.node.args[1].meta["shape"])
    if len(a["stride"]) == 1:
        w_shape = w_shape[:2] + (1,) + w_shape[2:]
    n = ctx.shape(ctx.input)[0]
    o = ctx.shape(ctx.weight)[0]
    spatial = ctx.shape()[2:]
    groups = ctx.size(a["groups"])
    image, columns, weight, out, i, g = (f"{ctx.out}_{s}" for s in ("image", "columns", "weight", "planes", "n",
                                                                    "g"))
    length = ctx.product(spatial)
    in_channels = ctx.shape(ctx.input)[1]
    image_shape = (n, in_channels, "1", ctx.shape(ctx.input)[2]) if len(a["stride"]) == 1 else \
        (n, in_channels, *ctx.shape(ctx.input)[2:])
    rows = f"{in_channels} * {ctx.size(w_shape[2])} * {ctx.size(w_shape[3])}"
    out_size = ("1", spatial[0]) if len(spatial) == 1 else tuple(spatial)
    lines = [f"{image} = {_image(ctx, ctx.input, image_shape)}",
             f"{columns} = np.empty(({n}, {rows}, {length}), {ctx.T})",
             *_gather_columns(ctx, image, columns, image_shape, w_shape[2:], stride, padding, dilation, out_size),
             f"{columns}_grouped = {columns}.reshape(({n}, {groups}, {rows} // {groups}, {length}))",
             f"{weight} = {ctx.contiguous(ctx.weight)}.reshape(({groups}, {o} // {groups}, {rows} // {groups}))",
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
