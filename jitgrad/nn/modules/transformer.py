"""The Transformer's layers as PyTorch spells them: ``TransformerEncoderLayer`` and
``TransformerDecoderLayer`` (attention, a feed-forward block, residual connections and layer norms,
after each block or, with ``norm_first``, before it), the stacks ``TransformerEncoder`` and
``TransformerDecoder`` of copies of a layer, and ``Transformer``, an encoder and a decoder. Their
parameters carry PyTorch's names, so a PyTorch state dict loads into them; their results are
PyTorch's math path's (PyTorch's evaluation fast path computes the same values).
"""
from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

from ...dtypes import dtype as DType
from ...dtypes import get_default_dtype
from ...factories import tensor
from ...tensor import Tensor
from .. import functional as F
from .. import init
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm


def _activation(activation: str | Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if callable(activation):
        return activation
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


class _FeedForward(Module):
    """The feed-forward block's layers, which the encoder and decoder layers share: ``linear1``,
    ``dropout``, ``linear2`` and the activation."""

    def _make_feed_forward(self, d_model: int, dim_feedforward: int, dropout: float, activation: Any, bias: bool,
                           device: str | None, dtype: DType | None) -> None:
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, device=device, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, device=device, dtype=dtype)
        self.activation = _activation(activation)

    def _feed_forward(self, x: Tensor, dropout: Dropout) -> Tensor:
        return dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoderLayer(_FeedForward):
    """Self-attention then the feed-forward block, each with a residual connection and a layer norm."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = "relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device: str | None = None,
                 dtype: DType | None = None) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            device=device, dtype=dtype)
        self._make_feed_forward(d_model, dim_feedforward, dropout, activation, bias, device, dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        def attend(x: Tensor) -> Tensor:
            return self.dropout1(self.self_attn(x, x, x, attn_mask=src_mask, key_padding_mask=src_key_padding_mask,
                                                need_weights=False, is_causal=is_causal)[0])
        x = src
        if self.norm_first:
            x = x + attend(self.norm1(x))
            return x + self._feed_forward(self.norm2(x), self.dropout2)
        x = self.norm1(x + attend(x))
        return self.norm2(x + self._feed_forward(x, self.dropout2))


class TransformerDecoderLayer(_FeedForward):
    """Self-attention over the target, attention to the encoder's output (``memory``), then the
    feed-forward block, each with a residual connection and a layer norm."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = "relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device: str | None = None,
                 dtype: DType | None = None) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            device=device, dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, device=device, dtype=dtype)
        self._make_feed_forward(d_model, dim_feedforward, dropout, activation, bias, device, dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False) -> Tensor:
        def attend_self(x: Tensor) -> Tensor:
            return self.dropout1(self.self_attn(x, x, x, attn_mask=tgt_mask, key_padding_mask=tgt_key_padding_mask,
                                                need_weights=False, is_causal=tgt_is_causal)[0])

        def attend_memory(x: Tensor) -> Tensor:
            return self.dropout2(self.multihead_attn(x, memory, memory, attn_mask=memory_mask,
                                                     key_padding_mask=memory_key_padding_mask, need_weights=False,
                                                     is_causal=memory_is_causal)[0])
        x = tgt
        if self.norm_first:
            x = x + attend_self(self.norm1(x))
            x = x + attend_memory(self.norm2(x))
            return x + self._feed_forward(self.norm3(x), self.dropout3)
        x = self.norm1(x + attend_self(x))
        x = self.norm2(x + attend_memory(x))
        return self.norm3(x + self._feed_forward(x, self.dropout3))


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (each with parameters of its own), then ``norm``."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return out if self.norm is None else self.norm(out)


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer``, then ``norm``."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                        bool(tgt_is_causal), memory_is_causal)
        return out if self.norm is None else self.norm(out)


class Transformer(Module):
    """An encoder of ``num_encoder_layers`` and a decoder of ``num_decoder_layers`` layers, each stack
    ending in a layer norm, as PyTorch's."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = "relu", custom_encoder: Module | None = None,
                 custom_decoder: Module | None = None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: str | None = None,
                 dtype: DType | None = None) -> None:
        super().__init__()
        options = dict(dropout=dropout, activation=activation, layer_norm_eps=layer_norm_eps, batch_first=batch_first,
                       norm_first=norm_first, bias=bias, device=device, dtype=dtype)
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(d_model, nhead, dim_feedforward, **options), num_encoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(d_model, nhead, dim_feedforward, **options), num_decoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """PyTorch's: every parameter of more than one dimension (the attention and feed-forward
        matrices, a custom encoder's or decoder's too) drawn again by ``xavier_uniform_``, so that a
        model ported from PyTorch and trained from scratch starts from the same distribution."""
        for parameter in self.parameters():
            if parameter.dim() > 1:
                init.xavier_uniform_(parameter)

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        batch = 0 if self.batch_first else 1
        if src.dim() == 3 and src.shape[batch] != tgt.shape[batch]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                            tgt_is_causal, memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: str | None = None, dtype: DType | None = None) -> Tensor:
        """A float mask that lets position ``i`` see positions ``j <= i`` (0 there, -inf elsewhere)."""
        return tensor(np.triu(np.full((sz, sz), -np.inf), 1), dtype=dtype or get_default_dtype(), device=device)


__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerEncoderLayer"]
