"""PyTorch's other names of jitgrad's ops (``arccos`` is ``acos``, ``greater`` is ``gt``), and the
questions users ask a tensor about itself (``nelement``, ``is_signed``, ``get_device``; ``is_cpu`` is
``Tensor``'s own, beside ``is_cuda``): one table of names, so an alias is the op itself (its gradient,
forward mode and lowering), never a second copy.

``jitgrad/ops/__init__.py`` imports this module after every other, so an alias's in-place form
(``arccos_`` for ``acos_``) is declared whenever the op's is."""
from __future__ import annotations

from ..tensor import Tensor
from .public import PUBLIC, declare_public, public
from .shape import flatten, transpose
from .sorting import sort

# PyTorch's alias: the op it names (each is ``Alias for torch.<op>`` in PyTorch's documentation).
ALIASES = {"arccos": "acos", "arcsin": "asin", "arctan": "atan", "arctan2": "atan2", "arccosh": "acosh",
           "arcsinh": "asinh", "arctanh": "atanh", "greater": "gt", "greater_equal": "ge", "less": "lt",
           "less_equal": "le", "not_equal": "ne", "divide_": "div_", "multiply_": "mul_", "subtract_": "sub_",
           "swapaxes_": "transpose_", "swapdims_": "transpose_", "concat": "cat", "concatenate": "cat"}


def _declare_aliases() -> None:
    for alias, name in ALIASES.items():
        declare_public(alias, PUBLIC[name].value, PUBLIC[name].variants)
        if f"{name}_" in PUBLIC:
            declare_public(f"{alias}_", PUBLIC[f"{name}_"].value, PUBLIC[f"{name}_"].variants)


_declare_aliases()
declare_public("nelement", Tensor.numel, ("method",))
declare_public("numel", Tensor.numel, ("function",))   # the methods PyTorch also spells as functions
declare_public("is_floating_point", Tensor.is_floating_point, ("function",))


@public("function", "method")
def ravel(input: Tensor) -> Tensor:
    """The elements as one dimension, a view when the layout allows (``flatten`` of every dimension)."""
    return flatten(input)


@public("function", "method")
def positive(input: Tensor) -> Tensor:
    """``+input``: the tensor itself, as PyTorch returns it; refused for bools, as there."""
    if input._data.dtype.kind == "b":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


@public("function", "method")
def msort(input: Tensor) -> Tensor:
    """The elements sorted along the first dimension (``sort(input, dim=0).values``)."""
    return sort(input, 0).values


@public("function", "method")
def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of a (batch of) matrices: of a real tensor, its last two dimensions
    swapped (a view, as ``mT``)."""
    if input.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    return transpose(input, -2, -1)


# ---- questions about the tensor -----------------------------------------------------------------------
@public("function", "method")
def is_complex(input: Tensor) -> bool:
    """Always False: jitgrad has no complex dtype."""
    return False


@public("function", "method")
def is_signed(input: Tensor) -> bool:
    """Whether the dtype holds negative numbers: floats and signed integers, not ``uint8`` or bool."""
    return input._data.dtype.kind in "fi"


@public("function", "method")
def is_nonzero(input: Tensor) -> bool:
    """Whether the one element of a one-element tensor is not zero; PyTorch's errors otherwise."""
    size = input.numel()
    if size != 1:
        which = "no values" if size == 0 else "more than one value"
        raise RuntimeError(f"Boolean value of Tensor with {which} is ambiguous")
    return bool(input.item() != 0)


@public("function", "method")
def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether the two have one shape."""
    return tuple(input.shape) == tuple(other.shape)


@public("function", "method")
def get_device(input: Tensor) -> int:
    """The GPU's index for a CUDA tensor, -1 for a CPU one (PyTorch's convention)."""
    where = input.device
    return -1 if where.type == "cpu" else (where.index or 0)
