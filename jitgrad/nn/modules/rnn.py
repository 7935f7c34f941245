"""Recurrent layers: one step (``RNNCell``, ``GRUCell``, ``LSTMCell``) and whole sequences (``RNN``,
``GRU``, ``LSTM``: stacked layers, either direction), with PyTorch's parameter names, gate order and
initialisation (every parameter uniform in ``±1/sqrt(hidden_size)``).

A step is a few registry ops, and a sequence is a Python loop over its steps: a compiled function
unrolls it, one graph per sequence length (a new length retraces).
"""
from __future__ import annotations

import math
import warnings
from typing import Any

from ...dtypes import dtype as DType
from ...factories import zeros
from ...ops import cat, stack
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import new_parameter
from .module import Module

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "GRU": 3, "LSTM": 4}


# ---- one step, from the weights: shared by the cells and the sequence layers ---------------------------
def _rnn_step(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None,
              relu: bool) -> Tensor:
    pre = F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
    return F.relu(pre) if relu else pre.tanh()


def _gru_step(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
              b_hh: Tensor | None) -> Tensor:
    """Gates in PyTorch's order (reset, update, new); the reset gate scales the hidden part of the
    new gate after its bias: ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``."""
    input_r, input_z, input_n = F.linear(x, w_ih, b_ih).chunk(3, -1)
    hidden_r, hidden_z, hidden_n = F.linear(h, w_hh, b_hh).chunk(3, -1)
    reset = (input_r + hidden_r).sigmoid()
    update = (input_z + hidden_z).sigmoid()
    new = (input_n + reset * hidden_n).tanh()
    return new + update * (h - new)


def _lstm_step(x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
               b_hh: Tensor | None) -> tuple[Tensor, Tensor]:
    """Gates in PyTorch's order (input, forget, cell, output)."""
    input_gate, forget_gate, cell_gate, output_gate = (F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)).chunk(4, -1)
    c = forget_gate.sigmoid() * c + input_gate.sigmoid() * cell_gate.tanh()
    return output_gate.sigmoid() * c.tanh(), c


def _reset_uniform(module: Module, hidden_size: int) -> None:
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    for weight in module.parameters():
        init.uniform_(weight, -bound, bound)


# ---- cells ----------------------------------------------------------------------------------------------
class _CellBase(Module):
    """``weight_ih`` (gates * hidden, input), ``weight_hh`` (gates * hidden, hidden) and the two biases."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, gates: int, device: str | None,
                 dtype: DType | None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = new_parameter(gates * hidden_size, input_size, device=device, dtype=dtype)
        self.weight_hh = new_parameter(gates * hidden_size, hidden_size, device=device, dtype=dtype)
        if bias:
            self.bias_ih = new_parameter(gates * hidden_size, device=device, dtype=dtype)
            self.bias_hh = new_parameter(gates * hidden_size, device=device, dtype=dtype)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_uniform(self, self.hidden_size)

    def _batched(self, input: Tensor, hx: Tensor | None) -> tuple[Tensor, Tensor | None, bool]:
        """The input as a batch (an unbatched (input_size,) one gets a batch of one), and the state."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if input.dim() == 2:
            return input, hx, True
        return input.unsqueeze(0), None if hx is None else hx.unsqueeze(0), False

    def _zeros(self, input: Tensor) -> Tensor:
        return zeros(input.shape[0], self.hidden_size, dtype=input.dtype)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        return text if nonlinearity == "tanh" else f"{text}, nonlinearity={nonlinearity}"


class RNNCell(_CellBase):
    """``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: str | None = None, dtype: DType | None = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, hx, batched = self._batched(input, hx)
        h = _rnn_step(input, self._zeros(input) if hx is None else hx, self.weight_ih, self.weight_hh,
                      self.bias_ih, self.bias_hh, self.nonlinearity == "relu")
        return h if batched else h.squeeze(0)


class GRUCell(_CellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: str | None = None,
                 dtype: DType | None = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, hx, batched = self._batched(input, hx)
        h = _gru_step(input, self._zeros(input) if hx is None else hx, self.weight_ih, self.weight_hh,
                      self.bias_ih, self.bias_hh)
        return h if batched else h.squeeze(0)


class LSTMCell(_CellBase):
    """Returns ``(h', c')``; ``hx`` is ``(h, c)`` or None for zeros."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: str | None = None,
                 dtype: DType | None = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
            hx = None if hx is None else (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = (self._zeros(input), self._zeros(input)) if hx is None else hx
        h, c = _lstm_step(input, h, c, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


# ---- sequences ------------------------------------------------------------------------------------------
class _SequenceBase(Module):
    """``num_layers`` stacked layers, each run over the whole sequence (and, with ``bidirectional``,
    backwards too, the two outputs concatenated); ``dropout`` between layers while training.
    Parameters ``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}`` (with
    ``_reverse`` for the backward direction), as PyTorch names them."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: str | None = None, dtype: DType | None = None) -> None:
        super().__init__()
        if not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=3)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        gates = _GATES[mode] * hidden_size
        directions = 2 if bidirectional else 1
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * directions
            for suffix in ("", "_reverse")[:directions]:
                self.register_parameter(f"weight_ih_l{layer}{suffix}",
                                        new_parameter(gates, layer_input, device=device, dtype=dtype))
                self.register_parameter(f"weight_hh_l{layer}{suffix}",
                                        new_parameter(gates, hidden_size, device=device, dtype=dtype))
                if bias:
                    for name in (f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"):
                        self.register_parameter(name, new_parameter(gates, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_uniform(self, self.hidden_size)

    def _weights(self, layer: int, suffix: str) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
        names = (f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}", f"bias_ih_l{layer}{suffix}",
                 f"bias_hh_l{layer}{suffix}")
        return tuple(self._parameters.get(name) for name in names)

    def _step(self, x: Tensor, state: Any, weights: tuple) -> Any:
        raise NotImplementedError

    def _run(self, input: Tensor, states: list[Any]) -> tuple[Tensor, list[Any]]:
        """Every layer and direction over ``input`` (seq, batch, features) from ``states`` (one per
        layer and direction); the last layer's outputs and the final states."""
        directions = 2 if self.bidirectional else 1
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for direction, suffix in enumerate(("", "_reverse")[:directions]):
                state = states[layer * directions + direction]
                weights = self._weights(layer, suffix)
                steps = range(input.shape[0] - 1, -1, -1) if direction else range(input.shape[0])
                hidden = [None] * input.shape[0]
                for t in steps:
                    state = self._step(input[t], state, weights)
                    hidden[t] = state[0] if isinstance(state, tuple) else state
                outputs.append(stack(hidden, 0))
                finals.append(state)
            input = outputs[0] if directions == 1 else cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                input = F.dropout(input, self.dropout, True)
        return input, finals

    def _prepare(self, input: Tensor) -> tuple[Tensor, bool]:
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        weight = self.weight_ih_l0
        if input.dtype.is_floating_point and input.dtype != weight.dtype:   # PyTorch's ValueError, up front
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight.dtype}). Convert "
                             f"input: input.to({weight.dtype}), or convert model: model.to({input.dtype})")
        if input.dim() == 2:
            return input.unsqueeze(1), False
        return (input.transpose(0, 1) if self.batch_first else input), True

    def _finish(self, output: Tensor, batched: bool) -> Tensor:
        if not batched:
            return output.squeeze(1)
        return output.transpose(0, 1) if self.batch_first else output

    def _initial(self, hx: Tensor | None, input: Tensor, batched: bool) -> list[Tensor]:
        """One (batch, hidden) state per layer and direction, from ``hx`` or zeros."""
        count = self.num_layers * (2 if self.bidirectional else 1)
        if hx is None:
            return [zeros(input.shape[1], self.hidden_size, dtype=input.dtype) for _ in range(count)]
        if not batched:
            hx = hx.unsqueeze(1)
        expected = (count, input.shape[1], self.hidden_size)
        if tuple(hx.shape) != expected:
            raise RuntimeError(f"Expected hidden size {expected}, got {list(hx.shape)}")
        return [hx[i] for i in range(count)]

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if self.batch_first is not False:
            text += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            text += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            text += f", bidirectional={self.bidirectional}"
        return text


class RNN(_SequenceBase):
    """Returns ``(output, h_n)``: every step's top-layer hidden state, and each layer's last one."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: str | None = None, dtype: DType | None = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, device, dtype)
        self.nonlinearity = nonlinearity

    def _step(self, x: Tensor, state: Tensor, weights: tuple) -> Tensor:
        return _rnn_step(x, state, *weights, self.nonlinearity == "relu")

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        input, batched = self._prepare(input)
        output, finals = self._run(input, self._initial(hx, input, batched))
        h_n = stack(finals, 0)
        return self._finish(output, batched), h_n if batched else h_n.squeeze(1)


class GRU(_SequenceBase):
    """Returns ``(output, h_n)``, as ``RNN``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: str | None = None, dtype: DType | None = None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device, dtype)

    def _step(self, x: Tensor, state: Tensor, weights: tuple) -> Tensor:
        return _gru_step(x, state, *weights)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        input, batched = self._prepare(input)
        output, finals = self._run(input, self._initial(hx, input, batched))
        h_n = stack(finals, 0)
        return self._finish(output, batched), h_n if batched else h_n.squeeze(1)


class LSTM(_SequenceBase):
    """Returns ``(output, (h_n, c_n))``; ``hx`` is ``(h_0, c_0)`` or None for zeros."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: str | None = None, dtype: DType | None = None) -> None:
        if proj_size != 0:
            raise NotImplementedError("LSTM: proj_size is not supported by jitgrad")
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device, dtype)

    def _step(self, x: Tensor, state: tuple[Tensor, Tensor], weights: tuple) -> tuple[Tensor, Tensor]:
        return _lstm_step(x, state[0], state[1], *weights)

    def forward(self, input: Tensor,
                hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        input, batched = self._prepare(input)
        if hx is None:
            states = list(zip(self._initial(None, input, batched), self._initial(None, input, batched)))
        else:
            states = list(zip(self._initial(hx[0], input, batched), self._initial(hx[1], input, batched)))
        output, finals = self._run(input, states)
        h_n, c_n = stack([h for h, _ in finals], 0), stack([c for _, c in finals], 0)
        if not batched:
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return self._finish(output, batched), (h_n, c_n)


__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNCell"]
