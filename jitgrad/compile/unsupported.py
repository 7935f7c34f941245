"""``Unsupported``: what a call does that a compiled function cannot reproduce exactly.

Its own module, below ``capture`` and ``placement``, which both raise it: a warm process imports
``placement`` and never ``capture`` (the trace, and ``jitgrad.fx`` under it).
"""
from __future__ import annotations


class Unsupported(Exception):
    """Something this call does that a compiled function cannot reproduce exactly; ``op`` and ``where``
    name it when known. The decorator turns it into eager execution, or an error with fullgraph."""

    def __init__(self, reason: str, op: str | None = None, where: str | None = None) -> None:
        super().__init__(reason)
        self.reason, self.op, self.where = reason, op, where

    def __str__(self) -> str:
        parts = [self.reason]
        if self.op and self.op not in self.reason:
            parts.append(f"op: {self.op}")
        if self.where and self.where not in self.reason:
            parts.append(f"at {self.where}")
        return "; ".join(parts)


__all__ = ["Unsupported"]
