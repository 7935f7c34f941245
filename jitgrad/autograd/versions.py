"""Version counters: how autograd notices that memory it needs was changed in place.

Every in-place op bumps the counter of the tensor it writes, which its views share. A saved tensor
remembers the version it was saved at and refuses to be used once that changed. A view whose base
changed in place after its history was recorded gets a new one (its view ops replayed on the base)
when it is next used; an in-place change made *through* a view rebuilds the histories of the view and
of its root base (``ops/inplace.py``, PyTorch's CopySlices).
"""
from __future__ import annotations

import re
import weakref
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..device import may_share_memory
from ..thread_settings import departures
from . import grad_mode, provided

if TYPE_CHECKING:
    from ..tensor import Tensor


def version_counter(tensor: "Tensor") -> list[int]:
    counter = tensor._version_counter
    if counter is None:
        counter = tensor._version_counter = [0]
    return counter


def increment_version(tensor: "Tensor") -> None:
    """Marks ``tensor`` (and its views) as changed in place, e.g. after writing its ``.numpy()``."""
    version_counter(tensor)[0] += 1


def mark_views(op: Any, attrs: dict, base: "Tensor", outputs: Sequence["Tensor"]) -> None:
    """Outputs of a view op that share ``base``'s memory share its version counter too, and remember
    how they were taken from the root base: ``_view = (root, version, chain, creation)`` with ``chain``
    the view ops from the root, as ``(op, attrs, output index or None)``, and ``creation`` what PyTorch's
    ``CreationMeta`` records against in-place changes: ``INFERENCE_MODE_VIEW`` for a view made in
    inference mode (of a normal tensor: a view of an inference tensor is one, ``ops.registry``),
    ``NO_GRAD_VIEW`` for one made with grad mode off, ``MULTI_OUTPUT_VIEW`` for one of several views one
    op returns (``split``), inherited by views of views; None otherwise."""
    if base._view is not None:
        root, _, chain, creation = base._view
    else:
        root, chain, creation = base, (), None
    if creation is None and departures.count:   # every setting at its default (one plain read): grad mode on
        state = grad_mode.state
        creation = INFERENCE_MODE_VIEW if state.inference else NO_GRAD_VIEW if not state.grad_enabled else None
    if creation is None and len(outputs) > 1:
        creation = MULTI_OUTPUT_VIEW
    counter = version_counter(base)
    for index, out in enumerate(outputs):
        if may_share_memory(out._data, base._data):
            out._version_counter = counter
            out._view = (root, counter[0], chain + ((op, attrs, index if len(outputs) > 1 else None),), creation)


NO_GRAD_VIEW = "no_grad"
INFERENCE_MODE_VIEW = "inference_mode"
MULTI_OUTPUT_VIEW = "multi_output"
IN_CUSTOM_FUNCTION = "custom_function"  # an output of a custom Function that aliases memory (a view or an input)

_CUSTOM_FUNCTION_VIEW = (
    "Output {nr} of {name} is a view and {what}. This view was created inside a custom Function (or because "
    "an input was returned as-is) and the autograd logic to handle view+inplace would override the custom "
    "backward associated with the custom Function, leading to incorrect gradients. This behavior is "
    "forbidden. You can fix this by cloning the output of the custom Function.")


def forward_name(view: "Tensor", default: str) -> str:
    """The name PyTorch's view errors give the op that made ``view``: its node's without the suffix
    (``SplitBackward0`` -> ``Split``), ``default`` where it has none."""
    fn = view._grad_fn
    return re.sub(r"Backward\d*$", "", fn.name()) if fn is not None else default


def custom_function_view_error(view: "Tensor", what: str) -> RuntimeError:
    """PyTorch's refusal of an in-place change to an output of a custom Function that aliases memory,
    or to its base: replaying the view ops would silently replace the Function's own backward."""
    name = forward_name(view, "a custom Function")
    return RuntimeError(_CUSTOM_FUNCTION_VIEW.format(nr=view._output_nr, name=name, what=what))


def mark_custom_function_view(output: "Tensor", aliased: "Tensor | None") -> None:
    """Marks an output of a custom Function that is a view, or (``aliased``) a new tensor on the memory of
    an input returned as is, as PyTorch's ``CreationMeta::IN_CUSTOM_FUNCTION``: it shares the version
    counter of the memory it aliases, so that an in-place change through it is seen by every node that
    saved that memory, and an in-place change to it (or, later, to its base) is refused."""
    if aliased is not None:
        counter = version_counter(aliased)
        output._version_counter = counter
        root, chain = (aliased._view[0], aliased._view[2]) if aliased._view is not None else (aliased, ())
        output._view = (root, counter[0], chain, IN_CUSTOM_FUNCTION)
    elif output._view is not None:
        output._view = output._view[:3] + (IN_CUSTOM_FUNCTION,)


def view_positions(tensor: "Tensor") -> np.ndarray:
    """For a view, the flat position in its root base of each of its elements (the view ops replayed
    on an array of positions)."""
    root, _, chain, _ = tensor._view
    positions = np.arange(root._data.size).reshape(root._data.shape)
    for op, attrs, index in chain:
        positions = op.forward(positions, **attrs)
        if index is not None:
            positions = positions[index]
    return positions


def refresh_view(tensor: "Tensor") -> None:
    """Gives a view whose root base changed in place since its history was recorded a new history: its
    view ops replayed on the root (PyTorch regenerates a view's grad_fn the same way)."""
    view = tensor._view
    if view is None or not tensor._requires_grad or tensor._version_counter[0] == view[1]:
        return
    root, _, chain, creation = view
    if creation == IN_CUSTOM_FUNCTION:
        raise custom_function_view_error(tensor, "its base or another view of its base has been modified inplace")
    value = root
    for op, attrs, index in chain:
        value = op(value, **attrs)
        if index is not None:
            value = value[index]
    rebase_history(tensor, value)
    tensor._view = (root, tensor._version_counter[0], chain, creation)
    provided.note_alias(tensor, value)


def rebase_history(tensor: "Tensor", source: "Tensor") -> None:
    """``tensor``'s history becomes ``source``'s (``grad_fn`` and output slot), after an in-place change
    to it (``ops/inplace.py``) or to its base (``refresh_view``); its ``retain_grad()`` leaves the node
    before the change for the new one, as PyTorch moves it, so ``.grad`` is the gradient of the value
    after the change."""
    old_fn, old_nr = tensor._grad_fn, tensor._output_nr
    tensor._grad_fn, tensor._output_nr = source._grad_fn, source._output_nr
    if tensor._retains_grad and old_fn is not None and old_fn is not tensor._grad_fn:
        if old_fn._retains_grad:
            old_fn._retains_grad.pop(old_nr, None)
        tensor._grad_fn._retain_grad(tensor._output_nr, weakref.ref(tensor))


def describe(tensor_data: np.ndarray) -> str:
    return f"[{tensor_data.dtype.name} {list(tensor_data.shape)}]"
