"""Pieces of generated Python source that both numba backends write alike: a product of size
expressions, a shape tuple, and the source without its comments (what their caches and structural keys
hash: each node's IR line is a comment, and machine code does not depend on it)."""
from __future__ import annotations

import io
import tokenize
from typing import Sequence


def product(sizes: Sequence[str]) -> str:
    """Source for the product of size expressions (``1`` for none)."""
    factors = [s for s in sizes if s != "1"]
    return " * ".join(factors) if factors else "1"


def shape_tuple(sizes: Sequence[str]) -> str:
    """Source for a tuple of size expressions (``(n,)`` for one)."""
    return f"({sizes[0]},)" if len(sizes) == 1 else "(" + ", ".join(sizes) + ")"


def without_comments(source: str) -> str:
    """The generated source without its comments (each node's IR line, with the kernel's own sizes and
    no numbers, so the same for every graph a kernel serves): numba's machine code does not depend on
    them, and the caches keep only code."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return tokenize.untokenize((t.type, t.string) for t in tokens if t.type != tokenize.COMMENT)


__all__ = ["product", "shape_tuple", "without_comments"]
