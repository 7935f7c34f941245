"""PyTorch's ``allow_mutation_on_saved_tensors``: inside the block, a tensor saved for backward may be
changed in place, and backward still sees the value it had when it was saved.

Without it an in-place change to a saved tensor makes backward refuse to run (``saved_tensor``'s
version check). Inside it, every tensor is saved through a pair of saved-tensor hooks that keep a
handle to it, filed under its memory (the version counter, which its views and ``detach()``-ed aliases
share); an in-place op about to write into that memory (``ops/inplace.py`` calls
``clone_saved_before_write``) first copies each saved value living there, and backward reads the
copy. Leaving the block drops the handles, so a graph recorded inside cannot run backward outside.
"""
from __future__ import annotations

import contextlib
import weakref
from typing import Iterator

from ..device import copy_array
from ..tensor import Tensor
from ..thread_settings import ThreadSettings, departures
from .saved_tensor import modified_error, saved_tensors_hooks, version_of
from .versions import version_counter

_OUTSIDE_ERROR = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' context in which the graph "
                  "was originally recorded.")


_FIRST_PRUNE = 1024  # memories in the table before the first sweep for freed ones


class _Handle:
    """What a node keeps of one saved tensor: the tensor, the version it was saved at, and its value at
    that version once an in-place change was about to overwrite it (``copy``)."""

    __slots__ = ("tensor", "version", "copy", "__weakref__")

    def __init__(self, tensor: Tensor) -> None:
        self.tensor, self.version, self.copy = tensor, version_of(tensor), None


class MutationOnSavedContext:
    """The state of one ``allow_mutation_on_saved_tensors`` block (what it yields): the handles of the
    tensors saved inside it, by memory. Handles are held weakly, so a freed graph's values are not
    kept, and only until the block ends."""

    def __init__(self) -> None:
        self.active = True
        # id of a version counter -> (the counter, kept so that its id is not reused; its live handles)
        self.handles_by_memory: dict[int, tuple[list[int], weakref.WeakSet[_Handle]]] = {}
        self._prune_at = _FIRST_PRUNE

    def pack(self, tensor: Tensor) -> _Handle:
        """One handle per tensor and version, however many nodes save it."""
        if len(self.handles_by_memory) >= self._prune_at:
            self._prune()
        counter = version_counter(tensor)
        _, handles = self.handles_by_memory.setdefault(id(counter), (counter, weakref.WeakSet()))
        for handle in handles:
            if handle.tensor is tensor and handle.copy is None and handle.version == counter[0]:
                return handle
        handle = _Handle(tensor)
        handles.add(handle)
        return handle

    def _prune(self) -> None:
        """Drops the memories none of whose saved values is still needed: a training loop inside the block
        would otherwise add every step's tensors to the table for good."""
        self.handles_by_memory = {key: entry for key, entry in self.handles_by_memory.items() if entry[1]}
        self._prune_at = max(_FIRST_PRUNE, 2 * len(self.handles_by_memory))

    def unpack(self, handle: _Handle) -> Tensor:
        if not self.active:
            raise AssertionError(_OUTSIDE_ERROR)
        if handle.copy is not None:
            return handle.copy
        tensor = handle.tensor
        now = version_of(tensor)
        if now != handle.version:  # written past the block's notice (through ``.numpy()``): refuse, as without it
            raise modified_error(tensor._data.dtype, tensor._data.shape, None, now, handle.version)
        return tensor

    def copy_before_write(self, tensor: Tensor) -> None:
        """Copies every value saved in ``tensor``'s memory that is not copied yet."""
        entry = self.handles_by_memory.get(id(tensor._version_counter)) if tensor._version_counter else None
        if entry is None:
            return
        for handle in entry[1]:
            if handle.copy is None and version_of(handle.tensor) == handle.version:
                handle.copy = _copy_in_place_of(handle.tensor)

    def clear(self) -> None:
        self.active = False
        self.handles_by_memory.clear()


def _copy_in_place_of(tensor: Tensor) -> Tensor:
    """A copy of ``tensor``'s values that has its place in the graph: its ``grad_fn`` and output slot, or,
    for a leaf, its AccumulateGrad, so that a double backward through the copy reaches the original."""
    copy = Tensor._make(copy_array(tensor._data), tensor._requires_grad)
    copy._grad_fn, copy._output_nr = tensor._grad_fn, tensor._output_nr
    copy._grad_accumulator = tensor._grad_accumulator
    return copy


class _Active(ThreadSettings):
    context: MutationOnSavedContext | None = None


_active = _Active()


class _SavingThroughHandles(saved_tensors_hooks):
    """The block's saved-tensor hooks. The values they give back are the saved ones even after an
    in-place change (the copy), so ``SavedTensor`` does not check the saved tensor's version against
    its own: ``unpack`` checks it where no copy was made."""

    keeps_saved_values = True

    def __init__(self, context: MutationOnSavedContext) -> None:
        super().__init__(context.pack, context.unpack)


@contextlib.contextmanager
def allow_mutation_on_saved_tensors() -> Iterator[MutationOnSavedContext]:
    """A block in which tensors saved for backward may be changed in place: each is copied just before
    the change, and backward uses the copy. Run both the forward and the backward inside it; a graph
    recorded inside cannot run backward once the block ended (``AssertionError``, as in PyTorch)."""
    if _active.context is not None:
        raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
    context = MutationOnSavedContext()
    with _SavingThroughHandles(context):
        _active.context = context
        try:
            yield context
        finally:
            _active.context = None
            context.clear()


def clone_saved_before_write(tensor: Tensor) -> None:
    """Called by every in-place write, before it writes into ``tensor``'s memory. Inside an
    ``allow_mutation_on_saved_tensors`` block, copies the values saved there; elsewhere one read."""
    if departures.count:
        context = _active.context
        if context is not None:
            context.copy_before_write(tensor)
