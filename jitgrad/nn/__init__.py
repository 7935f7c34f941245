"""Neural networks as PyTorch's ``torch.nn`` spells them: ``Module`` and its layers, ``Parameter``,
``init`` and ``functional`` (docs/nn.md)."""
from . import functional, init, parallel, utils
from .modules import *  # noqa: F401,F403 - the layers, listed in modules/__init__.py
from .modules import __all__ as _layers
from .parameter import Parameter

__all__ = ["Parameter", "functional", "init", "parallel", "utils", *_layers]
