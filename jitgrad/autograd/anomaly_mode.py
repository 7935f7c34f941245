"""Anomaly detection: remember where each node was created, and check backward for NaNs.

A failing backward names a node, not the line of the user's forward that made it; with anomaly mode on,
every node keeps the stack of its creation (``node.metadata["traceback_"]``), and an error in its
backward reports that stack. It slows both passes down, so it is off by default and meant for
debugging. Like PyTorch's, the mode is process-wide.
"""
from __future__ import annotations

import os
import traceback
import warnings
from typing import Any

import numpy as np

from .grad_mode import _DecoratorContextManager

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _AnomalyState:
    enabled = False
    check_nan = True


state = _AnomalyState()


def is_anomaly_enabled() -> bool:
    return state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return state.check_nan


class set_detect_anomaly(_DecoratorContextManager):
    """Turns anomaly detection on or off now, and back to what it was on leaving a ``with`` block."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = (state.enabled, state.check_nan)
        self.mode, self.check_nan = bool(mode), check_nan
        state.enabled, state.check_nan = self.mode, check_nan

    def __enter__(self) -> None:
        state.enabled, state.check_nan = self.mode, self.check_nan

    def __exit__(self, *exc: object) -> None:
        state.enabled, state.check_nan = self.prev

    def clone(self) -> "set_detect_anomaly":
        clone = object.__new__(set_detect_anomaly)
        clone.mode, clone.check_nan, clone.prev = self.mode, self.check_nan, (state.enabled, state.check_nan)
        return clone


class detect_anomaly(_DecoratorContextManager):
    """Anomaly detection inside a ``with`` block or a decorated function."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self) -> None:
        self.prev = (state.enabled, state.check_nan)
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should "
                      "only be enabled for debugging.", UserWarning, stacklevel=2)
        state.enabled, state.check_nan = True, self.check_nan

    def __exit__(self, *exc: object) -> None:
        state.enabled, state.check_nan = self.prev

    def clone(self) -> "detect_anomaly":
        return detect_anomaly(self.check_nan)


def record_creation(metadata: dict) -> None:
    """Stores the current stack, minus jitgrad's own frames at its end, in a new node's metadata."""
    frames = traceback.extract_stack()
    while frames and os.path.abspath(frames[-1].filename).startswith(_PACKAGE_DIR):
        frames.pop()
    metadata["traceback_"] = traceback.format_list(frames)


def report_error(node: Any, error: BaseException) -> None:
    """Adds the forward stack of the failing node to the error (and warns with it, as PyTorch does)."""
    stack = node.metadata.get("traceback_") if node._metadata else None
    if not stack:
        return
    message = (f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
               + "".join(stack))
    warnings.warn(message, UserWarning, stacklevel=2)
    if hasattr(error, "add_note"):
        error.add_note(message)


def check_nan(node: Any, grads: list) -> None:
    for i, grad in enumerate(grads):
        if grad is not None and grad._data.dtype.kind == "f" and np.isnan(grad._data).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
