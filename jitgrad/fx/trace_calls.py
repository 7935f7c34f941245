"""``fx.trace``: a function's call traced into a ``GraphModule`` that takes its tensor arguments (the
``Tracer`` does the recording; ``start_trace`` is its set-up, shared with ``trace_joint``)."""
from __future__ import annotations

from typing import Any, Callable

from ..signatures import positional_names
from ..tensor import Tensor
from .graph_module import WRITES_GRAD, GraphModule
from .tracer import Tracer


def start_trace(fn: Callable, example_args: tuple) -> tuple[Tracer, list[Any]]:
    """A tracer with one placeholder per tensor argument; other arguments are passed through as they
    are, so the graph is specialised to them and takes only the tensors."""
    tracer = Tracer()
    call_args = [tracer.placeholder(name, arg) if isinstance(arg, Tensor) else arg
                 for name, arg in zip(positional_names(fn, len(example_args)), example_args)]
    return tracer, call_args


def trace(fn: Callable[..., Any], *example_args: Any) -> GraphModule:
    """Captures ``fn(*example_args)`` as a ``GraphModule`` taking ``fn``'s tensor arguments.

    A ``backward()`` inside ``fn`` is captured with it: gradients it writes into ``.grad`` of the
    arguments become outputs, and calling the module writes them into ``.grad`` of its arguments."""
    tracer, call_args = start_trace(fn, example_args)
    with tracer.running():
        result = fn(*call_args)
    value = tracer.as_arg(result)
    tensors = [arg for arg in call_args if isinstance(arg, Tensor)]
    grads = {node.name: tracer.node_of(arg._grad) for arg, node in zip(tensors, tracer.graph.placeholders)
             if arg._grad is not None}
    if grads:
        tracer.graph.output((value, grads)).meta[WRITES_GRAD] = True
    else:
        tracer.graph.output(value)
    return GraphModule(tracer.graph)


__all__ = ["start_trace", "trace"]
