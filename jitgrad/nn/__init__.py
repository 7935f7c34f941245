"""Neural networks as PyTorch's ``torch.nn`` spells them: ``Module`` and its layers, ``Parameter``,
``init`` and ``functional`` (docs/nn.md). ``parallel`` (``DistributedDataParallel``) is imported on its
first use: most processes never wrap a model for MPI, and a warm start pays for every module it loads."""
import importlib
from typing import Any

from . import functional, init, utils
from .modules import *  # noqa: F401,F403 - the layers, listed in modules/__init__.py
from .modules import __all__ as _layers
from .parameter import Parameter


def __getattr__(name: str) -> Any:
    if name == "parallel":
        return importlib.import_module(f"{__name__}.parallel")  # the import binds it here too
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Parameter", "functional", "init", "parallel", "utils", *_layers]
