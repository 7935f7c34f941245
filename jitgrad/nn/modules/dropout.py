"""``Dropout``: ``nn.functional.dropout`` while the module is training, the identity in ``eval()``."""
from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from .module import Module


class Dropout(Module):
    """Draws its mask from jitgrad's generator (``jitgrad.manual_seed``); ``inplace`` is taken for
    PyTorch's signature, the result is always a new tensor."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability p has to be between 0 and 1, but got p={p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(Dropout):
    """Zeroes whole channels of an (N, C, L) or (C, L) input."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout1d(input, self.p, self.training)


class Dropout2d(Dropout):
    """Zeroes whole channels of an (N, C, H, W) or (C, H, W) input."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout2d(input, self.p, self.training)


__all__ = ["Dropout", "Dropout1d", "Dropout2d"]
