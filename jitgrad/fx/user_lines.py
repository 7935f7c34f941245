"""``user_line``: the line of the user's code that is running, for a trace to say where each op came from.

A trace notes it for every op it records (``Tracer(record_lines=True)``), and error messages name it,
so it is asked thousands of times per trace of a long unrolled loop: the answer for a file and for a
code object and line is kept.
"""
from __future__ import annotations

import linecache
import os
import sys
from typing import Any

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _in_package(filename: str) -> bool:
    """Whether a code object's file is in the jitgrad package: asked for every frame of every traced
    call, so the answer for an absolute name (which no ``chdir`` changes) is kept."""
    inside = _ABSOLUTE_IN_PACKAGE.get(filename)
    if inside is None:
        inside = os.path.abspath(filename).startswith(PACKAGE_DIR)
        if os.path.isabs(filename):
            _ABSOLUTE_IN_PACKAGE[filename] = inside
    return inside


_ABSOLUTE_IN_PACKAGE: dict[str, bool] = {}


def user_line() -> str | None:
    """``file:line: code`` of the innermost frame outside the jitgrad package (asked for every traced
    op: the text is kept per code object and line)."""
    frame, known = sys._getframe(1), _ABSOLUTE_IN_PACKAGE
    while frame is not None:
        filename = frame.f_code.co_filename
        inside = known.get(filename)
        if not (_in_package(filename) if inside is None else inside):
            break
        frame = frame.f_back
    if frame is None:
        return None
    where = (frame.f_code, frame.f_lineno)  # a module reloaded after an edit has new code objects
    text = _USER_LINES.get(where)
    if text is None:
        if len(_USER_LINES) > 65536:
            _USER_LINES.clear()
        filename, line = frame.f_code.co_filename, frame.f_lineno
        text = _USER_LINES[where] = f"{filename}:{line}: {linecache.getline(filename, line).strip()}"
    return text


_USER_LINES: dict[tuple[Any, int], str] = {}


__all__ = ["PACKAGE_DIR", "user_line"]
