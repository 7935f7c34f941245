"""``describe_pure_backward``: a backward call's graph as a comparable key, when running it can run no
user code.

``jitgrad.compile`` traces a function twice, and the second trace exists to catch values no guard sees
(``random.random()``, a counter) that differ between two runs of the user's Python. In a backward such a
value can only come from user code: a hook of any kind, ``retain_grad``, a custom ``Function``'s
backward, a saved-tensor hook's unpack, a tensor subclass's operator. A registry node's derivative is a
pure function of its saved values and attributes, which the forward of the trace already checked. So
when two traces make a backward call whose graphs have the same key, and no node of either can run
user code, the second trace may take the first's results for that call instead of running it
(``fx/backward_calls.py``). The key is what decides which derivative ops the engine runs and in which
order: every node reached from the roots and the ``inputs`` (breadth first, numbered as found), each
with the label the caller gives it (a tracer's node of the op that made it, or of a leaf), its class,
whether its saved values were freed, its edges by number, and for a leaf whether (and as what) its
``.grad`` is set; then the seeds' labels and the call's flags. Nodes made in the same order by the
same ops get the same relative sequence numbers, so the engine runs them in the same order.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..dtypes import get_default_dtype
from ..tensor import Tensor
from . import anomaly_mode, forward_ad, grad_mode
from .graph import AccumulateGrad, Edge, Node
from .recording import SavingNode
from .saved_tensor import FREED, SavedTensor


class PureBackward:
    """A backward call's graph (see the module docstring): ``key`` to compare, ``nodes`` in the order
    the key numbers them, ``leaves`` the numbers of its AccumulateGrad nodes."""

    __slots__ = ("key", "nodes", "leaves")

    def __init__(self, key: tuple, nodes: list[Node], leaves: list[int]) -> None:
        self.key, self.nodes, self.leaves = key, nodes, leaves

    def freed(self) -> list[int]:
        """The numbers of the nodes whose saved values are freed now."""
        return [i for i, fn in enumerate(self.nodes) if isinstance(fn, SavingNode) and fn.saved_values is FREED]


def _saved_plain(value: Any, tensor_types: tuple[type, ...]) -> bool:
    """Whether a saved value gives itself back without user code: no unpack hook, no tensor subclass."""
    if type(value) is SavedTensor:
        return value._unpack_hook is None and (value._tensor is None or type(value._tensor) in tensor_types)
    if isinstance(value, Tensor):
        return type(value) in tensor_types
    if type(value) is tuple:
        return all(_saved_plain(v, tensor_types) for v in value)
    return True


def describe_pure_backward(roots: Sequence[Edge], grads: Sequence[Tensor], outputs: Sequence[Edge] | None,
                           flags: tuple, label_node: Callable[[Node], Any], label_tensor: Callable[[Tensor], Any],
                           own_hooks: frozenset[int], tensor_types: tuple[type, ...]) -> PureBackward | None:
    """The key of a backward from ``roots`` seeded with ``grads`` (to ``outputs``, ``autograd.grad``'s
    inputs), or None where running it could run user code or a node has no label. ``label_node`` names
    a registry node, ``label_tensor`` a leaf, its ``.grad`` or a seed (None: unknown); the hooks whose
    ids are in ``own_hooks`` are the caller's and run no user code; a saved tensor must be of one of
    ``tensor_types``. ``flags`` (the call's own) go into the key as they are."""
    if anomaly_mode.state.enabled or forward_ad.state.level is not None:
        return None
    numbers: dict[Node, int] = {}
    nodes: list[Node] = []
    for edge in (*roots, *(outputs or ())):
        if edge is not None and edge[0] not in numbers:
            numbers[edge[0]] = len(nodes)
            nodes.append(edge[0])
    # the settings a derivative could read: the default dtype, and the modes the call was made in
    key: list[Any] = [flags, get_default_dtype(), grad_mode.is_grad_enabled(), grad_mode.is_inference_mode_enabled()]
    leaves: list[int] = []
    position = 0
    while position < len(nodes):
        fn = nodes[position]
        if type(fn) is AccumulateGrad:
            entry = _leaf_entry(fn, label_tensor, own_hooks)
            if entry is None:
                return None
            leaves.append(position)
        elif isinstance(fn, SavingNode):
            label = label_node(fn)
            if label is None or fn.hooked():
                return None
            values = fn.saved_values
            if values is not FREED and not _saved_plain(values, tensor_types):
                return None
            edges = []
            for edge in fn._next_edges:
                if edge is None:
                    edges.append(None)
                    continue
                child = edge[0]
                number = numbers.get(child)
                if number is None:
                    number = numbers[child] = len(nodes)
                    nodes.append(child)
                edges.append((number, edge[1]))
            entry = (label, type(fn), values is FREED, tuple(edges))
        else:  # a custom Function's node, a compiled function's: its backward is not the registry's
            return None
        key.append(entry)
        position += 1
    for grad in grads:
        label = label_tensor(grad)
        if label is None:  # a seed the trace has not seen (autograd.grad's ones): compared by value
            data = grad._data
            label = (type(grad), str(data.dtype), data.shape, data.tobytes())
        key.append(label)
    key.append(tuple((numbers[e[0]], e[1]) for e in outputs or ()))
    return PureBackward(tuple(key), nodes, leaves)


def _leaf_entry(fn: AccumulateGrad, label_tensor: Callable[[Tensor], Any], own_hooks: frozenset[int]) -> tuple | None:
    variable = fn.variable
    if fn._tensor_pre_hooks or fn._retains_grad or variable._hooks or variable._post_accumulate_grad_hooks \
            or not variable._requires_grad:
        return None
    for hooks in (fn._pre_hooks, fn._post_hooks):
        if hooks and any(id(hook) not in own_hooks for hook in hooks.values()):
            return None
    label = label_tensor(variable)
    if label is None:
        return None
    grad = variable._grad
    if grad is None:
        return (label, None)
    grad_label = label_tensor(grad)
    return None if grad_label is None else (label, grad_label)


__all__ = ["PureBackward", "describe_pure_backward"]
