"""``jitgrad.nn.utils`` as PyTorch's ``torch.nn.utils``: gradient clipping, parameters as one vector,
padded batches of sequences (``rnn``) and ``stateless.functional_call``."""
from . import rnn, stateless
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "parameters_to_vector",
           "rnn", "stateless", "vector_to_parameters"]
