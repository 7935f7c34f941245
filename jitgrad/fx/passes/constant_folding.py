"""``fold_constants``: computes at compile time every op whose inputs are all constants.

Backward graphs are full of these (the seed ``ones`` reshaped, ``1.0 - 0.0``). A folded value becomes
a ``get_attr``. An op whose result has more elements than its largest input (``expand`` of the seed to
the loss's input shape) is left alone: folding it would turn a broadcast the backend reads for free
into a constant as large as an activation, and would make the graph's structure depend on sizes (a
new batch size must reuse the compiled kernels).

A folded value is kept on the host, whatever device the op ran on (the CUDA seed's ``to_device``
folds to a device array): every pass reads constants as numpy (to compare, deduplicate and simplify
them), and a backend uploads the constants it needs once, when it lowers.
"""
from __future__ import annotations

import math

import numpy as np

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..graph import Graph
from ..node import Node, Opcode, map_nodes, tuple_item


def fold_constants(graph: Graph) -> Graph:
    record = graph.record_pass("fold_constants")
    feeding: set[Node] = set()
    call, constant = Opcode.CALL_FUNCTION, Opcode.GET_ATTR
    for node in graph.nodes:
        if node.op is not call or node.target is tuple_item:
            continue
        inputs = node.input_nodes
        if not inputs or inputs[0].op is not constant or not all([n.op is constant for n in inputs]):
            continue
        largest_input = max(math.prod(n.meta["shape"]) for n in inputs)
        if isinstance(node.meta["dtype"], tuple) or math.prod(node.meta["shape"]) > largest_input:
            continue
        feeding.update(inputs)

        def value_of(n: Node):
            return graph.constants[n.target]
        with no_grad():
            value = node.target(*map_nodes(node.args, value_of), **map_nodes(node.kwargs, value_of))
        if not isinstance(value._data, np.ndarray):
            from ...device import to_host  # only ever reached once a device array exists
            value = Tensor._make(to_host(value._data))
        folded = graph.get_attr(value, f"{node.name}_folded", before=node)
        folded.meta.update({k: v for k, v in node.meta.items() if k not in ("shape", "dtype")})
        graph.replace_node(node, folded)
        record.changes.append(f"{node.name} -> {folded.name}")
    for node in feeding:  # constants that only fed folded ops
        if not node.users:
            graph.erase_node(node)
    return graph
