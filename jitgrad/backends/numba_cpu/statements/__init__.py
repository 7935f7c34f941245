"""The numba CPU backend's code for each statement intrinsic the op entries name (``lower=intrinsic(...)``,
``jitgrad.ops.lowering``): a function of an ``OpContext`` (and the intrinsic's parameters) returning
the source lines that compute ``ctx.out``. The modules mirror ``jitgrad/ops/``: an op's CPU code is in
the file named like the one that declares it.

A view (``reshape``, ``getitem``...) binds ``ctx.out`` itself; any other intrinsic writes into the
``ctx.out`` array the backend allocated from the memory plan. One that cannot handle a use raises
``NotImplementedError``, which becomes a ``LoweringError``.
"""
from __future__ import annotations

from typing import Callable

from . import (activations, convolution, gathering, indexing, inplace, linalg, losses, pooling, reductions, sampling,
               shape, sorting, tap_sums)

Statement = Callable[..., "str | list[str]"]

STATEMENTS: dict[str, Statement] = {name: emit for module in (activations, reductions, linalg, shape, indexing,
                                                              inplace, losses, sampling, gathering, sorting,
                                                              convolution, pooling, tap_sums)
                                    for name, emit in module.STATEMENTS.items()}

__all__ = ["STATEMENTS", "Statement"]
