"""What a trace did to the tensors lent to it (``fx.borrowing``), read once the function returned: the
changes a compiled call could not make again (a hook registered on an input, ``requires_grad`` changed,
``retain_grad()`` on a returned value), refused, and what a step's program must write back into the
caller's tensors (each input's new ``.grad``, each input written in place or through ``.data``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..fx.node import Node
from ..fx.tracer import Tracer
from ..tensor import Tensor
from .templates import tensor_leaves
from .unsupported import Unsupported

if TYPE_CHECKING:
    from .capture import TraceInputs


def check_retained(tracer: Tracer, result: Any, sources: dict[str, str]) -> None:
    """Hooks registered inside the function are part of what the engine runs, so the trace records
    their ops like any other; but ``retain_grad()`` on a value the function returns would have to fill
    ``.grad`` of the tensor the caller gets, which a compiled call makes anew."""
    for value in tensor_leaves(result):
        if value._retains_grad:
            node = tracer.node_of(value)
            where = sources.get(node.name)
            raise Unsupported("retain_grad() on a value the compiled function returns is not supported: call "
                              "it on the returned tensor instead", where=f"the value computed at {where}" if where else None)


def check_borrowed(tracer: Tracer, borrowed: list[Tensor], differentiated: bool) -> None:
    for tensor in borrowed:
        loan = tracer.loans[id(tensor)]
        if tensor._hooks or tensor._post_accumulate_grad_hooks or \
                tensor._retains_grad != loan.original("_retains_grad"):
            raise Unsupported("a hook registered on an input inside a compiled function is not supported: "
                              "it would stay registered after an eager call; register it outside")
        if tensor._requires_grad != loan.original("_requires_grad"):
            raise Unsupported("the function changes requires_grad of a tensor it was given or reads from "
                              "outside; set it before calling the compiled function")
        if not differentiated:
            continue
        if loan.original("_hooks"):
            raise Unsupported("a tensor the function reads has a hook and the function runs backward inside: "
                              "the compiled backward would skip the hook; run this function eagerly")
        if loan.original("_post_accumulate_grad_hooks"):
            raise Unsupported("a tensor the function reads has a post-accumulate-grad hook (DistributedDataParallel "
                              "all-reduces gradients through these) and the function runs backward inside: the "
                              "compiled backward would skip the hook; compile the loss alone and call "
                              "loss.backward() outside (docs/distributed.md)")
        if loan.original("_grad_fn") is not None and tensor._requires_grad and tensor._grad is not None \
                and tensor._grad is not loan.original("_grad"):
            raise Unsupported("the function runs backward into a tensor that was computed outside it (it has "
                              "a grad_fn): the backward would have to go on into that history; run the "
                              "backward outside, or detach the tensor")


def step_outputs(tracer: Tracer, inputs: "TraceInputs") -> tuple[dict, dict]:
    """The new ``.grad`` of each input (by index) whose gradient changed, and the new value of each
    input written in place or through ``.data``."""
    grads: dict[int, Node | None] = {}
    writes: dict[int, Node] = {}
    for index, (tensor, placeholder) in enumerate(zip(inputs.values, inputs.nodes)):
        if not isinstance(tensor, Tensor):
            continue
        loan = tracer.loans[id(tensor)]
        if loan.written and tensor._data.dtype != loan.original_data.dtype:
            raise Unsupported(f"the function sets .data of a {loan.original_data.dtype} input to a {tensor._data.dtype} "
                              "tensor, which a compiled call would write back in the input's dtype; convert it "
                              "outside the function")
        if not rebound(tracer, tensor, placeholder):
            writes[index] = tracer.writes[placeholder]
        elif placeholder is not None and placeholder in tracer.writes:
            raise Unsupported("the function writes into an input in place and then sets its .data: a compiled call "
                              "gives it one new value, where eager mode leaves the written one in its old memory")
        elif loan.written:   # .data set (after a write too: its value is the last one set)
            writes[index] = tracer.node_of(Tensor._make(tensor._data))
        old, new = loan.original("_grad"), tensor._grad
        if new is old:
            continue
        grads[index] = None if new is None else tracer.node_of(new)
    return grads, writes


def rebound(tracer: Tracer, tensor: Tensor, placeholder: Node | None) -> bool:
    """Whether an input the step changed holds memory set with ``.data = ...`` (eager gives it that
    memory: a view of its old memory keeps the old values) rather than its own memory written in place."""
    return placeholder is None or placeholder not in tracer.writes or \
        tracer.writes[placeholder] is not tracer.bound_node(Tensor._make(tensor._data))


def grads_added_into(tracer: Tracer, inputs: "TraceInputs", grads: dict) -> list[int]:
    """The inputs whose new ``.grad`` eager mode would have summed into the ``.grad`` they had (an
    ``AccumulateGrad`` adding, with grad mode off, into the one the call began with): a call writes
    those into the old tensor's memory, which keeps it, as eagerly."""
    found = []
    for index, node in grads.items():
        tensor = inputs.values[index]
        old = tracer.loans[id(tensor)].original("_grad")
        new = tensor._grad
        if node is None or old is None:
            continue
        while new is not old and id(new) in tracer.added_into:
            new = tracer.added_into[id(new)]
        if new is old:
            found.append(index)
    return found


__all__ = ["check_borrowed", "check_retained", "grads_added_into", "rebound", "step_outputs"]
