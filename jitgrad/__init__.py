"""jitgrad: automatic differentiation that behaves like PyTorch's autograd.

Eager mode records a dynamic backward graph as ops run (``Node``, ``Edge``, ``AccumulateGrad``) and a
PyTorch-style engine runs it. The public API is spelled as PyTorch spells it.
"""
from .tensor import Tensor, is_tensor  # noqa: I001 - Tensor first: everything else builds on it
from .device import device  # noqa: E402 - the class, as torch.device; the module stays jitgrad/device.py

from . import autograd, distributed, nn, ops  # distributed imports no MPI until init_process_group
from .autograd import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                       set_grad_enabled)
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .dtypes import (bool, double, dtype, float, float16, float32, float64, get_default_dtype, half,
                     int, int8, int16, int32, int64, long, set_default_dtype, uint8)
from .factories import (arange, as_tensor, empty, empty_like, empty_strided, eye, from_numpy, full, full_like,
                        linspace, logspace, normal, ones, ones_like, rand, rand_like, randint, randint_like, randn,
                        randn_like, randperm, scalar_tensor, tensor, zeros, zeros_like)
from .random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from .shapes import Size

globals().update(ops.FUNCTIONS)  # jitgrad.exp, jitgrad.reshape...: every op declared public as a function
clip = ops.clamp
view = ops.reshape
preserve_format, contiguous_format = ops.arithmetic.MEMORY_FORMATS  # clone(memory_format=...), as torch's

__version__ = "0.1.0"

from .compile import compile  # noqa: E402,A001 - the decorator; the package stays importable as jitgrad.compile
from . import cuda  # noqa: E402 - imports no numba until CUDA is used
from . import accelerator  # noqa: E402 - torch.accelerator's view of jitgrad.cuda


# Imported on first use, so that a process that runs compiled functions from the warm-start index loads
# only what it runs (docs/compile.md): graph mode, which it never traces with, and training's optimizers,
# data loading and save/load, which a script names after its imports; and torch.distributions' families.
_ON_FIRST_USE = {"fx": ".fx", "func": ".func", "optim": ".optim", "utils": ".utils", "load": ".serialization",
                 "save": ".serialization", "distributions": ".distributions", "linalg": ".linalg",
                 "special": ".special", "testing": ".testing"}


def __getattr__(name: str) -> object:
    if name in _ON_FIRST_USE:
        import importlib
        module = importlib.import_module(_ON_FIRST_USE[name], __name__)
        value = module if module.__name__ == f"{__name__}.{name}" else getattr(module, name)
        globals()[name] = value  # found directly from now on
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names with those imported on first use, as ``dir(torch)`` lists ``torch.optim``."""
    return sorted(set(globals()) | set(_ON_FIRST_USE))
