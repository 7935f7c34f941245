"""Version counters: how autograd notices that memory it needs was changed in place.

Every in-place op bumps the counter of the tensor it writes, which its views share. A saved tensor
remembers the version it was saved at and refuses to be used once that changed; a view taken before an
in-place change to its base refuses to be recorded into a new graph, since its recorded history no
longer describes its value (PyTorch regenerates it; jitgrad raises rather than give wrong gradients).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

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


def mark_views(base: "Tensor", outputs: Sequence["Tensor"]) -> None:
    """Outputs of a view op that share ``base``'s memory share its version counter too."""
    root = base._view[0] if base._view is not None else base
    counter = version_counter(base)
    for out in outputs:
        if np.may_share_memory(out._data, base._data):
            out._version_counter = counter
            out._view = (root, counter[0])


def check_view_is_current(tensor: "Tensor") -> None:
    view = tensor._view
    if view is not None and tensor._requires_grad and tensor._version_counter[0] != view[1]:
        raise RuntimeError(
            f"this {tensor._data.dtype.name} {list(tensor._data.shape)} tensor is a view whose base was "
            "modified in place after the view was taken, so its recorded history no longer matches its "
            "value; jitgrad does not rebuild view histories (PyTorch's CopySlices) yet. Take the view "
            "again after the in-place operation.")


def describe(tensor_data: np.ndarray) -> str:
    return f"[{tensor_data.dtype.name} {list(tensor_data.shape)}]"
