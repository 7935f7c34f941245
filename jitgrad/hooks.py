"""Handles that remove a registered hook, shared by tensor and node hooks."""
from __future__ import annotations

import itertools
from typing import Any

_next_id = itertools.count()


class RemovableHandle:
    """Registers ``hook`` in ``hooks`` (an insertion-ordered dict) and removes it on ``remove()``."""

    __slots__ = ("_hooks", "id")

    def __init__(self, hooks: dict[int, Any], hook: Any) -> None:
        self.id = next(_next_id)
        self._hooks = hooks
        hooks[self.id] = hook

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()
