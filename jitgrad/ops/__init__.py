"""jitgrad's operators. ``registry.REGISTRY`` lists every op; the modules group them by kind.

The functions here (``jitgrad.ops.exp``, and ``jitgrad.exp`` too) are the ops declared public as a
``"function"`` where they are defined (``jitgrad/ops/public.py``), so this file has no list of them to
keep up to date; ``__all__`` names them. Importing this package also attaches the methods to ``Tensor``
(``methods.py``) and hands autograd the ops it runs itself (``autograd/provided.py``).
"""
from ..autograd.provided import provide
# Importing a module declares its ops; the in-place methods, which write with the others, come last.
from . import activations, arithmetic, device_copy, indexing, linalg, losses, math_functions, reductions, sampling, shape  # noqa: I001
from . import convolution, gathering, pooling, sorting, tap_sums
from . import arithmetic_arguments, einsum, inplace, registry  # composites of the ops above
# the tier-2 ops (docs/ops.md), composites of the ops above and Functions over numpy/SciPy
from . import combining, comparisons, compound_math, index_updates, matrix_functions, part_updates, products, scans
from . import bitwise, broadcasting, index_builders, integration, promotion, statistics
from . import special_functions
from . import inplace_variants, aliases  # noqa: I001 - in-place forms of the ops above, then their other names
from .losses import nll_loss  # nn.functional's building block
from .public import public_names
from .broadcast_sums import sum_to, sum_to_array, summed_dims
from .registry import REGISTRY
from .sampling import normal, uniform  # the random factories' ops

FUNCTIONS = public_names("function")
globals().update(FUNCTIONS)
__all__ = [*FUNCTIONS, "REGISTRY", "nll_loss", "normal", "sum_to", "uniform"]

# autograd sits below this layer, so it cannot import these: they are handed down.
provide(sum_to=sum_to, sum_to_array=sum_to_array, summed_dims=summed_dims, stack=shape.stack,
        note_alias=registry.note_alias, observed=registry.observed)

from . import methods  # noqa: E402,F401 - attaches the methods and operators to Tensor, once every op is declared
