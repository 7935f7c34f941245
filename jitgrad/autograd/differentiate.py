"""``backward`` and ``grad``: check what the user asked for, then hand it to the engine."""
from __future__ import annotations

import warnings
from itertools import repeat
from operator import is_
from typing import Sequence, Union

import numpy as np

from ..device import to_device
from ..tensor import Tensor
from . import engine, provided
from .graph import Edge, GradientEdge, gradient_edge

Tensors = Union[Tensor, Sequence[Tensor]]
Inputs = Union[Tensor, GradientEdge, Sequence[Union[Tensor, GradientEdge]]]


def _as_tuple(value) -> tuple:
    if value is None:
        return ()
    if isinstance(value, (Tensor, GradientEdge)):
        return (value,)
    return tuple(value)


def _on_device_of(tensor: Tensor, values: np.ndarray) -> Tensor:
    """A tensor of ``values`` on ``tensor``'s device (a seed or a materialised zero gradient)."""
    return Tensor._make(values if type(tensor._data) is np.ndarray else to_device(values))


def _make_grads(outputs: tuple[Tensor, ...], grad_outputs: tuple) -> list[Tensor]:
    """The seed gradient of each output: ones for a scalar output, else the one given, checked."""
    if grad_outputs and len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad_outputs has {len(grad_outputs)} entries but there are {len(outputs)} "
                           "outputs; give one gradient (or None) per output")
    grads = []
    for i, out in enumerate(outputs):
        grad = grad_outputs[i] if grad_outputs else None
        if grad is None:
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs (output "
                                   f"{i} has shape {tuple(out._data.shape)}; pass gradient= of that shape)")
            data = out._data  # np.array, not np.ones: a loss's seed without numpy's Python frame
            seed = np.array(1, data.dtype) if data.ndim == 0 else np.ones(data.shape, data.dtype)
            grads.append(_on_device_of(out, seed))
            continue
        if not isinstance(grad, Tensor):
            grad = _on_device_of(out, np.asarray(grad, dtype=out._data.dtype))
        if grad._data.shape != out._data.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                               f"{tuple(grad._data.shape)} and output[{i}] has a shape of "
                               f"{tuple(out._data.shape)}.")
        if grad._data.dtype.kind != out._data.dtype.kind:
            raise TypeError(f"For complex or floating point outputs the gradient must match: "
                            f"grad_output[{i}] is {grad.dtype!r} but output[{i}] is {out.dtype!r}")
        grads.append(grad)
    return grads


def _root_edges(outputs: tuple[Tensor, ...]) -> list[Edge]:
    edges = []
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            raise TypeError(f"output {i} is a {type(out).__name__}, not a Tensor")
        edge = gradient_edge(out)
        if edge is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        edges.append(edge)
    return edges


def _input_edge(value: Tensor | GradientEdge, index: int, accumulate_grad: bool) -> Edge:
    if isinstance(value, GradientEdge):
        return value.node, value.output_nr
    edge = gradient_edge(value)
    if edge is None:
        raise RuntimeError(f"One of the differentiated Tensors (index {index}) does not require grad")
    if accumulate_grad and value._grad_fn is not None:
        value.retain_grad()
    return edge


def backward(tensors: Tensors, grad_tensors: Tensors | None = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Inputs | None = None) -> None:
    """Accumulates the gradients of ``tensors`` into ``.grad`` of the leaves (or of ``inputs`` only)."""
    outputs = _as_tuple(tensors)
    wanted = _as_tuple(inputs)
    if inputs is not None and not wanted:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    grads = _make_grads(outputs, _as_tuple(grad_tensors))
    roots = _root_edges(outputs)
    input_edges = [_input_edge(t, i, True) for i, t in enumerate(wanted)]
    keep_graph = create_graph if retain_graph is None else retain_graph
    engine.execute(roots, grads, keep_graph, create_graph, accumulate_grad=True,
                   outputs=input_edges or None)


def tensor_backward(tensor: Tensor, gradient: Tensor | None, retain_graph: bool | None, create_graph: bool,
                    inputs: Inputs | None) -> None:
    """``tensor.backward(...)``: a loss whose graph is one node before its leaves takes the engine's
    short path (``engine.backward_into_leaves``); anything else is ``backward``."""
    if gradient is None and inputs is None and not create_graph \
            and engine.backward_into_leaves(tensor, bool(retain_graph)):
        return
    backward(tensor, gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)


def grad(outputs: Tensors, inputs: Inputs, grad_outputs: Tensors | None = None,
         retain_graph: bool | None = None, create_graph: bool = False, only_inputs: bool = True,
         allow_unused: bool | None = None, is_grads_batched: bool = False,
         materialize_grads: bool = False) -> tuple[Tensor | None, ...]:
    """The gradients of ``outputs`` with respect to ``inputs``, without touching any ``.grad``; only the
    part of the graph between them runs. With ``is_grads_batched``, each of ``grad_outputs`` has a
    leading batch dimension, and each result one too: a backward per row (PyTorch vmaps it).
    ``only_inputs`` is taken and ignored, as PyTorch does (where it sits, so arguments by position match)."""
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use jitgrad.autograd.backward.", FutureWarning,
                      stacklevel=2)
    outs = (outputs,) if type(outputs) is Tensor else _as_tuple(outputs)  # a loss: no call
    wanted = _as_tuple(inputs)
    if not wanted:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    if is_grads_batched:
        return _batched_grad(outs, wanted, _as_tuple(grad_outputs), retain_graph, create_graph, allow_unused,
                             materialize_grads)
    grads = _make_grads(outs, () if grad_outputs is None else _as_tuple(grad_outputs))
    roots = _root_edges(outs)
    input_edges = []
    append = input_edges.append
    for i, t in enumerate(wanted):  # the parameters of a training step: leaves whose AccumulateGrad is alive
        if isinstance(t, Tensor) and t._grad_fn is None and t._view is None and t._requires_grad:
            ref = t._grad_accumulator
            node = ref() if ref is not None else None
            if node is not None:
                append((node, 0))
                continue
        append(_input_edge(t, i, False))
    keep_graph = create_graph if retain_graph is None else retain_graph
    captured = engine.execute(roots, grads, keep_graph, create_graph, accumulate_grad=False,
                              outputs=input_edges)
    if not any(map(is_, captured, repeat(None))):  # every input reached (compared by identity, in C)
        return tuple(captured)
    results = []
    for i, (value, grad) in enumerate(zip(wanted, captured)):
        if grad is None:
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used "
                                   "in the graph. Set allow_unused=True if this is the desired behavior.")
            if materialize_grads and isinstance(value, Tensor):
                grad = _on_device_of(value, np.zeros(value._data.shape, value._data.dtype))
        results.append(grad)
    return tuple(results)


def _batched_grad(outputs: tuple[Tensor, ...], inputs: tuple, grad_outputs: tuple, retain_graph: bool | None,
                  create_graph: bool, allow_unused: bool, materialize_grads: bool) -> tuple[Tensor | None, ...]:
    """``grad(..., is_grads_batched=True)``: one ``grad`` per row of the batched ``grad_outputs`` (the
    graph kept until the last), each input's rows stacked."""
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad_outputs has {len(grad_outputs)} entries but there are {len(outputs)} "
                           "outputs; with is_grads_batched=True give one batched gradient per output")
    sizes = []
    for i, (out, batched) in enumerate(zip(outputs, grad_outputs)):
        shape = tuple(batched._data.shape) if isinstance(batched, Tensor) else ()
        if shape[1:] != tuple(out._data.shape) or not shape:
            raise RuntimeError("If `is_grads_batched=True`, we interpret the first dimension of each grad_output "
                               "as the batch dimension. The sizes of the remaining dimensions are expected to "
                               "match the shape of corresponding output, but a mismatch was detected: "
                               f"grad_output[{i}] has a shape of {shape} and output[{i}] has a shape of "
                               f"{tuple(out._data.shape)}.")
        sizes.append(shape[0])
    if len(set(sizes)) > 1:
        raise ValueError(f"is_grads_batched=True: every grad_output needs the same batch size, got sizes {sizes}")
    rows = [grad(outputs, inputs, [g[b] for g in grad_outputs],
                 retain_graph=True if b < sizes[0] - 1 else retain_graph, create_graph=create_graph,
                 allow_unused=allow_unused, materialize_grads=materialize_grads) for b in range(sizes[0])]
    if not rows:  # an empty batch: nothing ran, every result is empty
        return tuple(_on_device_of(t, np.zeros((0,) + t._data.shape, t._data.dtype)) for t in inputs)
    return tuple(None if column[0] is None else provided.stack(list(column)) for column in zip(*rows))
