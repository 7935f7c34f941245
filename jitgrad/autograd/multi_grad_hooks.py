"""``register_multi_grad_hook``: one hook over the gradients of several tensors in one backward."""
from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

from ..tensor import Tensor
from . import engine
from .graph import gradient_edge


class MultiHandle:
    """Removes the tensor hooks a multi-grad hook installed."""

    def __init__(self, handles: list) -> None:
        self._handles = handles

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()


def _will_compute(task: engine.GraphTask, tensor: Tensor) -> bool:
    """Whether the running backward will produce a gradient for ``tensor``."""
    edge = gradient_edge(tensor)
    if edge is None or edge[0] not in task.dependencies:
        return False
    info = task.exec_info.get(edge[0]) if task.exec_info else None
    return not task.exec_info or (info is not None and info.should_execute())


def register_multi_grad_hook(tensors: Sequence[Tensor], fn: Callable[..., Any], *,
                             mode: str = "all") -> MultiHandle:
    """``mode="all"``: ``fn(grads)`` once per backward, after every gradient among ``tensors`` that this
    backward computes (None for the others). ``mode="any"``: ``fn(grad)`` with the first of them."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    pending: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def hook_for(index: int) -> Callable[[Tensor], None]:
        def hook(grad: Tensor) -> None:
            task = engine.current_graph_task()
            if mode == "any":
                if task not in pending:
                    pending[task] = True
                    fn(grad)
                return
            if task not in pending:
                expected = sum(_will_compute(task, t) for t in tensors)
                pending[task] = [expected, [None] * len(tensors)]
            state = pending[task]
            state[1][index] = grad
            state[0] -= 1
            if state[0] == 0:
                fn(list(state[1]))
        return hook

    return MultiHandle([t.register_hook(hook_for(i)) for i, t in enumerate(tensors) if t.requires_grad])
