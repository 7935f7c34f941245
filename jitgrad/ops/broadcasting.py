"""``broadcast_shapes`` and ``broadcast_tensors``, as PyTorch's: the shape operands broadcast to, and the
operands expanded to it (views, as ``expand`` makes them, so gradients sum back)."""
from __future__ import annotations

from ..shapes import Size, broadcast_shapes as broadcast_of
from ..tensor import Tensor
from .public import public
from .shape import expand


@public("function")
def broadcast_shapes(*shapes: int | tuple[int, ...]) -> Size:
    """The shape that tensors of ``shapes`` (each a tuple, or an int for a 1-d one) broadcast to."""
    return Size(broadcast_of("broadcast_shapes", [(s,) if isinstance(s, int) else tuple(s) for s in shapes]))


@public("function")
def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Every tensor expanded to their common shape (views)."""
    shape = broadcast_of("broadcast_tensors", [t.shape for t in tensors])
    return tuple(expand(t, shape) for t in tensors)
