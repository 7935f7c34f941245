"""jitgrad's operators. ``registry.REGISTRY`` lists every op; the modules group them by kind."""
from ..autograd import provided
from .activations import gelu, log_softmax, relu, softmax, softplus
from .arithmetic import (abs, add, clamp, clone, div, eq, floor_divide, ge, gt, le, logical_and, logical_not, logical_or,
                         lt, maximum, minimum, mul, ne, neg, pow, remainder, sign, sub, where)
from .indexing import getitem, narrow, select
from .linalg import matmul, mm
from .losses import nll_loss
from .math_functions import cos, erf, exp, expm1, log, log1p, rsqrt, sigmoid, sin, sqrt, tan, tanh
from .reductions import (all, amax, any, amin, argmax, argmin, logsumexp, max, mean, min, prod, std, sum, sum_to,
                         var)
from . import registry
from .registry import REGISTRY
from .sampling import normal, uniform
from .shape import (broadcast_to, cat, chunk, expand, flatten, permute, reshape, split, squeeze, stack,
                    transpose, unsqueeze)

# The ops autograd runs itself (autograd/provided.py): it cannot import them, since ops build on it.
provided.provide(sum_to=sum_to, stack=stack, note_alias=registry.note_alias)
