"""``MultiheadAttention``: queries attend to keys and values through ``num_heads`` heads of
``embed_dim / num_heads`` dimensions, with PyTorch's parameters (``in_proj_weight``, ``in_proj_bias``,
``out_proj``), initialisation, masks and outputs, composed of registry ops.

Its boolean masks say which positions do *not* take part (True), the opposite of
``scaled_dot_product_attention``'s, as in PyTorch; a float mask is added to the scores.
"""
from __future__ import annotations

import math

from ...dtypes import bool as bool_
from ...dtypes import dtype as DType
from ...factories import zeros
from ...ops import cat, where
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import new_parameter
from .linear import Linear
from .module import Module


class NonDynamicallyQuantizableLinear(Linear):
    """``MultiheadAttention.out_proj``: a ``Linear`` under the name PyTorch gives it (its repr shows it)."""


class MultiheadAttention(Module):
    """Queries attend to keys and values of sizes ``kdim`` and ``vdim`` (``embed_dim`` unless given:
    then one packed ``in_proj_weight``, else ``q_proj_weight``, ``k_proj_weight`` and
    ``v_proj_weight``, as PyTorch's). ``add_bias_kv`` appends a learnt key and value to every
    sequence, ``add_zero_attn`` a zero one. ``forward`` returns the output and, when
    ``need_weights``, the attention weights averaged over the heads (or per head without
    ``average_attn_weights``)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: str | None = None,
                 dtype: DType | None = None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        if self._qkv_same_embed_dim:
            self.in_proj_weight = new_parameter(3 * embed_dim, embed_dim, device=device, dtype=dtype)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = new_parameter(embed_dim, embed_dim, device=device, dtype=dtype)
            self.k_proj_weight = new_parameter(embed_dim, self.kdim, device=device, dtype=dtype)
            self.v_proj_weight = new_parameter(embed_dim, self.vdim, device=device, dtype=dtype)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = new_parameter(3 * embed_dim, device=device, dtype=dtype)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        if add_bias_kv:
            self.bias_k = new_parameter(1, 1, embed_dim, device=device, dtype=dtype)
            self.bias_v = new_parameter(1, 1, embed_dim, device=device, dtype=dtype)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for weight in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        """``is_causal`` is a hint that ``attn_mask`` is the causal mask, as in PyTorch; the mask itself
        must be given."""
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                               "module method `generate_square_subsequent_mask` to create this mask.")
        batched = query.dim() == 3
        if self.batch_first and batched:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        if self._qkv_same_embed_dim:
            e = self.embed_dim
            weights = tuple(self.in_proj_weight[i * e:(i + 1) * e] for i in range(3))
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        out, attention = _multi_head_attention(query, key, value, self.num_heads, weights, self.in_proj_bias,
                                               self.out_proj.weight, self.out_proj.bias, self.dropout, self.training,
                                               key_padding_mask, need_weights, attn_mask, average_attn_weights,
                                               (self.bias_k, self.bias_v), self.add_zero_attn)
        if self.batch_first and batched:
            out = out.transpose(0, 1)
        return out, attention


def _additive(mask: Tensor | None, dtype: object, name: str) -> Tensor | None:
    """A ``MultiheadAttention`` mask as numbers to add: a boolean one is -inf where True."""
    if mask is None:
        return None
    if mask.dtype == bool_:
        return where(mask, -math.inf, 0.0).to(dtype)
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _multi_head_attention(query: Tensor, key: Tensor, value: Tensor, num_heads: int,
                          in_proj_weights: tuple[Tensor, Tensor, Tensor], in_proj_bias: Tensor | None,
                          out_proj_weight: Tensor, out_proj_bias: Tensor | None, dropout_p: float = 0.0,
                          training: bool = True, key_padding_mask: Tensor | None = None, need_weights: bool = True,
                          attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                          bias_kv: tuple[Tensor | None, Tensor | None] = (None, None),
                          add_zero_attn: bool = False) -> tuple[Tensor, Tensor | None]:
    """Inputs (L, N, E) or unbatched (L, E); the output, and the attention weights averaged over the
    heads (or per head) when ``need_weights``. The weights path is PyTorch's: a row masked
    everywhere gives NaN there, as PyTorch's does; without weights it is
    ``scaled_dot_product_attention``'s (zeros). A learnt key and value (``bias_kv``) and a zero one
    (``add_zero_attn``) are appended to every sequence after the masks' shapes are checked, and the
    masks let every query see them, as PyTorch does."""
    unbatched = query.dim() == 2
    if unbatched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        key_padding_mask = None if key_padding_mask is None else key_padding_mask.unsqueeze(0)
    length, batch, embed = query.shape
    keys = key.shape[0]
    head = embed // num_heads
    bias = [None] * 3 if in_proj_bias is None else [in_proj_bias[i * embed:(i + 1) * embed] for i in range(3)]
    q, k, v = (x @ w.t() if b is None else x @ w.t() + b
               for x, w, b in zip((query, key, value), in_proj_weights, bias))
    mask = _additive(attn_mask, q.dtype, "attn_mask")
    if mask is not None:
        expected = (length, keys) if mask.dim() == 2 else (batch * num_heads, length, keys)
        if tuple(mask.shape) != expected:
            raise RuntimeError(f"The shape of the {mask.dim()}D attn_mask is {tuple(mask.shape)}, but should be "
                               f"{expected}.")
    padding = _additive(key_padding_mask, q.dtype, "key_padding_mask")
    if padding is not None and tuple(padding.shape) != (batch, keys):
        raise AssertionError(f"expecting key_padding_mask shape of {(batch, keys)}, but got {tuple(padding.shape)}")
    bias_k, bias_v = bias_kv
    appended = (bias_k is not None) + bool(add_zero_attn)
    if bias_k is not None:
        k = cat([k, bias_k.expand(1, batch, embed)])
        v = cat([v, bias_v.expand(1, batch, embed)])
    q = q.reshape(length, batch * num_heads, head).transpose(0, 1)
    k = k.reshape(k.shape[0], batch * num_heads, head).transpose(0, 1)
    v = v.reshape(v.shape[0], batch * num_heads, head).transpose(0, 1)
    if add_zero_attn:
        k = cat([k, zeros(batch * num_heads, 1, head, dtype=k.dtype, device=k.device)], 1)
        v = cat([v, zeros(batch * num_heads, 1, head, dtype=v.dtype, device=v.device)], 1)
    if appended:  # every query may attend to the appended keys
        mask = None if mask is None else F.pad(mask, (0, appended))
        padding = None if padding is None else F.pad(padding, (0, appended))
    keys += appended
    if padding is not None:
        padding = padding.reshape(batch, 1, 1, keys).expand(batch, num_heads, 1, keys) \
            .reshape(batch * num_heads, 1, keys)
        mask = padding if mask is None else mask + padding
    p = dropout_p if training else 0.0
    if need_weights:
        scores = (q * (1.0 / math.sqrt(head))) @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores + mask
        weights = scores.softmax(-1)
        if p > 0.0:
            weights = F.dropout(weights, p)
        attended = weights @ v
    else:
        attended = F.scaled_dot_product_attention(q, k, v, mask, p)  # the mask broadcasts over the heads
        weights = None
    out = attended.transpose(0, 1).reshape(length * batch, embed) @ out_proj_weight.t()
    if out_proj_bias is not None:
        out = out + out_proj_bias
    out = out.reshape(length, batch, embed)
    if weights is not None:
        weights = weights.reshape(batch, num_heads, length, keys)
        if average_attn_weights:
            weights = weights.mean(1)
        if unbatched:
            weights = weights.squeeze(0)
    return (out.squeeze(1) if unbatched else out), weights



__all__ = ["MultiheadAttention"]
