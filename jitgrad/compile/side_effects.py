"""Python side effects of a traced function: found after the trace, undone, and reported.

A compiled function replays its graph; Python statements that change state outside the function
(``history.append(loss)``, ``self.calls += 1``, ``global step; step += 1``, a draw from ``random`` or
``numpy.random``) ran once, while tracing, and
would silently not run again. So every mutable place the free-variable walk reached (cells, globals,
lists, dicts, objects' attributes, and the containers passed as arguments) is compared with its
snapshot after the trace; a change is undone (the caller's state is as it was before the call) and
reported with the place and the line, and the function runs eagerly instead, where the effect
happens as written. ``print`` and other effects on the world outside Python objects cannot be seen:
docs/compile.md says so.
"""
from __future__ import annotations

import linecache
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from .free_variables import MISSING, Snapshot, random_state
from .sources import Source


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Change:
    snapshot: Snapshot
    what: str
    line: tuple[str, int] | None = None   # (file, line number) of the statement that made it

    def describe(self, parameter_names: list[str]) -> str:
        text = f"{self.snapshot.source.describe(parameter_names)} {self.what}"
        if self.line is None:
            return text
        filename, number = self.line
        statement = linecache.getline(filename, number).strip()
        return f"{text} at {filename}:{number}" + (f" ({statement})" if statement else "")


def container_snapshots(values: list[tuple[Source, Any]]) -> list[Snapshot]:
    """Snapshots of the lists and dicts among the call's containers (a function appending to a list
    it was given changes the caller's list)."""
    snapshots = []
    for source, value in values:
        if type(value) is list:
            snapshots.append(Snapshot(source, "list", value, None, list(value)))
        elif type(value) is dict:
            snapshots.append(Snapshot(source, "dict", value, None, dict(value)))
    return snapshots


def _same_items(a: list | tuple, b: list | tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _changed_keys(before: dict, after: dict) -> list[Any]:
    keys = [k for k in after if k not in before or after[k] is not before[k]]
    return keys + [k for k in before if k not in after]


def _difference(snapshot: Snapshot) -> str | None:
    kind, holder, before = snapshot.kind, snapshot.holder, snapshot.before
    if kind == "cell":
        try:
            now = holder.cell_contents
        except ValueError:
            return "was deleted"
        return None if now is before else "was rebound"
    if kind == "global":
        now = holder.get(snapshot.key, MISSING)
        return None if now is before else ("was created" if before is MISSING else "was rebound")
    if kind == "rng":
        return None if random_state(holder)[0] == before[0] else "was advanced (a random draw while tracing)"
    if kind == "set":
        return None if holder == before else f"went from {len(before)} to {len(holder)} items"
    if kind == "array":
        return None if holder.tobytes() == before.tobytes() else "had elements written"
    if kind == "list":  # a list or a deque
        if _same_items(holder, before):
            return None
        if len(holder) > len(before) and _same_items(list(holder)[:len(before)], before):
            return f"grew from {len(before)} to {len(holder)} items"
        return "had items replaced or removed"
    attributes = holder if kind == "dict" else getattr(holder, "__dict__", {})
    keys = _changed_keys(before, attributes)
    if not keys:
        return None
    names = ", ".join(repr(k) if kind == "dict" else str(k) for k in keys[:3])
    return f"had {'entries' if kind == 'dict' else 'attributes'} {names} changed"


def find_changes(snapshots: list[Snapshot]) -> list[Change]:
    changes = []
    for snapshot in snapshots:
        what = _difference(snapshot)
        if what is not None:
            changes.append(Change(snapshot, what))
    return changes


@contextmanager
def locating(snapshots: list[Snapshot]) -> Iterator[dict[int, tuple[str, int]]]:
    """Runs the body under a line tracer that, after each line of code outside jitgrad, compares the
    snapshots not yet changed and notes the line that changed each (by the snapshot's index). Costly
    (a comparison per line), so a trace runs under it only again, once a change has been found."""
    found: dict[int, tuple[str, int]] = {}
    last: list[tuple[str, int] | None] = [None]

    def check() -> None:
        for index, snapshot in enumerate(snapshots):
            if index not in found and _difference(snapshot) is not None:
                found[index] = last[0]

    def local(frame, event, arg):
        if event in ("line", "return"):
            check()
            last[0] = (frame.f_code.co_filename, frame.f_lineno)
        return local

    def outer(frame, event, arg):
        return None if frame.f_code.co_filename.startswith(_PACKAGE) else local

    previous = sys.gettrace()
    sys.settrace(outer)
    try:
        yield found
    finally:
        sys.settrace(previous)


def with_lines(changes: list[Change], snapshots: list[Snapshot], lines: dict[int, tuple[str, int]]) -> list[Change]:
    index = {id(snapshot): i for i, snapshot in enumerate(snapshots)}
    return [Change(c.snapshot, c.what, lines.get(index[id(c.snapshot)])) for c in changes]


def undo(changes: list[Change]) -> None:
    """Puts every changed place back as its snapshot has it."""
    for change in changes:
        snapshot = change.snapshot
        kind, holder, before = snapshot.kind, snapshot.holder, snapshot.before
        if kind == "cell":
            holder.cell_contents = before
        elif kind == "global":
            if before is MISSING:
                holder.pop(snapshot.key, None)
            else:
                holder[snapshot.key] = before
        elif kind == "list":
            holder.clear()
            holder.extend(before)
        elif kind == "rng":
            holder.setstate(before[1]) if holder is not np.random else np.random.set_state(before[1])
        elif kind == "set":
            holder.clear()
            holder.update(before)
        elif kind == "array":
            holder[...] = before
        elif kind == "dict" or isinstance(holder.__dict__, dict):
            attributes = holder if kind == "dict" else holder.__dict__
            attributes.clear()
            attributes.update(before)
        else:   # a class: its attributes are set one by one
            for key in _changed_keys(before, holder.__dict__):
                if key in before:
                    setattr(holder, key, before[key])
                else:
                    delattr(holder, key)


__all__ = ["Change", "container_snapshots", "find_changes", "locating", "undo", "with_lines"]
