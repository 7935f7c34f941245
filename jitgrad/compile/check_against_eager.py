"""``check=True``: a compiled call compared with the same call run eagerly (outputs, gradients, and the
inputs and their ``.grad``s after the call), with the inputs put back in between, so that a wrong
backend or pass shows as an error naming what differs rather than as a wrong number later."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor
from . import placement


class CompileCheckError(AssertionError):
    """``check=True``: the compiled function disagrees with eager execution."""


def tolerances(dtype: np.dtype) -> tuple[float, float]:
    return (1e-4, 1e-5) if np.dtype(dtype).itemsize <= 4 else (1e-7, 1e-9)


def host_values(value: Any) -> np.ndarray | None:
    """A tensor's or array's values on the host, for ``check=True``'s comparisons."""
    return None if value is None else np.asarray(placement.host(value._data if isinstance(value, Tensor) else value))


def compare(what: str, compiled: Any, eager: Any) -> None:
    a, b = host_values(compiled), host_values(eager)
    if a is None and b is None:
        return
    if a is None or b is None:  # a missing gradient is a zero one
        a = np.zeros_like(b) if a is None else a
        b = np.zeros_like(a) if b is None else b
    if a.shape != b.shape or a.dtype != b.dtype:
        raise CompileCheckError(f"check=True: {what}: compiled gives {a.dtype}{list(a.shape)}, eager "
                                f"{b.dtype}{list(b.shape)}")
    rtol, atol = tolerances(a.dtype) if a.dtype.kind == "f" else (0.0, 0.0)
    scale = float(np.max(np.abs(b))) if b.size and b.dtype.kind == "f" else 1.0
    if not np.allclose(a, b, rtol=rtol, atol=atol * max(scale, 1.0), equal_nan=True):
        worst = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
        raise CompileCheckError(f"check=True: {what} differs from eager (largest difference {worst:.3g})")


class Snapshot:
    """The values and ``.grad``s of a call's input tensors, so that ``check=True`` can run the function
    eagerly, remember what it left, and put everything back before the compiled call runs."""

    def __init__(self, tensors: list[Tensor]) -> None:
        self.tensors = tensors
        copy = placement.copy
        self.saved = [(t._data, copy(t._data), t._grad, None if t._grad is None else copy(t._grad._data))
                      for t in tensors]

    def after(self) -> list[tuple[Any, Any]]:
        copy = placement.copy
        return [(copy(t._data), None if t._grad is None else copy(t._grad._data)) for t in self.tensors]

    def restore(self) -> None:
        for t, (data, values, grad, grad_values) in zip(self.tensors, self.saved):
            t._data, t._grad = data, grad
            if placement.writeable(data):
                placement.copy_into(data, values)
            if grad is not None:
                placement.copy_into(grad._data, grad_values)


__all__ = ["CompileCheckError", "Snapshot", "compare", "host_values", "tolerances"]
