"""``share_convolution_columns``: a convolution whose weight gradient is computed in the same graph
gathers its input's columns once.

A convolution's forward gathers the input's windows into columns (``im2col``) and multiplies them by
the weight; its weight gradient (``ConvolutionBackward0``'s formula) gathers the same columns again
from the same input. In one graph the second gather is a copy of the first: the forward is rewritten
as the eager forward's own steps (``im2col``, ``reshape``, ``matmul``, ``reshape``, the bias added),
and the backward's ``im2col`` reads the forward's. That costs the columns' memory from the forward to
the backward (the memory plan keeps them, as it keeps any saved value) and saves one gather; the
columns then come from the memory plan instead of an array the convolution allocated per call.

Only a 2-d convolution with such an ``im2col`` in its graph is rewritten: without one there is
nothing to share, and the convolution statement is as fast.
"""
from __future__ import annotations

import math

from ...ops.registry import REGISTRY
from ..graph import Graph
from ..node import Node, is_call
from .batch_products import call_like


def _window_attrs(convolution: Node) -> dict | None:
    """The ``im2col`` attributes that gather the columns ``convolution`` multiplies; None for a
    convolution this pass leaves alone (1-d)."""
    kw = convolution.kwargs
    if len(kw["stride"]) != 2:
        return None
    kernel = tuple(convolution.args[1].meta["shape"][2:])
    return {"kernel_size": kernel, "dilation": tuple(kw["dilation"]), "padding": tuple(kw["padding"]),
            "stride": tuple(kw["stride"])}


def _same_gather(node: Node, image: Node, attrs: dict) -> bool:
    return (is_call(node, "im2col") and node.args[0] is image
            and all(tuple(node.kwargs[k]) == v for k, v in attrs.items()))


def _from_columns(graph: Graph, convolution: Node, columns: Node) -> Node:
    """The convolution's value computed from ``columns``, placed before ``convolution``."""
    image, weight, bias = convolution.args
    n, out_channels, *spatial = convolution.meta["shape"]
    groups = convolution.kwargs["groups"]
    length = math.prod(spatial)
    rows = columns.meta["shape"][1]
    grouped = call_like(graph, "reshape", (columns,), {"shape": (n, groups, rows // groups, length)},
                        convolution, convolution)
    matrix = call_like(graph, "reshape", (weight,), {"shape": (groups, out_channels // groups, rows // groups)},
                       convolution, convolution)
    product = call_like(graph, "matmul", (matrix, grouped), {}, convolution, convolution)
    value = call_like(graph, "reshape", (product,), {"shape": tuple(convolution.meta["shape"])},
                      convolution, convolution)
    if bias is not None:
        column = call_like(graph, "reshape", (bias,), {"shape": (out_channels, 1, 1)}, convolution, convolution)
        value = call_like(graph, "add", (value, column), {}, convolution, convolution)
    return value


def share_convolution_columns(graph: Graph) -> Graph:
    """Each convolution with a gather of its columns in the graph computed from those columns; a
    second convolution of the same image and windows (a layer called twice on one batch) reads the
    columns the first made, which are defined before both."""
    record = graph.record_pass("share_convolution_columns")
    target = REGISTRY["convolution"]
    made: dict[tuple, Node] = {}   # (image, windows) -> the columns made for an earlier convolution
    for convolution in [node for node in graph.nodes if node.target is target]:
        attrs = _window_attrs(convolution)
        if attrs is None:
            continue
        image = convolution.args[0]
        key = (image.name, tuple(sorted(attrs.items())))
        columns = made.get(key)
        if columns is not None:
            graph.replace_node(convolution, _from_columns(graph, convolution, columns))
            record.changes.append(f"{convolution.name}: reads columns {columns.name}")
            continue
        gathers = [user for user in image.users if _same_gather(user, image, attrs)]
        if not gathers:
            continue
        columns = made[key] = call_like(graph, "im2col", (image,), attrs, convolution, convolution)
        graph.replace_node(convolution, _from_columns(graph, convolution, columns))
        for gather in gathers:
            graph.replace_node(gather, columns)
        record.changes.append(f"{convolution.name}: columns {columns.name} shared with "
                              f"{', '.join(g.name for g in gathers)}")
    return graph
