"""``jitgrad.func``: PyTorch's ``torch.func`` (function transforms, JAX's style) over jitgrad's engine.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd`` and ``hessian`` (transforms.py)
differentiate plain functions of trees of tensors and compose; ``functional_call`` runs a module with
other tensors as its parameters and buffers; ``vmap`` maps a function over a batch dimension, slice by
slice (vmap.py says what that costs). docs/func.md has the details.
"""
from ..nn.utils.stateless import functional_call
from .transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from .vmap import vmap

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp", "vmap"]
