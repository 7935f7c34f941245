"""The CUDA backend's host code for each statement intrinsic (``lower=intrinsic(...)``): a function of an
``OpContext`` (``../context.py`` states the contract) returning host source lines that compute
``ctx.out``.

Every module of this package holds a ``STATEMENTS`` table (intrinsic name -> function), and the
backend's table is all of them: a module added here is found without editing this file, so the
views, the maths and the data movement are written apart. An intrinsic no module implements is a
``LoweringError`` naming the op."""
from __future__ import annotations

import importlib
import pkgutil
from typing import Callable

Statement = Callable[..., "str | list[str]"]


def _collect() -> dict[str, Statement]:
    table: dict[str, Statement] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for name, emit in module.STATEMENTS.items():
            if name in table:
                raise RuntimeError(f"two CUDA statement modules implement the intrinsic {name!r}")
            table[name] = emit
    return table


STATEMENTS: dict[str, Statement] = _collect()

__all__ = ["STATEMENTS", "Statement"]
