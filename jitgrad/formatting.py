"""Prints tensors the way PyTorch does, so that output reads the same in both libraries.

PyTorch picks one format for the whole tensor from its nonzero finite values (integers, fixed point or
scientific), pads every element to one width, puts a fixed number of elements on a line and, above
``_THRESHOLD`` elements, prints only ``_EDGEITEMS`` at each end of every dimension. numpy's
``array2string`` differs in each of these, so the layout is written out here.
"""
from __future__ import annotations

import math

import numpy as np

_PRECISION = 4
_LINE_WIDTH = 80
_THRESHOLD = 1000
_EDGEITEMS = 3


class _Formatter:
    """Formats single elements of one tensor, chosen from the values that will be printed."""

    def __init__(self, values: np.ndarray) -> None:
        self.floating = values.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.width = True, False, 1
        flat = values.ravel()
        if not self.floating:
            self.width = max([len(str(v)) for v in flat.tolist()] + [1])
            return
        shown = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if shown.size == 0:
            return
        amax, amin = np.abs(shown).max(), np.abs(shown).min()
        self.int_mode = bool(np.all(shown == np.ceil(shown)))
        self.sci_mode = bool(amax / amin > 1000.0 or amax > 1.0e8 or amin < 1.0e-4)
        if self.sci_mode:
            strings = [f"{v:.{_PRECISION}e}" for v in shown.tolist()]
        elif self.int_mode:
            strings = [f"{v:.0f}." for v in shown.tolist()]
        else:
            strings = [f"{v:.{_PRECISION}f}" for v in shown.tolist()]
        self.width = max(len(s) for s in strings)

    def format(self, value) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:.{_PRECISION}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{_PRECISION}f}"
        return text.rjust(self.width)


def _edges(values: np.ndarray) -> np.ndarray:
    """Only the elements a summarized print shows (the first and last few along every dimension)."""
    for axis, n in enumerate(values.shape):
        if n > 2 * _EDGEITEMS:
            keep = list(range(_EDGEITEMS)) + list(range(n - _EDGEITEMS, n))
            values = np.take(values, keep, axis=axis)
    return values


def _vector(values: np.ndarray, indent: int, summarize: bool, formatter: _Formatter) -> str:
    per_line = max(1, (_LINE_WIDTH - indent) // (formatter.width + 2))
    items = values.tolist()
    if summarize and len(items) > 2 * _EDGEITEMS:
        elements = ([formatter.format(v) for v in items[:_EDGEITEMS]] + [" ..."]
                    + [formatter.format(v) for v in items[-_EDGEITEMS:]])
    else:
        elements = [formatter.format(v) for v in items]
    lines = [", ".join(elements[i:i + per_line]) for i in range(0, len(elements), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(values: np.ndarray, indent: int, summarize: bool, formatter: _Formatter) -> str:
    if values.ndim == 0:
        return formatter.format(values.item())
    if values.ndim == 1:
        return _vector(values, indent, summarize, formatter)
    n = values.shape[0]
    if summarize and n > 2 * _EDGEITEMS:
        rows = ([_nested(values[i], indent + 1, summarize, formatter) for i in range(_EDGEITEMS)] + ["..."]
                + [_nested(values[i], indent + 1, summarize, formatter) for i in range(n - _EDGEITEMS, n)])
    else:
        rows = [_nested(values[i], indent + 1, summarize, formatter) for i in range(n)]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def format_array(values: np.ndarray, indent: int) -> str:
    """The body of a tensor's repr: nested brackets, comma separated, aligned like PyTorch's."""
    if values.size == 0:
        return "[]"
    summarize = values.size > _THRESHOLD
    formatter = _Formatter(_edges(values) if summarize else values)
    return _nested(values, indent, summarize, formatter)


def tensor_repr(values: np.ndarray, dtype_name: str, default_dtype_name: str, suffixes: list[str],
                device: str | None = None) -> str:
    """``tensor([1., 2.], device='cuda:0', dtype=jitgrad.float64, grad_fn=<MulBackward0>)``; ``device``
    is None for a CPU tensor, which says nothing of its device, as in PyTorch."""
    indent = len("tensor(")
    text = "tensor(" + format_array(values, indent)
    extras = []
    if values.size == 0 and values.ndim != 1:
        extras.append(f"size={tuple(values.shape)}")
    if device is not None:
        extras.append(f"device='{device}'")
    # An empty tensor has no elements to show it holds integers, so only the default float goes unsaid.
    implied = {default_dtype_name} if values.size == 0 else {default_dtype_name, "int64", "bool"}
    if dtype_name not in implied:
        extras.append(f"dtype=jitgrad.{dtype_name}")
    extras.extend(suffixes)
    # Like PyTorch, a suffix that would pass the line width starts a new line.
    line_length = len(text) - text.rfind("\n") + 1
    for extra in extras:
        if line_length + len(extra) + 2 > _LINE_WIDTH:
            text += ",\n" + " " * indent + extra
            line_length = indent + len(extra)
        else:
            text += ", " + extra
            line_length += len(extra) + 2
    return text + ")"
