"""Eager automatic differentiation: the backward graph, the engine, custom Functions and grad modes."""
from . import engine, functional, graph
from . import forward_ad  # noqa: F401 - jitgrad.autograd.forward_ad: dual_level, make_dual, unpack_dual
from .anomaly_mode import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .differentiate import backward, grad
from .function import Function, FunctionCtx, once_differentiable
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                        no_grad, set_grad_enabled, set_multithreading_enabled)
from ..tensor import autograd_hooks
from .differentiate import tensor_backward

# Tensor sits below this layer and calls up through these (tensor.py's AutogradHooks).
autograd_hooks.backward = tensor_backward
autograd_hooks.inference_mode_enabled = is_inference_mode_enabled

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "gradcheck",
           "gradgradcheck", "GradcheckError", "functional", "graph", "engine",
           "no_grad", "enable_grad", "set_grad_enabled", "set_multithreading_enabled", "inference_mode",
           "is_grad_enabled", "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]
