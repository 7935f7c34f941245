"""``trace_joint``: one graph holding a function's forward and the backward of its outputs.

The backward is what the real engine runs for ``autograd.grad(outputs, inputs, tangents)``, where the
tangents (the gradients arriving at the outputs) are placeholders of their own. The split point is the
set of forward values the backward reads: what a forward graph must save for a backward graph, which
``passes.partition_joint`` then shrinks by recomputing cheap values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..autograd.differentiate import grad
from ..tensor import Tensor
from .graph import Graph
from .graph_module import GraphModule
from .node import Node, Opcode, iter_leaves
from .trace_calls import start_trace
from .tracer import Tracer

BACKWARD = "backward"


def is_backward(node: Node) -> bool:
    """Nodes the engine ran (and the tangent placeholders) belong to the backward."""
    return node.meta.get("phase") == BACKWARD


def saved_values(graph: Graph) -> list[Node]:
    """The forward values that backward nodes read, in graph order (constants excluded: they cost
    nothing to have on both sides)."""
    read = {n for node in graph.nodes if is_backward(node) and node.op is Opcode.CALL_FUNCTION
            for n in node.all_input_nodes}
    return [n for n in graph.nodes if n in read and not is_backward(n) and n.op is not Opcode.GET_ATTR]


@dataclass
class JointTrace:
    """A joint graph and its split point. The module takes the primals then the tangents and returns
    ``(result, gradients)``, one gradient (or None) per primal that requires grad."""

    module: GraphModule
    primals: tuple[str, ...]
    tangents: tuple[str, ...]
    saved: tuple[str, ...]

    @property
    def graph(self) -> Graph:
        return self.module.graph


def differentiate(tracer: Tracer, result: Any, inputs: list[Tensor]) -> tuple:
    """Inside ``tracer.running()``: the gradients of ``result``'s tensors that require grad with respect
    to ``inputs``, as the engine computes them, each output's incoming gradient a tangent placeholder
    (``phase="backward"``, as every node the engine's ops add)."""
    outputs = [t for t in iter_leaves(result, Tensor) if t._requires_grad]
    tangents = [tracer.placeholder(f"tangent_{i}", Tensor._make(np.ones_like(t._data)), phase=BACKWARD)
                for i, t in enumerate(outputs)]
    return grad(outputs, inputs, tangents, allow_unused=True) if outputs and inputs else ()


def with_unit_tangents(joint: Graph) -> Graph:
    """A copy of a joint graph whose tangents (the gradients arriving at its outputs) are constants of
    1: one graph computing the result and, for a scalar loss, its gradients as ``loss.backward()``
    would (``jitgrad.compile`` runs it as one kernel and scales by whatever gradient arrives)."""
    graph, remap = Graph(), {}
    for node in joint.nodes:
        if node.op is Opcode.PLACEHOLDER and is_backward(node):
            remap[node] = graph.get_attr(Tensor._make(np.ones(node.meta["shape"], node.meta["dtype"])),
                                         f"{node.name}_unit")
        else:
            remap[node] = graph.node_copy(node, remap)
    return graph


def trace_joint(fn: Callable[..., Any], *example_args: Any) -> JointTrace:
    """Traces ``fn`` and the backward of its outputs that require grad with respect to every tensor
    argument that requires grad; one tangent placeholder per differentiated output."""
    tracer, call_args = start_trace(fn, example_args)
    primals = tuple(p.name for p in tracer.graph.placeholders)
    wanted = [a for a in call_args if isinstance(a, Tensor) and a._requires_grad]
    with tracer.running():
        result = fn(*call_args)
        grads = differentiate(tracer, result, wanted)
    tracer.graph.output((tracer.as_arg(result), tuple(tracer.as_arg(g) for g in grads)))
    module = GraphModule(tracer.graph)
    tangent_names = tuple(p.name for p in module.graph.placeholders if is_backward(p))
    return JointTrace(module, primals, tangent_names, tuple(n.name for n in saved_values(module.graph)))


__all__ = ["JointTrace", "differentiate", "is_backward", "saved_values", "trace_joint", "with_unit_tangents"]
