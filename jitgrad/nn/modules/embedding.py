"""``Embedding``: a table of ``num_embeddings`` vectors looked up by integer indices."""
from __future__ import annotations

from ...autograd import no_grad
from ...dtypes import dtype as DType
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter, new_parameter
from .module import Module


class Embedding(Module):
    """``weight`` (num_embeddings, embedding_dim) drawn from a standard normal, as in PyTorch; the
    row ``padding_idx`` starts at zeros and gets no gradient. PyTorch's ``max_norm``,
    ``scale_grad_by_freq`` and ``sparse`` are not supported (an error when given)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Tensor | None = None, _freeze: bool = False,
                 device: str | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        unsupported = [name for name, given in (("max_norm", max_norm is not None), ("norm_type", norm_type != 2.0),
                                                ("scale_grad_by_freq", scale_grad_by_freq), ("sparse", sparse))
                       if given]
        if unsupported:
            raise NotImplementedError(f"Embedding: {', '.join(unsupported)} not supported by jitgrad")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = new_parameter(num_embeddings, embedding_dim, device=device, dtype=dtype)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None) -> "Embedding":
        """An Embedding holding ``embeddings`` (shared, not copied), frozen unless ``freeze=False``."""
        if embeddings.dim() != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx=padding_idx, _weight=embeddings, _freeze=freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        return text if self.padding_idx is None else f"{text}, padding_idx={self.padding_idx}"


__all__ = ["Embedding"]
