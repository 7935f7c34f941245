"""The backward graph: ``Node``s joined by ``Edge``s, as in PyTorch's ``torch/csrc/autograd``.

Each node is the backward of one forward op. Its ``next_edges`` point at the nodes of the op's inputs
(an ``Edge``, the pair ``(function, input_nr)``: gradient slot ``input_nr`` of ``function``); leaves end in their
``AccumulateGrad``. Nodes hold no reference to the tensors they produced, so freeing a graph is
freeing its nodes.
"""
from __future__ import annotations

import functools
import itertools
import threading
import weakref
from typing import Any, Callable, Iterable, NamedTuple, Sequence

import numpy as np

from . import anomaly_mode, grad_mode
from ..device import CPU, copy_array, copy_into, device, device_of
from ..hooks import RemovableHandle
from ..shapes import is_dense
from ..tensor import Tensor, is_tensor
from .versions import increment_version, refresh_view

MAX_SEQUENCE_NR = 2**64 - 1


# An edge: gradient slot ``input_nr`` of node ``function``, as the pair ``(function, input_nr)`` (what
# ``next_functions`` shows). A plain tuple: a graph makes one per input of every op it records, and a
# NamedTuple costs four times as much to make (W1 records 150 a step).
Edge = tuple["Node", int]


class GradientEdge(NamedTuple):
    """The public spelling of an edge: output ``output_nr`` of ``node`` (PyTorch's GradientEdge)."""
    node: "Node"
    output_nr: int


class InputMetadata(NamedTuple):
    """What a gradient arriving at a node's slot must look like: its shape, dtype and device (the
    device of the forward tensor it is the gradient of, where the engine sums and sends it)."""
    shape: tuple[int, ...]
    dtype: np.dtype
    device: device = CPU


# What a node's ``array_formula`` answers for a node or gradients it does not fit.
FORMULA_MISS = object()


class _SequenceCounter(threading.local):
    def __init__(self) -> None:
        self.counter = itertools.count()


_sequence = _SequenceCounter()


class Node:
    """The backward of one forward op. ``apply(grads)`` maps the gradients of the op's outputs to the
    gradients of its inputs, one per next edge."""

    __slots__ = ("_next_edges", "_sequence_nr", "_topological_nr", "_input_metadata", "_metadata",
                 "_pre_hooks", "_post_hooks", "_tensor_pre_hooks", "_retains_grad", "__weakref__")

    def __init__(self, next_edges: Sequence[Edge | None] = (), sequence_nr: int | None = None) -> None:
        """Every op that records a node makes one, so only what the engine reads is set here; the
        topological number is computed when asked for (it never changes: edges are fixed at creation)."""
        self._next_edges = next_edges if type(next_edges) is tuple else tuple(next_edges)
        self._sequence_nr = next(_sequence.counter) if sequence_nr is None else sequence_nr
        self._topological_nr = None
        self._input_metadata: Sequence[InputMetadata] = ()
        self._metadata = None
        if anomaly_mode.state.enabled:
            anomaly_mode.record_creation(self.metadata)
        self._pre_hooks = None
        self._post_hooks = None
        self._tensor_pre_hooks = None
        self._retains_grad = None

    def hooked(self) -> bool:
        """Whether a hook (or ``retain_grad``) could see, or change, what this node receives."""
        return bool(self._pre_hooks or self._post_hooks or self._tensor_pre_hooks or self._retains_grad)

    def gradients_conform(self) -> bool:
        """Whether the gradients the last ``apply`` returned have, by construction, one entry per next
        edge and each its slot's shape, dtype and device (a compiled function's, computed for exactly
        those inputs), so that ``engine.validate_outputs`` has nothing to check or convert."""
        return False

    def apply_unobserved(self, grads: list) -> list | None:
        """What ``apply(grads, None)`` returns with grad mode off, for a node that can compute it without
        running an op, a hook or other user code, or None (the default) for one that cannot. The engine
        asks only for a backward of this node into leaves that no hook watches (its one-node path):
        nothing can then see grad mode, the backward depth or the graph task, so the engine skips
        setting them (two thread-local switches and two departure counts: a tenth of a compiled
        loss's ``backward()``). The gradients must conform (``gradients_conform``)."""
        return None

    def hands_over_gradients(self) -> bool:
        """Whether the gradients the last ``apply`` returned are fresh arrays that nothing else
        references once the node has released its variables (and no two share memory), so that an
        AccumulateGrad may keep them as they are rather than copy them."""
        return False

    # ---- introspection (PyTorch's Python API) ------------------------------------------------------
    def name(self) -> str:
        return type(self).__name__

    @property
    def next_functions(self) -> tuple[tuple["Node | None", int], ...]:
        return tuple(e if e else (None, 0) for e in self._next_edges)

    @property
    def next_edges(self) -> tuple[Edge | None, ...]:
        """The edges ``next_functions`` shows, as they are (``None`` for an input needing no gradient):
        what a node's ``apply`` reads on every backward, so no tuples are built for it."""
        return self._next_edges

    def sequence_nr(self) -> int:
        return self._sequence_nr

    def topological_nr(self) -> int:
        """0 for nodes with no next nodes (AccumulateGrad), else 1 + the largest of the next nodes'.
        A node with a smaller number can never reach one with a larger number. Computed on first use,
        walking down to the nodes that know theirs (iteratively: graphs can be deeper than recursion)."""
        if self._topological_nr is None:
            stack = [self]
            while stack:
                node = stack[-1]
                unknown = [e[0] for e in node._next_edges if e is not None and e[0]._topological_nr is None]
                if unknown:
                    stack.extend(unknown)
                    continue
                stack.pop()
                node._topological_nr = max((e[0]._topological_nr + 1 for e in node._next_edges if e is not None),
                                           default=0)
        return self._topological_nr

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def num_inputs(self) -> int:
        return len(self._input_metadata)

    def input_metadata(self, index: int) -> InputMetadata:
        return self._input_metadata[index]

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"

    def __call__(self, *grad_outputs: "Tensor | None") -> "Tensor | None | tuple":
        """PyTorch's ``node(*grad_outputs)``: the node run on one gradient per output, outside backward and
        in the caller's grad mode (so its results may have history), without hooks: its gradients for
        the next edges, one tensor for one edge, else a tuple (an AccumulateGrad, summing into
        ``.grad``, gives ``()``)."""
        if len(grad_outputs) != self.num_inputs():
            raise TypeError(f"expected {self.num_inputs()} arguments, got {len(grad_outputs)} instead")
        grads = self.apply(list(grad_outputs), None)
        return grads[0] if len(grads) == 1 else tuple(grads)

    # ---- hooks -------------------------------------------------------------------------------------
    def register_prehook(self, hook: Callable[[tuple], Any]) -> RemovableHandle:
        """``hook(grad_outputs)`` runs before the node; a returned tuple replaces ``grad_outputs``."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        return RemovableHandle(self._pre_hooks, hook)

    def register_hook(self, hook: Callable[[tuple, tuple], Any]) -> RemovableHandle:
        """``hook(grad_inputs, grad_outputs)`` runs after the node; a returned tuple replaces
        ``grad_inputs`` (the gradients the node computed for its forward inputs)."""
        if self._post_hooks is None:
            self._post_hooks = {}
        return RemovableHandle(self._post_hooks, hook)

    def _register_tensor_pre_hook(self, output_nr: int, hook: Callable) -> RemovableHandle:
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        return RemovableHandle(self._tensor_pre_hooks.setdefault(output_nr, {}), hook)

    def _retain_grad(self, output_nr: int, tensor_ref: "weakref.ref[Tensor]") -> None:
        if self._retains_grad is None:
            self._retains_grad = {}
        self._retains_grad[output_nr] = tensor_ref

    def _tensor_hooks_by_output(self) -> Iterable[tuple[int, dict]]:
        """``(output_nr, hooks)`` of the outputs with tensor hooks, in the order of their first hook."""
        return self._tensor_pre_hooks.items() if self._tensor_pre_hooks else ()

    def _retained_tensors(self) -> list["Tensor"]:
        """The live non-leaf tensors whose ``.grad`` this node's inputs fill (``retain_grad``)."""
        if not self._retains_grad:
            return []
        return [t for t in (ref() for ref in self._retains_grad.values()) if t is not None]

    # ---- execution ---------------------------------------------------------------------------------
    def apply(self, grads: list["Tensor | None"], needed: Sequence[bool] | None) -> list["Tensor | None"]:
        """Gradients for the next edges; ``needed[i]`` says whether edge ``i`` wants one (``None``:
        every edge that exists does)."""
        raise NotImplementedError

    def apply_arrays(self, grads: list[np.ndarray | None]) -> list[np.ndarray | None] | None:
        """``apply`` over arrays, for the engine's fast path (``fast_backward``): the gradients for the
        next edges. None: this node runs only in the engine (a custom Function's backward may run
        anything, hooks and backward included)."""
        return None

    def array_formula(self, grads: list[np.ndarray]) -> Callable[[list, "Node"], Any] | None:
        """The function ``apply_arrays(grads)`` has just run for this node, as ``f(grads, node)``, for a
        program that runs graphs like this one again (``backward_replay``): on any node it answers what
        ``apply_arrays`` would, or ``FORMULA_MISS`` where it does not fit that node or those gradients.
        None where there is no such function. The function may carry ``routed``: the same function
        for gradients known to be as many, and of the shapes and dtypes, as ``grads`` (a program
        checks them as it routes them), which need not check them again."""
        return None

    def release_variables(self) -> None:
        """Frees what the node saved for backward (called after a backward without retain_graph)."""


class GraphRoot(Node):
    """The node a backward call starts from: it hands the initial gradients to the roots."""

    __slots__ = ("_grads",)

    def __init__(self, roots: Sequence[Edge], grads: Sequence["Tensor"]) -> None:
        super().__init__(roots, sequence_nr=MAX_SEQUENCE_NR)
        self._grads = list(grads)

    def apply(self, grads, needed):
        return list(self._grads)


class AccumulateGrad(Node):
    """The node of a leaf: sums arriving gradients into ``variable.grad``. One per leaf, shared by
    every use of the leaf, and run as soon as it is ready (largest sequence number)."""

    __slots__ = ("variable", "in_place")

    # Held while ``.grad`` is read and replaced, so that two threads' backwards into one leaf add up. One
    # lock for every leaf: a training step makes its leaves' AccumulateGrads anew (a lock each was 70 ns
    # of the 500 one costs), and a sum into ``.grad`` is short; reentrant, as an add under
    # ``create_graph`` runs an op.
    _lock = threading.RLock()

    def __init__(self, variable: "Tensor") -> None:
        """``Node.__init__`` written out: a leaf's AccumulateGrad lives as long as a graph using the leaf,
        so a training loop makes one per parameter every step (as PyTorch does). A CPU leaf shares
        its slot's metadata with the nodes of its shape (``_one_cpu_slot``)."""
        self._next_edges = ()
        self._sequence_nr = MAX_SEQUENCE_NR
        self._topological_nr = self._metadata = None
        self._pre_hooks = self._post_hooks = self._tensor_pre_hooks = self._retains_grad = None
        self.variable = variable
        self.in_place = True   # a tracer turns it off: it records each sum as a new value (fx.Tracer)
        data = variable._data
        if type(data) is np.ndarray:
            slots = _ONE_CPU_SLOT.get((data.shape, data.dtype))
            self._input_metadata = slots if slots is not None else _one_cpu_slot(data.shape, data.dtype)
        else:
            self._input_metadata = (new_input_metadata((data.shape, data.dtype, device_of(data))),)
        if anomaly_mode.state.enabled:
            anomaly_mode.record_creation(self.metadata)

    def _tensor_hooks_by_output(self) -> Iterable[tuple[int, dict]]:
        return ((0, self.variable._hooks),) if self.variable._hooks else ()

    def hooked(self) -> bool:
        variable = self.variable
        return bool(self._pre_hooks or self._post_hooks or self._tensor_pre_hooks or self._retains_grad
                    or variable._hooks or variable._post_accumulate_grad_hooks)

    def apply(self, grads, needed):
        grad = grads[0]
        if grad is None:
            return []
        if not self.variable._requires_grad:  # requires_grad_(False) since the graph was recorded
            return self._skip_accumulation()
        if grad_mode.state.grad_enabled:  # create_graph: the accumulated gradient stays differentiable
            with self._lock:  # a first one is a (recorded) copy, as PyTorch's: the incoming gradient may be
                old = self.variable._grad  # another leaf's too, or a read-only broadcast (until 2026-11-28)
                if old is None:
                    old = grad.clone()
                    if type(old._data) is np.ndarray and old._data.strides != self.variable._data.strides:
                        old = _laid_out_like(old, self.variable._data)  # ``first_grad``'s contract, recorded
                    self.variable._grad = old
                else:
                    self.variable._grad = old + grad
        else:
            self._accumulate(grad, copy=True)
        if self.variable._post_accumulate_grad_hooks:
            self._call_post_accumulate_grad_hooks()
        return []

    def accumulate(self, grad: "Tensor", owned: bool) -> None:
        """``apply`` with grad mode off, for one gradient, without reading grad mode (the engine's
        one-node path may not have switched it). An ``owned`` gradient, one nothing else references
        (see ``Node.hands_over_gradients``), becomes a first ``.grad`` without the copy (PyTorch's
        AccumulateGrad steals it too)."""
        if not self.variable._requires_grad:
            self._skip_accumulation()
            return
        self._accumulate(grad, copy=not owned)
        if self.variable._post_accumulate_grad_hooks:
            self._call_post_accumulate_grad_hooks()

    def _skip_accumulation(self) -> list:
        """For a leaf made not to require grad after the graph using it was recorded: PyTorch's
        AccumulateGrad leaves ``.grad`` as it is (a layer frozen between forward and backward gets no
        gradient), and its post-accumulate-grad hooks still run."""
        if self.variable._post_accumulate_grad_hooks:
            self._call_post_accumulate_grad_hooks()
        return []

    def _call_post_accumulate_grad_hooks(self) -> None:
        """``Tensor.register_post_accumulate_grad_hook``'s hooks, given the leaf once ``.grad`` holds the
        sum; they may read or change ``.grad`` but return nothing (PyTorch accepts a tensor and
        ignores it)."""
        variable = self.variable
        for hook in list(variable._post_accumulate_grad_hooks.values()):
            result = hook(variable)
            if result is not None and not is_tensor(result):
                raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")

    def _accumulate(self, grad: "Tensor", copy: bool) -> None:
        variable = self.variable
        with self._lock:
            old = variable._grad
            if type(grad._data) is not np.ndarray:  # a CUDA gradient: summed by a kernel, copied on the GPU
                if old is None:
                    variable._grad = type(grad)._make(copy_array(grad._data)) if copy else grad
                elif not (self.in_place and add_in_place_on_device(old, grad)):
                    variable._grad = old + grad
            elif old is not None:
                if not (self.in_place and add_in_place(old, grad._data)):
                    variable._grad = type(grad)._make(add_arrays(old._data, grad._data))
            else:
                data = first_grad(grad._data, variable._data, copy)
                variable._grad = grad if data is grad._data else type(grad)._make(data)


def add_in_place(grad: "Tensor", new: np.ndarray) -> bool:
    """``grad += new`` into the existing ``.grad``'s memory, as PyTorch's AccumulateGrad adds with grad
    mode off: whoever holds the ``.grad`` tensor (``g = p.grad`` before another backward, an optimizer
    that kept it) sees the sum, and its version counter moves. False, and nothing done, where the
    array cannot take it (read-only, another shape or dtype, memory shared with ``new``): the caller
    makes a new ``.grad`` then."""
    old = grad._data
    if type(old) is not np.ndarray or not old.flags.writeable or old.shape != new.shape \
            or old.dtype != new.dtype or np.may_share_memory(old, new):
        return False
    np.add(old, new, out=old)
    increment_version(grad)
    return True


def add_in_place_on_device(grad: "Tensor", new: "Tensor") -> bool:
    """``add_in_place`` for a CUDA ``.grad``: the sum is made by a kernel and written back into the
    ``.grad``'s memory, so a ``.grad`` held across backwards sees it there too, as on the CPU. False,
    and nothing done, where the old ``.grad`` is on another device or of another shape or dtype."""
    old = grad._data
    if type(old) is np.ndarray or tuple(old.shape) != tuple(new._data.shape) or old.dtype != new._data.dtype:
        return False
    copy_into(old, (grad + new)._data)
    increment_version(grad)
    return True


def _laid_out_like(grad: "Tensor", variable: np.ndarray) -> "Tensor":
    """``grad`` copied by recorded ops into ``variable``'s layout where that is gapless, else row-major:
    ``first_grad`` under ``create_graph`` (until 2026-11-28 a column-major leaf's was row-major there)."""
    if variable.ndim < 2 or variable.flags.c_contiguous or not is_dense(variable):
        return grad.contiguous()
    outermost_first = sorted(range(variable.ndim), key=lambda d: -abs(variable.strides[d]))
    return grad.permute(*outermost_first).contiguous().permute(*np.argsort(outermost_first).tolist())


def first_grad(grad: np.ndarray, variable: np.ndarray, copy: bool) -> np.ndarray:
    """The array a leaf's first ``.grad`` holds: ``grad`` itself (or a copy, where something else may
    hold it), in the leaf's own layout, PyTorch's layout contract. A Linear weight's gradient arrives as
    the transpose of the product that made it: as ``.grad`` it was not contiguous, so ``p.grad.view(-1)``
    raised and ``p.grad.reshape(-1)`` was a copy that writes did not reach (before 2026-11-28). A leaf
    whose layout has gaps or repeats (a stepped slice, an expanded array) gets a row-major ``.grad``, as
    in PyTorch (until 2026-11-28 numpy's order "K" gave an expanded leaf a column-major one)."""
    if grad.size <= 1 or grad.shape != variable.shape:
        return np.array(grad, copy=True) if copy else grad
    # a gapless leaf that is not row-major (a transpose) keeps its strides; any other gets row-major (a
    # C-contiguous leaf, nearly every one, without is_dense's walk of the strides)
    keeps_strides = not variable.flags.c_contiguous and is_dense(variable)
    if grad.strides == variable.strides if keeps_strides else grad.flags.c_contiguous:
        return np.array(grad, copy=True) if copy else grad
    laid_out = np.empty_like(variable, dtype=grad.dtype) if keeps_strides else np.empty(variable.shape, grad.dtype)
    laid_out[...] = grad
    return laid_out


def add_arrays(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a + b`` as an array: numpy answers a scalar for two 0-d arrays, which no tensor may hold."""
    out = a + b
    return out if type(out) is np.ndarray else np.asarray(out)


def _device_of(data: object) -> device:
    return CPU if type(data) is np.ndarray else device_of(data)


def input_metadata_of(data: Any) -> InputMetadata:
    """The metadata of a gradient slot for a tensor holding ``data``: its shape, dtype and device."""
    return new_input_metadata((data.shape, data.dtype, _device_of(data)))


# NamedTuple's own constructor is Python code; this builds the same tuples from C.
new_input_metadata = functools.partial(tuple.__new__, InputMetadata)


def set_history(outputs: Sequence["Tensor"], node: Node) -> None:
    """Records ``node`` as the backward of ``outputs`` (PyTorch's ``set_history``): each output takes
    the node's next gradient slot, which expects a gradient of the output's shape and dtype, and a
    floating output becomes that slot's tensor (``grad_fn``, ``output_nr``, requires grad); any other
    (an index) keeps its slot but carries no gradient. The one way a forward's outputs get their
    ``grad_fn``: registry ops and compiled functions both record through here."""
    metadata = node._input_metadata
    if len(outputs) == 1 and not metadata:  # most ops: one output, on the CPU, floating (it records only then)
        output = outputs[0]
        data = output._data
        if type(data) is np.ndarray and data.dtype.kind == "f":
            output._requires_grad = True
            output._grad_fn = node
            output._output_nr = 0
            slots = _ONE_CPU_SLOT.get((data.shape, data.dtype))
            node._input_metadata = slots if slots is not None else _one_cpu_slot(data.shape, data.dtype)
            return
    added = []
    for output in outputs:
        data = output._data
        if data.dtype.kind == "f":
            output._requires_grad = True
            output._grad_fn = node
            output._output_nr = len(metadata) + len(added)
        added.append(new_input_metadata((data.shape, data.dtype,
                                         CPU if type(data) is np.ndarray else device_of(data))))
    node._input_metadata = tuple(metadata) + tuple(added)


_ONE_CPU_SLOT: dict[tuple, tuple[InputMetadata]] = {}


def _one_cpu_slot(shape: tuple[int, ...], dtype: np.dtype) -> tuple[InputMetadata]:
    """The input metadata of a node with one CPU output: one shared tuple per shape and dtype, since
    every object a node allocates is one more for the garbage collector to scan while the graph lives.
    Cleared when it grows large."""
    slots = _ONE_CPU_SLOT.get((shape, dtype))
    if slots is None:
        if len(_ONE_CPU_SLOT) > 4096:
            _ONE_CPU_SLOT.clear()
        slots = _ONE_CPU_SLOT[shape, dtype] = (new_input_metadata((shape, dtype, CPU)),)
    return slots


def gradient_edge(tensor: "Tensor") -> Edge | None:
    """Where a gradient for ``tensor`` must be sent: its grad_fn's slot, or its AccumulateGrad."""
    if tensor._view is not None:
        refresh_view(tensor)
    if tensor._grad_fn is not None:
        return tensor._grad_fn, tensor._output_nr
    if tensor._requires_grad:
        return grad_accumulator(tensor), 0
    return None


def grad_accumulator(tensor: "Tensor") -> AccumulateGrad:
    """The leaf's one AccumulateGrad; held weakly by the tensor and strongly by the graph using it."""
    ref = tensor._grad_accumulator
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(tensor)
        tensor._grad_accumulator = weakref.ref(node)
    return node


def get_gradient_edge(tensor: "Tensor") -> GradientEdge:
    """The edge autograd uses for ``tensor``; usable as an input of ``autograd.grad``."""
    edge = gradient_edge(tensor)
    if edge is None:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not "
                           "require gradients")
    return GradientEdge(*edge)

# PyTorch's torch.autograd.graph spells these here too (and increment_version, imported above); they live
# in modules of their own.
from .multi_grad_hooks import register_multi_grad_hook  # noqa: E402,F401
from .mutation_on_saved import allow_mutation_on_saved_tensors  # noqa: E402,F401
from .saved_tensor import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks  # noqa: E402,F401
from .visualize import to_dot  # noqa: E402,F401 - drawing the graph is part of its public API
