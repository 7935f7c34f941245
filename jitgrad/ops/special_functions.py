"""Special functions numpy lacks, computed by SciPy (a dependency): ``erfc``, ``erfinv``, ``lgamma``,
``digamma``, ``polygamma``, and their in-place forms.

No composite of the registry's ops reaches PyTorch's precision over their whole range (``1 - erf(x)``
loses every digit of ``erfc`` beyond x = 6), and a registry op needs a lowering in every backend, so each
is an ``autograd.Function``: SciPy's forward, and a backward written in jitgrad ops that calls the next
function of the family (``lgamma``' is ``digamma``, ``digamma``'s ``polygamma(1)``, ``polygamma(n)``'s
``polygamma(n + 1)``, ``erfinv``'s ``sqrt(pi)/2 exp(erfinv(x)**2)``), so gradients of every order and
forward mode follow. No backend lowers SciPy, so they refuse inside a compiled function."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .. import dtypes
from ..autograd.function import Function, FunctionCtx
from ..tensor import Tensor
from . import inplace
from .device_copy import to
from .host_reads import from_host, host_values, refuse_when_traced
from .public import declare_public, public


def _floating_values(op: str, input: Tensor) -> np.ndarray:
    """``input``'s values in the dtype the result takes (the default float for integers), as PyTorch."""
    refuse_when_traced(op, "its forward is SciPy's, which no backend lowers")
    values = host_values(input)
    if values.dtype.kind == "b":
        raise RuntimeError(f"\"{op}_vml_cpu\" not implemented for 'Bool'")
    return values if values.dtype.kind == "f" else values.astype(dtypes.get_default_dtype().numpy)


def result_like(array: np.ndarray, values: np.ndarray, like: Tensor) -> Tensor:
    """A SciPy function's ``array`` of ``values`` as a tensor of their dtype, on ``like``'s device."""
    return to(from_host(np.asarray(array, values.dtype)), like.device)


def scipy_special(name: str) -> Callable[..., np.ndarray]:
    """``scipy.special.<name>``, SciPy imported on first use: most programs never call these."""
    import scipy.special
    return getattr(scipy.special, name)


def scipy_function(name: str, values: Callable[[str, Tensor], np.ndarray], op: str,
                   forward: Callable[[np.ndarray], np.ndarray], chain: Callable[..., Tensor],
                   saves: tuple[str, ...], node: str) -> type[Function]:
    """An ``autograd.Function`` named ``name`` over SciPy for a function of one tensor: ``forward`` of the
    tensor's ``values(op, input)`` (``op`` names it in errors and refusals), and ``chain(g, input,
    result)``, its derivative applied to ``g`` in jitgrad ops, for the backward (``g`` the gradient) and
    forward mode (``g`` the tangent). Only what ``saves`` names (``"input"``, ``"result"``) is saved, so an
    in-place change of the other after the call is no error; ``chain`` gets None for the rest. ``node``
    is PyTorch's name for its backward node."""
    def forward_(ctx: FunctionCtx, input: Tensor) -> Tensor:
        array = values(op, input)
        result = result_like(forward(array), array, input)
        kept = {"input": input, "result": result}
        ctx.save_for_backward(*(kept[n] for n in saves))
        ctx.input, ctx.result = (kept[n] if n in saves else None for n in ("input", "result"))
        return result

    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        saved = dict(zip(saves, ctx.saved_tensors))
        return chain(grad, saved.get("input"), saved.get("result"))

    def jvp(ctx: FunctionCtx, input_t: Tensor) -> Tensor:
        return chain(input_t, ctx.input, ctx.result)
    return type(name, (Function,), {"__doc__": f"``{op}`` by SciPy; its derivative in jitgrad ops.",
                                    "__module__": __name__, "forward": staticmethod(forward_),
                                    "backward": staticmethod(backward), "jvp": staticmethod(jvp),
                                    "_node_name": node})


# erfc: 1 - erf(x), exact in the tail; d/dx = -2/sqrt(pi) exp(-x**2)
Erfc = scipy_function("Erfc", _floating_values, "erfc", lambda v: scipy_special("erfc")(v),
                      lambda g, x, _: g * (-(x * x)).exp() * (-2.0 / math.sqrt(math.pi)), ("input",),
                      "ErfcBackward0")
# erfinv: the inverse of erf on (-1, 1); d/dx = sqrt(pi)/2 exp(erfinv(x)**2)
Erfinv = scipy_function("Erfinv", _floating_values, "erfinv", lambda v: scipy_special("erfinv")(v),
                        lambda g, _, r: g * (r * r).exp() * (math.sqrt(math.pi) / 2.0), ("result",),
                        "ErfinvBackward0")
# lgamma: log|gamma(x)|, +inf at -inf as PyTorch's (SciPy's: -inf); d/dx = digamma(x)
Lgamma = scipy_function("Lgamma", _floating_values, "lgamma",
                        lambda v: np.where(v == -np.inf, np.inf, scipy_special("gammaln")(v)),
                        lambda g, x, _: g * digamma(x), ("input",), "LgammaBackward0")


class Polygamma(Function):
    """The ``n``-th derivative of ``digamma`` (``n = 0``: digamma itself, -inf at 0 as PyTorch's);
    d/dx = polygamma(n + 1, x)."""

    _node_name = "PolygammaBackward0"

    @staticmethod
    def forward(ctx: FunctionCtx, n: int, input: Tensor) -> Tensor:
        values = _floating_values("digamma" if n == 0 else "polygamma", input)
        ctx.save_for_backward(input)
        ctx.n, ctx.input = n, input
        out = scipy_special("digamma")(values) if n == 0 else scipy_special("polygamma")(n, values)
        return result_like(out, values, input)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[None, Tensor]:
        (input,) = ctx.saved_tensors
        return None, grad * polygamma(ctx.n + 1, input)

    @staticmethod
    def jvp(ctx: FunctionCtx, n_t: None, input_t: Tensor) -> Tensor:  # noqa: ARG004 - n has no tangent
        return input_t * polygamma(ctx.n + 1, ctx.input)


@public("function", "method")
def erfc(input: Tensor) -> Tensor:
    """The complementary error function, ``1 - erf(x)`` without the cancellation."""
    return Erfc.apply(input)


@public("function", "method")
def erfinv(input: Tensor) -> Tensor:
    """The inverse error function: +-inf at +-1, NaN outside [-1, 1]."""
    return Erfinv.apply(input)


@public("function", "method")
def lgamma(input: Tensor) -> Tensor:
    """``log(|gamma(x)|)``: +inf at 0 and the negative integers."""
    return Lgamma.apply(input)


class Digamma(Polygamma):
    """``Polygamma`` with ``n = 0``, under PyTorch's name for digamma's node."""

    _node_name = "DigammaBackward0"


@public("function", "method")
def digamma(input: Tensor) -> Tensor:
    """The derivative of ``lgamma``: -inf at 0, NaN at the negative integers, as PyTorch's."""
    return Digamma.apply(0, input)


def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of ``digamma`` (``torch.polygamma(n, input)``; the method is
    ``x.polygamma(n)``)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n, got {n!r}")
    if not isinstance(input, Tensor):
        raise TypeError(f"polygamma(): argument 'input' must be Tensor, not {type(input).__name__}")
    return Polygamma.apply(n, input)


def _polygamma_in_place(self: Tensor, n: int) -> Tensor:
    """``x.polygamma_(n)``: ``polygamma(n, x)`` written into ``x``."""
    return inplace.apply_inplace("polygamma_", self, lambda x, order: polygamma(order, x), n)


declare_public("polygamma", polygamma, ("function",))
for _name, _fn in (("erfc", erfc), ("erfinv", erfinv), ("lgamma", lgamma), ("digamma", digamma)):
    declare_public(f"{_name}_", inplace._written_back(_name, _fn), ("method",))
declare_public("polygamma_", _polygamma_in_place, ("method",))
