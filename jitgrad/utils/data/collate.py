"""``default_collate``: a list of samples into one batch, as PyTorch's does it: tensors (and numpy
arrays) stacked along a new first dimension, Python numbers made tensors (ints int64, floats float64,
bools bool), and dicts, named tuples, tuples and lists collated item by item (a tuple or list of
fields comes back as a list, as in PyTorch); strings are left as they are. ``default_convert`` is its
counterpart for single samples."""
from __future__ import annotations

import numbers
from typing import Any, Mapping, Sequence

import numpy as np

from ...dtypes import float64
from ...factories import tensor
from ...ops import stack
from ...tensor import Tensor


def default_collate(batch: Sequence[Any]) -> Any:
    first = batch[0]
    if isinstance(first, Tensor):
        return stack(list(batch), 0)
    if isinstance(first, np.ndarray):
        return stack([tensor(item) for item in batch], 0)
    if isinstance(first, (bool, np.bool_)):
        return tensor(list(batch))
    if isinstance(first, numbers.Integral):
        return tensor([int(item) for item in batch])
    if isinstance(first, numbers.Real):
        return tensor([float(item) for item in batch], dtype=float64)
    if isinstance(first, (str, bytes)):
        return batch
    if isinstance(first, Mapping):
        return {key: default_collate([sample[key] for sample in batch]) for key in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(default_collate(field) for field in zip(*batch)))
    if isinstance(first, Sequence):
        if any(len(sample) != len(first) for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(field) for field in zip(*batch)]
    raise TypeError("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found "
                    f"{type(first)}")


def default_convert(sample: Any) -> Any:
    """One sample when batching is off (``batch_size=None``), as PyTorch converts it: numpy arrays
    made tensors, dicts and named tuples converted item by item, tuples and lists made lists."""
    if isinstance(sample, np.ndarray) and sample.dtype.kind not in "OSU":
        return tensor(sample)
    if isinstance(sample, Mapping):
        return {key: default_convert(value) for key, value in sample.items()}
    if isinstance(sample, tuple) and hasattr(sample, "_fields"):
        return type(sample)(*(default_convert(value) for value in sample))
    if isinstance(sample, Sequence) and not isinstance(sample, (str, bytes)):
        return [default_convert(value) for value in sample]
    return sample


__all__ = ["default_collate", "default_convert"]
