"""Prints tensors the way PyTorch does, so that output reads the same in both libraries."""
from __future__ import annotations

import numpy as np

_PRECISION = 4
_LINE_WIDTH = 80


def _float_formatter(values: np.ndarray):
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return lambda v: _special(v) or f"{v}"
    amax, amin = np.abs(finite).max(), np.abs(finite).min()
    integral = bool(np.all(finite == np.round(finite)))
    scientific = amax >= 1e8 or (amin != 0 and (amin < 1e-4 or amax / amin > 1000.0) and not integral)
    if integral and not scientific:
        return lambda v: _special(v) or f"{v:.0f}."
    if scientific:
        return lambda v: _special(v) or f"{v:.{_PRECISION}e}"
    return lambda v: _special(v) or f"{v:.{_PRECISION}f}"


def _special(v: float) -> str:
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return ""


def _padded(formatter, values: np.ndarray):
    width = max(len(formatter(v)) for v in values.astype(np.float64).ravel())
    return lambda v: formatter(v).rjust(width)


def format_array(values: np.ndarray, indent: int) -> str:
    """The body of a tensor's repr: nested brackets, comma separated, aligned like PyTorch's."""
    if values.dtype == np.bool_:
        formatter = {"bool": lambda v: "True" if v else "False"}
    elif values.dtype.kind == "f" and values.size:
        formatter = {"float_kind": _padded(_float_formatter(values.astype(np.float64)), values)}
    else:
        formatter = None
    return np.array2string(values, separator=", ", formatter=formatter, prefix=" " * indent,
                           max_line_width=_LINE_WIDTH, threshold=1000, edgeitems=3)


def tensor_repr(values: np.ndarray, dtype_name: str, default_dtype_name: str, suffixes: list[str]) -> str:
    """``tensor([1., 2.], dtype=jitgrad.float64, grad_fn=<MulBackward0>)``."""
    body = format_array(values, indent=len("tensor("))
    extras = []
    implied = {default_dtype_name, "int64", "bool"}
    if dtype_name not in implied:
        extras.append(f"dtype=jitgrad.{dtype_name}")
    if values.size == 0 and values.ndim != 1:
        extras.insert(0, f"size={tuple(values.shape)}")
    extras.extend(suffixes)
    return "tensor(" + ", ".join([body] + extras) + ")"
