"""``jitgrad.nn.utils`` as PyTorch's ``torch.nn.utils``: gradient clipping, parameters as one vector, and
``stateless.functional_call``."""
from . import stateless
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "stateless", "vector_to_parameters"]
