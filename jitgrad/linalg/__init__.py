"""``jitgrad.linalg``: PyTorch's ``torch.linalg`` namespace.

Norms and products are composites of jitgrad ops (``norms_and_products.py``); inverses, solvers and
decompositions run numpy's LAPACK in ``autograd.Function``s whose backward is written in jitgrad ops, so
gradients of every order follow (``decompositions.py``, ``solvers.py``). Those refuse inside a compiled
function with an error that says to call them outside it: no backend lowers LAPACK."""
from ..ops.linalg import matmul
from ..ops.matrix_functions import det, matrix_power, slogdet
from .decompositions import solve_triangular
from .norms_and_products import cross, diagonal, matrix_norm, multi_dot, norm, vecdot, vector_norm
from .solvers import (cholesky, cholesky_ex, eigh, eigvalsh, inv, inv_ex, lstsq, pinv, qr, solve,
                      svd, svdvals)

__all__ = ["cholesky", "cholesky_ex", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "inv_ex", "lstsq",
           "matmul", "matrix_norm", "matrix_power", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve",
           "solve_triangular", "svd", "svdvals", "vecdot", "vector_norm"]
