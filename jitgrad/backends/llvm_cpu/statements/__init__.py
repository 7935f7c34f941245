"""The LLVM CPU backend's code for the statement intrinsics it covers (``lower=intrinsic(...)``,
``jitgrad.ops.lowering``): a function of a ``Statement`` that writes IR computing the node into
``s.out`` (the array the memory plan gave it), or, for a view, returns the node's ``ArrayView`` over
its input. A case it cannot write raises ``NotImplementedError``; an intrinsic missing here sends the
graph to numba. The modules mirror ``jitgrad/ops/`` as ``numba_cpu/statements/`` does."""
from __future__ import annotations

from typing import Callable

from . import activations, indexing, linalg, losses, shape, tap_sums
from .context import Statement

StatementCode = Callable[[Statement], "object"]

STATEMENTS: dict[str, StatementCode] = {name: code for module in (activations, indexing, linalg, losses, shape,
                                                                          tap_sums)
                                        for name, code in module.STATEMENTS.items()}

__all__ = ["STATEMENTS", "Statement", "StatementCode"]
