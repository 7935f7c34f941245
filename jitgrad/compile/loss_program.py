"""A compiled loss: its forward runs now, its backward when the engine reaches its outputs.

``loss_program`` builds a ``LossProgram`` from the loss's one trace, the joint graph of its forward and
gradients (``capture.py``), split once into a forward and a backward. The program hands the
differentiable outputs one ``CompiledFunctionBackward`` node, recorded as their ``grad_fn`` the way
registry ops record theirs (``autograd.graph.set_history``), whose ``apply`` gives the engine the
gradients of the function's inputs. Two ways to get them:

- *split*: the forward graph saves what the backward needs (``partition_joint``), and ``apply`` runs
  the backward graph for the gradients the engine asks for (one lowered variant per set of needed
  inputs);
- *fused*, for the usual loss (one differentiable output, a 0-d one): one kernel computes the loss and
  its gradients for an incoming gradient of 1 (the joint graph with the tangent made a constant),
  and ``apply`` hands those over, scaled by the gradient that actually arrives (the backward is linear
  in it). ``loss.backward()`` then costs one kernel call, like a compiled whole step. The gradients are
  computed before anyone asks for them, so the program speculates only while it pays: a call whose
  node never runs switches it back to the split forward until a backward runs again.

Under ``create_graph=True`` ``apply`` differentiates an eager re-run of the function instead, so
higher-order gradients are always right.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..autograd import grad_mode
from ..autograd.differentiate import grad as autograd_grad
from ..autograd.graph import Node, gradient_edge, set_history
from ..autograd.versions import version_counter
from ..fx.graph import Graph
from ..fx.joint import with_unit_tangents
from ..fx.node import Opcode, iter_nodes, map_nodes
from ..fx.passes import Partition, partition_joint
from ..fx.passes.dead_code import eliminate_dead_code
from ..random import default_generator
from ..tensor import Tensor
from . import placement
from .backend import Backend
from .capture import Captured
from .compiled_function import InputLayout, Lowered, NumberInputs, arrays_of, as_tensor, no_numbers, run_lowered
from .guards import value_descriptor
from .lowering import lower
from .result_template import Slot, template_filler
from .templates import flatten_output, slots, tensor_leaves, with_tuple_types
from .unsupported import Unsupported


class LossCall:
    """What a loss's backward node keeps of the call that made it: the inputs, the versions of those
    the backward reads (for eager's check that none was changed in place since), and how to run the
    function eagerly again (for ``create_graph``), with the generator state the call drew from, so
    that the re-run draws the call's own random numbers. ``reads_changed`` names what the function
    reads otherwise than the call did (None when nothing does): a re-run reading a tensor rebound
    since, or a number set since, would differentiate another function (until 2026-11-28 it did,
    silently; eager's graph keeps what the call read)."""

    __slots__ = ("fn", "args", "kwargs", "inputs", "watched", "random_state", "reads_changed")

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, inputs: list, saved_inputs: list[int],
                 random_state: np.ndarray | None = None,
                 reads_changed: Callable[[], str | None] | None = None) -> None:
        self.fn, self.args, self.kwargs, self.inputs = fn, args, kwargs, inputs
        self.random_state, self.reads_changed = random_state, reads_changed
        counters = map(version_counter, map(inputs.__getitem__, saved_inputs))
        self.watched = [(counter, counter[0]) for counter in counters]

    def check_versions(self) -> None:
        for counter, version in self.watched:
            if counter[0] != version:
                raise RuntimeError("one of the variables needed for gradient computation has been modified by "
                                   "an inplace operation (an input of a compiled function)")

    def rerun(self) -> Any:
        self.check_versions()
        changed = self.reads_changed() if self.reads_changed is not None else None
        if changed is not None:
            raise RuntimeError(f"{changed} changed between a call of a compiled function and a backward through it "
                               "that runs the function again (create_graph=True, or a backward with no compiled "
                               "form): the re-run would differentiate other values than the call used; change it "
                               "after the backward, or pass the value as an argument")
        return replay(self.fn, self.args, self.kwargs, self.random_state)


def first_change(then: list, now: list) -> int | None:
    """The first position where ``now`` (argument leaves and free values read again) holds another
    tensor or array than ``then``, or another value; None where none does."""
    if len(then) != len(now):
        return min(len(then), len(now))
    for index, (old, new) in enumerate(zip(then, now)):
        if old is new:
            continue
        if isinstance(old, (Tensor, np.ndarray)) or isinstance(new, (Tensor, np.ndarray)) \
                or value_descriptor(old) != value_descriptor(new):
            return index
    return None


def replay(fn: Callable, args: tuple, kwargs: dict, random_state: np.ndarray | None) -> Any:
    """``fn`` run eagerly again, drawing from ``random_state`` (a call's) when it draws, the generator
    left where it was."""
    if random_state is None:
        return fn(*args, **kwargs)
    with default_generator.replaying(random_state):
        return fn(*args, **kwargs)


@dataclass
class FusedGradients:
    """The joint graph lowered with an incoming gradient of 1: it returns the result's values, then
    one gradient (or nothing) per wanted input; ``grads`` maps each wanted input to its slot."""

    lowered: Lowered
    grads: tuple    # per wanted input: a result_template.Slot, or None where it gets no gradient


@dataclass
class LossProgram:
    joint: Graph                 # the one trace: the forward and gradients, split once into ``split``
    split: Partition             # its forward (lowered when needed) and the backward every variant copies
    result_template: Any         # the result, with slots into the forward's (and the fused graph's) outputs
    saved_count: int
    differentiable: list[bool]   # per tensor leaf of the result
    wanted: list[int]            # inputs that get gradients (by index)
    layout: InputLayout
    options: dict[str, Any]
    backend: Backend
    sources: dict[str, str]
    label: str
    disk: Any = None
    numbers: NumberInputs = field(default_factory=no_numbers)
    device: str = "cpu"          # where it runs: its saved values and gradients are that device's arrays
    backward_numbers: list[int] = field(default_factory=list)  # forward inputs the backward reads too
    saved_inputs: list[int] = field(default_factory=list)  # inputs the forward saves as they are
    forward: Lowered | None = None
    fused: FusedGradients | None = None
    backward_variants: dict[tuple[bool, ...], tuple[Lowered, Any]] = field(default_factory=dict)
    kind: str = "loss"

    def __post_init__(self) -> None:
        self._differentiable_slots = dict(zip(slots(self.result_template), self.differentiable))
        self._fill_result = template_filler(self.result_template)
        self.speculating = True
        self._pending = False      # the last call's node holds fused gradients nobody has asked for yet
        self._last_edges: list = []
        self._bare_loss = False

    def use_fused(self, fused: FusedGradients) -> None:
        """Computes the gradients with the loss from now on (while it pays, see ``_speculate``)."""
        self.fused = fused
        # A result that is the 0-d loss alone (the usual case) skips the template.
        template, dtype = self.result_template, fused.lowered.out_dtypes[0]
        self._bare_loss = type(template) is Slot and template.index == 0 and self.differentiable == [True] \
            and dtype.kind == "f"

    @property
    def partition_stats(self) -> dict[str, Any]:
        split = self.split
        return {"saved": split.saved, "recomputed": split.recomputed,
                "saved_bytes_before": split.saved_bytes_before, "saved_bytes_after": split.saved_bytes_after}

    @property
    def lowered_graphs(self) -> list[Lowered]:
        graphs = [self.fused.lowered] if self.fused is not None else []
        graphs += [self.forward] if self.forward is not None else []
        return graphs + [variant[0] for variant in self.backward_variants.values()]

    def lower_all(self) -> list[Lowered]:
        """Every graph a call could run (the split forward and whole backward included), for ``explain``."""
        self.forward_lowered()
        self.backward_for((True,) * len(self.wanted))
        return self.lowered_graphs

    def lower_split(self, example: list) -> None:
        """Lowers the split forward and the whole backward now, running each on ``example`` (the
        call's inputs; the backward on what that forward saved, with tangents of 1), so that an op
        without a lowering falls back at compile time rather than in the middle of a backward."""
        forward = self.forward_lowered(example)
        out, forward.example_out = forward.example_out, None
        if not self.wanted:
            return
        if out is None:  # the forward runs loaded machine code, not run here: the backward is lowered alone
            self.backward_for((True,) * len(self.wanted))
            return
        saved = out[len(out) - self.saved_count:] if self.saved_count else []
        tangents = [placement.ones_like(out[i]) for i, d in self._differentiable_slots.items() if d]
        self.backward_for((True,) * len(self.wanted),
                          [*saved, *tangents, *(example[i] for i in self.backward_numbers)])

    def forward_lowered(self, example: list | None = None) -> Lowered:
        if self.forward is None:
            self.forward = lower(self.split.forward, self.backend, self.options, f"{self.label} (forward)",
                                 self.sources, self.disk, example)
        return self.forward

    def backward_for(self, mask: tuple[bool, ...], example: list[np.ndarray] | None = None) -> tuple[Lowered, Any]:
        """The backward computing only the gradients in ``mask`` (one per wanted input), lowered once
        (and run on ``example``, the saved values and tangents, when given), and the filler of its
        gradients' template."""
        variant = self.backward_variants.get(mask)
        if variant is None:
            graph = _masked_backward(self.split.backward, mask)
            fill = template_filler(flatten_output(graph))
            label = f"{self.label} (backward)" + ("" if all(mask) else f" for gradients {list(mask)}")
            variant = (lower(graph, self.backend, self.options, label, self.sources, self.disk, example), fill)
            self.backward_variants[mask] = variant
        return variant

    # ---- a call ---------------------------------------------------------------------------------------
    def _speculate(self) -> bool:
        """Whether this call computes the gradients now: yes while the previous fused call's node was
        asked for them."""
        if self._pending:  # the previous call's gradients were never asked for
            self.speculating = self._pending = False
        return self.speculating

    def applied(self, fused: bool, every_gradient: bool) -> None:
        """A node of this program ran its backward (called by the node). Speculating goes on while the
        backward wants every gradient; one asked for a few (``autograd.grad(loss, [w])``) makes the next
        calls split, so that their backward computes only those."""
        if fused:
            self._pending = False
        self.speculating = every_gradient

    def _any_requires_grad(self, inputs: list) -> bool:
        for i in self.wanted:
            if inputs[i]._requires_grad:
                return True
        return False

    def new_call(self, fn: Callable, args: tuple, kwargs: dict, inputs: list, random_state: np.ndarray | None,
                 reads_changed: Callable[[], str | None] | None = None) -> LossCall:
        """The ``LossCall`` a call of this program hands its backward node (made here, so that the
        decorator's module, which a warm process imports, never imports this one)."""
        return LossCall(fn, args, kwargs, inputs, self.saved_inputs, random_state, reads_changed)

    def run(self, inputs: list, call: LossCall, check: Any = None) -> Any:
        extended = self.numbers.extend(inputs) if self.numbers.prelude else inputs
        node = None
        if grad_mode.state.grad_enabled and self._any_requires_grad(inputs):
            # The last call's edges are kept: they keep the inputs' AccumulateGrad nodes (held weakly
            # by the tensors) alive, so a loop over the same parameters does not make them anew.
            edges = self._last_edges = list(map(gradient_edge, map(inputs.__getitem__, self.wanted)))
            if self.fused is not None and self._speculate():
                flat = run_lowered(self.fused.lowered, arrays_of(extended))
                grads = [None if slot is None else flat[slot.index] for slot in self.fused.grads]
                node = CompiledFunctionBackward(self, [], edges, call, check, grads)
                self._pending = True
                if self._bare_loss:  # the result is the loss alone: no template to fill
                    out = Tensor._make(flat[0])
                    set_history((out,), node)
                    return out
            else:
                flat = run_lowered(self.forward_lowered(), arrays_of(extended))
                saved = flat[len(flat) - self.saved_count:] if self.saved_count else []
                saved = [*saved, *(extended[i] for i in self.backward_numbers)]  # numbers come after tangents
                node = CompiledFunctionBackward(self, saved, edges, call, check)
        else:
            flat = run_lowered(self.forward_lowered(), arrays_of(extended))
        if node is None:
            return self._fill_result(flat, as_tensor)
        differentiable = self._differentiable_slots
        outputs: list[Tensor] = []  # the node's, in the order the result holds them

        def wrap(index: int, array: np.ndarray) -> Tensor:
            out = Tensor._make(array)
            if differentiable.get(index) and array.dtype.kind == "f":
                outputs.append(out)
            return out
        result = self._fill_result(flat, wrap)
        set_history(outputs, node)
        return result


def _masked_backward(backward: Graph, mask: tuple[bool, ...]) -> Graph:
    """A copy of the split backward returning only the gradients in ``mask`` (None for the others),
    without what only those needed; the split's own graph stays as it is for the next variant (the
    passes and the backend edit the graph they lower)."""
    graph, remap = Graph(), {}
    for node in backward.nodes:
        if node.op is Opcode.OUTPUT:
            grads = map_nodes(node.args[0], remap.__getitem__)
            graph.output(tuple(g if keep else None for g, keep in zip(grads, mask)))
        else:
            remap[node] = graph.node_copy(node, remap)
    eliminate_dead_code(graph)
    return graph


def loss_program(captured: Captured, layout: InputLayout, numbers: NumberInputs, backend: Backend,
                 options: dict[str, Any], label: str, disk: Any, example: list, device: str = "cpu") -> LossProgram:
    """The program of a loss from its one trace (``captured.graph``, forward and gradients together):
    split once into the forward and the backward, and, for the usual loss (one differentiable 0-d
    output), lowered whole with a unit tangent as the fused kernel. ``example`` (the call's input
    arrays) runs what is lowered now, so that a failing lowering falls back before the first call."""
    joint = captured.graph
    split = partition_joint(joint)
    result, saved = flatten_output(split.forward)
    names = [inp.name for inp in captured.inputs] + numbers.prelude.outputs
    program = LossProgram(
        joint, split, with_tuple_types(result, captured.result_types), len(saved), captured.differentiable,
        captured.wanted, layout, options, backend, captured.sources, label, disk, numbers, device,
        backward_numbers=[names.index(n) for n in split.numbers],
        saved_inputs=[i for i, inp in enumerate(captured.inputs)
                      if inp.name in split.saved and not (inp.array or inp.random)])
    outputs = [n for n, d in zip(iter_nodes(joint.output_node.args[0][0]), captured.differentiable) if d]
    if not (captured.wanted and len(outputs) == 1 and outputs[0].meta["shape"] == ()):
        program.lower_split(example)
        return program
    fused = with_unit_tangents(joint)
    _, grads = flatten_output(fused)
    lowered = lower(fused, backend, options, f"{label} (forward and gradients)", captured.sources, disk, example)
    lowered.example_out = None
    program.use_fused(FusedGradients(lowered, grads))
    return program


_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they "
          "have already been freed). Specify retain_graph=True if you need to backward through the graph a "
          "second time.")


class CompiledFunctionBackward(Node):
    """The one backward node of a compiled function's outputs: the compiled backward of its forward,
    or the gradients its fused forward already computed (``gradients``)."""

    __slots__ = ("_owned", "_conforming", "_program", "_saved", "_gradients", "_call", "_check")

    def __init__(self, program: LossProgram, saved: list[np.ndarray], edges: list, call: LossCall,
                 check: Any, gradients: list[np.ndarray | None] | None = None) -> None:
        Node.__init__(self, edges)
        self._owned = False   # the last apply's gradients are the compiled kernel's fresh arrays
        self._conforming = False   # ... and they are the fused kernel's, unscaled (gradients_conform)
        self._program = program
        self._saved: list[np.ndarray] | None = saved
        self._gradients = gradients
        self._call = call
        self._check = check

    def hands_over_gradients(self) -> bool:
        return self._owned

    def gradients_conform(self) -> bool:
        return self._conforming

    def apply(self, grads, needed):
        self._owned = self._conforming = False
        if grad_mode.state.grad_enabled:  # create_graph: the gradients must be differentiable
            return self._eager_backward(grads)
        self._call.check_versions()  # an input changed in place since forward: eager's error
        if self._saved is None:
            raise RuntimeError(_FREED)
        every = needed is None or all(needed)
        mask = (True,) * len(self.next_edges) if needed is None else tuple(bool(n) for n in needed)
        fused = self._gradients is not None
        if fused:
            result = self._scaled_gradients(grads[0], mask)
        else:
            result = self._compiled_backward(grads, mask)
            if result is None:
                return self._eager_backward(grads, create_graph=False)
        self._owned = True
        if self._check is not None:
            self._check(grads, result, mask)
        self._program.applied(fused, every)
        return result

    def apply_unobserved(self, grads):
        """The fused kernel's gradients for the usual incoming 1, handed over as they are: no op runs,
        and no hook can change them in place (the engine asks only when the next nodes have none)."""
        if self._gradients is None or self._saved is None or self._check is not None or len(grads) != 1 \
                or grads[0] is None or self._program.device != placement.CPU or grads[0]._data.item() != 1:
            return None
        self._call.check_versions()  # an input changed in place since forward: eager's error
        self._owned = self._conforming = True
        self._program.applied(True, True)
        return [None if gradient is None else Tensor._make(gradient) for gradient in self._gradients]

    def _scaled_gradients(self, incoming: Tensor | None, mask: tuple[bool, ...]) -> list:
        """The fused forward's gradients times the gradient that arrived at the loss: handed over as
        they are for the usual 1 (copied if a next node's hook could change them in place, since a
        retained graph hands them over again)."""
        if incoming is None:
            return [None] * len(mask)
        if self._program.device != placement.CPU:  # reading the scale would wait for the device: scale always
            return [placement.scaled(g, incoming) if g is not None and keep else None
                    for g, keep in zip(self._gradients, mask)]
        scale = incoming._data
        unit = scale.item() == 1
        copy = not unit
        for edge in self.next_edges if unit else ():
            if edge is not None and edge[0].hooked():
                copy = True
                break
        # the fused kernel's gradients have each input's shape and dtype (its trace ran the engine's
        # checks); scaled, one may take the scale's dtype
        self._conforming = unit
        result = []
        for gradient, keep in zip(self._gradients, mask):
            if gradient is None or not keep:
                result.append(None)
            elif unit:
                result.append(Tensor._make(gradient.copy() if copy else gradient))
            else:
                result.append(placement.scaled(gradient, incoming))
        return result

    def _compiled_backward(self, grads: list, mask: tuple[bool, ...]) -> list | None:
        metadata = [self.input_metadata(i) for i in range(self.num_inputs())]
        device = self._program.device
        tangents = [g._data if g is not None else placement.zeros(m.shape, m.dtype, device)
                    for g, m in zip(grads, metadata)]
        count = len(self._saved) - len(self._program.backward_numbers)
        arrays = [*self._saved[:count], *tangents, *self._saved[count:]]
        try:
            lowered, fill = self._program.backward_for(mask, arrays)
        except Unsupported as error:  # this set of gradients has no lowering: eager, as the warning says
            warnings.warn(f"jitgrad.compile: running a backward eagerly: {error}", RuntimeWarning, stacklevel=3)
            return None
        return list(fill(run_lowered(lowered, arrays), as_tensor))

    def _eager_backward(self, grads, create_graph: bool = True):
        """Re-runs the function eagerly on the original inputs and differentiates that graph."""
        with grad_mode.enable_grad():
            result = self._call.rerun()
        outputs = [t for t, d in zip(tensor_leaves(result), self._program.differentiable) if d]
        pairs = [(o, g) for o, g in zip(outputs, grads) if g is not None and o._requires_grad]
        inputs = [self._call.inputs[i] for i in self._program.wanted]
        if not pairs:
            return [None] * len(inputs)
        return list(autograd_grad([o for o, _ in pairs], inputs, [g for _, g in pairs],
                                  create_graph=create_graph, allow_unused=True))

    def release_variables(self) -> None:
        self._saved = None
        self._gradients = None


__all__ = ["CompiledFunctionBackward", "FusedGradients", "LossCall", "LossProgram", "first_change", "loss_program",
           "replay"]
