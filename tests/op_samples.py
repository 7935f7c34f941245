"""One list of samples, at least one for every op in ``jitgrad.ops.registry.REGISTRY``.

A sample names the registry op it exercises, calls it through the public API (``jg.<name>``, a method
or an operator), gives PyTorch's equivalent (``SAME`` where the callable is written with operators and
methods both libraries share), the input shapes and the domain each input is drawn from. Domains keep
inputs where the op is smooth: positive for log/sqrt/rsqrt and pow's base, away from zero for abs/relu,
away from clamp's limits, no ties for max/maximum. Ops without derivatives (comparisons, argmax,
logical_*) and index outputs only have their values checked, against ``numpy_fn`` and PyTorch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

import jitgrad as jg
import jitgrad.nn.functional as F
from jitgrad.ops.losses import cross_entropy_backward
from jitgrad.ops.registry import REGISTRY

try:  # PyTorch is an optional oracle: its callables are only called by the tests that import it
    import torch
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None

SAME = "same"  # the jitgrad callable works unchanged on torch tensors


# ---- domains: how one input's values are drawn ------------------------------------------------------
def real(low: float = -2.0, high: float = 2.0, avoid: tuple[float, ...] = (), margin: float = 0.1):
    """Uniform in [low, high], redrawn within ``margin`` of each point in ``avoid`` (kinks, jumps)."""
    def draw(rng, shape):
        values = np.asarray(rng.uniform(low, high, size=shape), dtype=np.float64)
        for _ in range(1000):
            near = np.zeros(shape, dtype=bool)
            for point in avoid:
                near |= np.abs(values - point) < margin
            if not near.any():
                return values
            values = np.where(near, rng.uniform(low, high, size=shape), values)
        raise AssertionError("could not draw values away from the kinks")
    return draw


def distinct(low: float = -2.0, high: float = 2.0):
    """All elements different by at least (high - low) / (n - 1) / 2: no ties for max/argmax/sort."""
    def draw(rng, shape):
        n = math.prod(shape)
        step = (high - low) / max(n - 1, 1)
        values = np.linspace(low, high, n) + rng.uniform(-0.25, 0.25, size=n) * step
        return rng.permutation(values).reshape(shape)
    return draw


def grid(offset: float):
    """Multiples of 0.5 plus ``offset``: inputs drawn with offsets 0 and 0.25 never tie (maximum)."""
    def draw(rng, shape):
        return np.asarray(rng.integers(-4, 5, size=shape) * 0.5 + offset, dtype=np.float64)
    return draw


def integers(low: int = -1, high: int = 1):
    """Small whole numbers as float64, so that comparisons see ties."""
    def draw(rng, shape):
        return np.asarray(rng.integers(low, high + 1, size=shape), dtype=np.float64)
    return draw


def booleans():
    def draw(rng, shape):
        return np.asarray(rng.random(size=shape) < 0.5)
    return draw


def with_zeros(count: int):
    """Real values with ``count`` exact zeros, where prod's gradient needs care."""
    def draw(rng, shape):
        values = real()(rng, shape)
        values.flat[rng.choice(values.size, size=count, replace=False)] = 0.0
        return values
    return draw


def generator_states():
    """An int64 ``[seed, offset]`` for the random ops: any seed, an offset far from overflowing."""
    def draw(rng, shape):
        return np.array([rng.integers(-2 ** 63, 2 ** 63 - 1), rng.integers(0, 2 ** 40)], dtype=np.int64)
    return draw


def _sampled(distribution: str, shape: tuple[int, ...], dtype):
    """The random op ``distribution`` at a given state, and its reference: the eager sampler (checked
    bit for bit against a plain-Python Philox in tests/eager/test_random.py)."""
    from jitgrad.random.sampling import sample
    op = getattr(jg.ops, distribution)
    return (lambda state: op(state, shape=shape, dtype=np.dtype(dtype)),
            lambda state: sample(state, shape, dtype, distribution))


def _permuted(n: int, dtype):
    """The ``randperm`` op at a given state, and its reference: the stable ranks of n float64 uniforms."""
    from jitgrad.ops.sampling import randperm
    from jitgrad.random.sampling import permutation
    return (lambda state: randperm(state, shape=(n,), dtype=np.dtype(dtype)),
            lambda state: permutation(state, n, dtype))


REAL = real()
POSITIVE = real(0.5, 2.0)
NONZERO = real(avoid=(0.0,))


@dataclass(frozen=True)
class Sample:
    op: str                      # the REGISTRY name of the op whose output this is
    label: str
    fn: Callable                 # jitgrad tensors -> jitgrad tensor, through the public API
    torch_fn: Callable | str | None
    shapes: tuple[tuple[int, ...], ...]
    domain: Callable | tuple[Callable, ...] = REAL
    numpy_fn: Callable | None = None   # reference values for samples without gradients
    grad: bool | None = None           # None: whether the op has derivatives
    eps: float = 1e-6                  # finite-difference step
    atol: float = 1e-6

    @property
    def id(self) -> str:
        return f"{self.op}-{self.label}"

    @property
    def differentiable(self) -> bool:
        return REGISTRY[self.op].differentiable if self.grad is None else self.grad

    @property
    def torch_callable(self) -> Callable | None:
        return self.fn if self.torch_fn == SAME else self.torch_fn

    def arrays(self, seed: int = 0) -> list[np.ndarray]:
        """The inputs as numpy arrays; the same seed gives the same inputs."""
        rng = np.random.default_rng(seed)
        domains = self.domain if isinstance(self.domain, tuple) else (self.domain,) * len(self.shapes)
        assert len(domains) == len(self.shapes), f"{self.id}: one domain per input"
        return [np.asarray(d(rng, s)) for d, s in zip(domains, self.shapes)]


def _t(array):
    return torch.tensor(array)


# Constants the callables close over, so that finite differences only move the inputs.
COND = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])
REPEATED_ROWS = np.array([0, 2, 0])
MASK = np.array([True, False, True])
CLASSES = np.array([2, 0, 1])


def _set_rows(x, v):
    """``x[1:] = v`` on a non-leaf, returning x: the public way to call ``index_put``."""
    x[1:] = v
    return x


def _set_at(index):
    """``x[index] = v`` on a non-leaf, returning x."""
    def set_at(x, v):
        x[index] = v
        return x
    return set_at


def _scale_first_row(x, w):
    """``x[0].mul_(w)`` on a non-leaf, returning x: an in-place op through a view (``copy_slices``)."""
    x[0].mul_(w)
    return x


def _grad_of_getitem(index):
    """The gradient of ``x[index] * w`` with respect to x, as a function of w, built with create_graph:
    the only public way to call ``index_scatter``, getitem's backward."""
    def jitgrad_fn(w):
        x = jg.zeros(3, 4, dtype=jg.float64, requires_grad=True)
        return jg.autograd.grad((x[index] * w).sum(), x, create_graph=True)[0]

    def torch_fn(w):
        x = torch.zeros(3, 4, dtype=torch.float64, requires_grad=True)
        i = torch.tensor(index) if isinstance(index, np.ndarray) else index
        return torch.autograd.grad((x[i] * w).sum(), x, create_graph=True)[0]
    return jitgrad_fn, torch_fn


def _grad_of_nll_loss(reduction, classes=CLASSES, **options):
    """The gradient of ``nll_loss(x)`` with respect to x for an incoming gradient g, as a function of g,
    built with create_graph: the public way to call ``nll_loss_backward``."""
    def jitgrad_fn(g):
        x = jg.zeros(3, 4, dtype=jg.float64, requires_grad=True)
        loss = F.nll_loss(x, jg.tensor(classes), reduction=reduction, **options)
        return jg.autograd.grad(loss, x, g, create_graph=True)[0]

    def torch_fn(g):
        x = torch.zeros(3, 4, dtype=torch.float64, requires_grad=True)
        loss = torch.nn.functional.nll_loss(x, _t(classes), reduction=reduction, **options)
        return torch.autograd.grad(loss, x, g, create_graph=True)[0]
    return jitgrad_fn, torch_fn


def _grad_of(function: str, dim: int):
    """The gradient of ``jitgrad.function(x, dim)`` with respect to x for an incoming gradient g, as a
    function of (g, x), built with create_graph: the public way to call ``softmax_backward`` and
    ``log_softmax_backward``. The gradient is taken at a leaf of zeros added to x, so that x itself
    need not require grad and its tangent (forward mode) reaches the result."""
    def jitgrad_fn(g, x):
        at = jg.zeros(x.shape, dtype=x.dtype, requires_grad=True)
        return jg.autograd.grad(getattr(jg, function)(x + at, dim), at, g, create_graph=True)[0]

    def torch_fn(g, x):
        at = torch.zeros(x.shape, dtype=x.dtype, requires_grad=True)
        return torch.autograd.grad(getattr(torch, function)(x + at, dim), at, g, create_graph=True)[0]
    return jitgrad_fn, torch_fn


def _cross_entropy_backward(reduction, classes=CLASSES):
    """``cross_entropy_backward`` called directly (a pass makes it from ``log_softmax_backward`` of
    ``nll_loss_backward``: no public call reaches it), with its reference in numpy: the one-hot gradient
    of nll_loss, then log_softmax's backward of it."""
    def jitgrad_fn(g, y):
        return cross_entropy_backward(g, jg.tensor(classes), y, reduction=reduction, ignore_index=-100)

    def numpy_fn(g, y):
        kept = classes != -100
        scale = 1.0 if reduction != "mean" else 1.0 / np.count_nonzero(kept)
        values = -g * scale if reduction == "none" else np.full(len(classes), -g * scale)
        dense = np.zeros_like(y)
        dense[np.flatnonzero(kept), classes[kept]] = values[kept]
        return dense - np.exp(y) * dense.sum(axis=1, keepdims=True)
    return jitgrad_fn, numpy_fn


# Constants of the integer-indexing ops' samples (gather, scatter_add, embedding, sort/topk).
GATHER_INDEX = np.array([[0, 2], [1, 1], [3, 0]])
GATHER_ROWS = np.array([[2, 0, 1, 2], [0, 0, 2, 1]])
TOKENS = np.array([[1, 3, 1], [0, 2, 3]])
FILL_MASK = np.array([[True, False, False, True], [False, True, False, False], [True, True, False, False]])
IGNORED = np.array([2, -100, 1])  # the middle target ignored (PyTorch's default ignore_index)
SPECIAL = np.array([[0.5, np.nan, np.inf, -1.0], [-np.inf, 2.0, np.nan, 0.0]])


def _grad_of_gather(dim, index):
    """The gradient of ``gather(x, dim, index) * w`` with respect to x, as a function of w, built with
    create_graph: the public way to call ``scatter_add`` into zeros, gather's backward."""
    def jitgrad_fn(w):
        x = jg.zeros(3, 4, dtype=jg.float64, requires_grad=True)
        return jg.autograd.grad((jg.gather(x, dim, jg.tensor(index)) * w).sum(), x, create_graph=True)[0]

    def torch_fn(w):
        x = torch.zeros(3, 4, dtype=torch.float64, requires_grad=True)
        return torch.autograd.grad((torch.gather(x, dim, _t(index)) * w).sum(), x, create_graph=True)[0]
    return jitgrad_fn, torch_fn


def _grad_of_embedding(padding_idx):
    """The gradient of ``embedding(TOKENS, w)`` with respect to w, as a function of the incoming
    gradient g, built with create_graph: the public way to call ``embedding_dense_backward``."""
    def jitgrad_fn(g):
        w = jg.zeros(4, 3, dtype=jg.float64, requires_grad=True)
        return jg.autograd.grad(F.embedding(jg.tensor(TOKENS), w, padding_idx), w, g, create_graph=True)[0]

    def torch_fn(g):
        w = torch.zeros(4, 3, dtype=torch.float64, requires_grad=True)
        out = torch.nn.functional.embedding(_t(TOKENS), w, padding_idx)
        return torch.autograd.grad(out, w, g, create_graph=True)[0]
    return jitgrad_fn, torch_fn


def _special_values(shape_unused=None):
    def draw(rng, shape):
        return SPECIAL.copy()
    return draw
POOLED = np.random.default_rng(7).permutation(50).reshape(1, 2, 5, 5) / 10.0  # distinct: no ties


def _grad_of_max_pool():
    """The gradient of ``max_pool2d(x)`` at a constant x with no ties, as a function of the incoming
    gradient g, built with create_graph: the public way to call ``max_pool2d_backward``."""
    def jitgrad_fn(g):
        x = jg.tensor(POOLED, requires_grad=True)
        return jg.autograd.grad(F.max_pool2d(x, 3, stride=2, padding=1), x, g, create_graph=True)[0]

    def torch_fn(g):
        x = torch.tensor(POOLED, requires_grad=True)
        out = torch.nn.functional.max_pool2d(x, 3, stride=2, padding=1)
        return torch.autograd.grad(out, x, g, create_graph=True)[0]
    return jitgrad_fn, torch_fn


def _gather_of_max_pool():
    """The derivative of max_pool2d's gradient with respect to the incoming gradient, applied to v: a
    gather of v at the maxima (``max_pool2d_gather``), reached through a second create_graph grad."""
    def jitgrad_fn(v):
        x = jg.tensor(POOLED, requires_grad=True)
        g = jg.zeros(1, 2, 2, 2, dtype=jg.float64, requires_grad=True)
        dx = jg.autograd.grad(F.max_pool2d(x, 2), x, g, create_graph=True)[0]
        return jg.autograd.grad((dx * v).sum(), g, create_graph=True)[0]

    def torch_fn(v):
        x = torch.tensor(POOLED, requires_grad=True)
        g = torch.zeros(1, 2, 2, 2, dtype=torch.float64, requires_grad=True)
        dx = torch.autograd.grad(torch.nn.functional.max_pool2d(x, 2), x, g, create_graph=True)[0]
        return torch.autograd.grad((dx * v).sum(), g, create_graph=True)[0]
    return jitgrad_fn, torch_fn


def _pool_indices(x):
    """max_pool2d's indices for a (2, 3) kernel at stride 1, by plain loops: position h * W + w."""
    n, c, h, w = x.shape
    out = np.empty((n, c, h - 1, w - 2), np.int64)
    for i in np.ndindex(out.shape):
        window = x[i[0], i[1], i[2]:i[2] + 2, i[3]:i[3] + 3]
        r, q = np.unravel_index(np.argmax(window), window.shape)
        out[i] = (i[2] + r) * w + i[3] + q
    return out


BCAST = ((3, 1), (4,))

SAMPLES: list[Sample] = [
    # ---- arithmetic ---------------------------------------------------------------------------------
    Sample("add", "bcast", lambda x, y: x + y, SAME, BCAST),
    Sample("add", "0d+2d", lambda x, y: jg.add(x, y), lambda x, y: torch.add(x, y), ((), (2, 3))),
    Sample("add", "scalar-right", lambda x: x + 2.5, SAME, ((3,),)),
    Sample("add", "scalar-left", lambda x: 2.5 + x, SAME, ((2, 3),)),
    Sample("sub", "bcast", lambda x, y: x - y, SAME, BCAST),
    Sample("sub", "2d-0d", lambda x, y: jg.sub(x, y), lambda x, y: torch.sub(x, y), ((2, 3), ())),
    Sample("sub", "scalar-right", lambda x: x - 1.5, SAME, ((3,),)),
    Sample("sub", "scalar-left", lambda x: 1.5 - x, SAME, ((2, 3),)),
    Sample("mul", "bcast", lambda x, y: x * y, SAME, BCAST),
    Sample("mul", "0d*2d", lambda x, y: jg.mul(x, y), lambda x, y: torch.mul(x, y), ((), (2, 3))),
    Sample("mul", "scalar-left", lambda x: 3.0 * x, SAME, ((4,),)),
    Sample("mul", "same-input", lambda x: x * x, SAME, ((2, 3),)),
    Sample("div", "bcast", lambda x, y: x / y, SAME, ((3, 1), (4,)), (REAL, POSITIVE)),
    Sample("div", "2d/0d", lambda x, y: jg.div(x, y), lambda x, y: torch.div(x, y), ((2, 3), ()),
           (REAL, POSITIVE)),
    Sample("div", "scalar-right", lambda x: x / 4.0, SAME, ((3,),)),
    Sample("div", "scalar-left", lambda x: 2.0 / x, SAME, ((2, 3),), POSITIVE),
    Sample("neg", "operator", lambda x: -x, SAME, ((2, 3),)),
    Sample("neg", "function", lambda x: jg.neg(x), lambda x: torch.neg(x), ((),)),
    Sample("pow", "tensor**tensor-bcast", lambda x, y: x ** y, SAME, BCAST, (POSITIVE, REAL)),
    Sample("pow", "function-0d-exponent", lambda x, y: jg.pow(x, y), lambda x, y: torch.pow(x, y),
           ((2, 3), ()), (POSITIVE, REAL)),
    Sample("pow", "int-exponent", lambda x: x ** 3, SAME, ((2, 3),)),
    Sample("pow", "float-exponent", lambda x: x.pow(2.5), SAME, ((4,),), POSITIVE),
    Sample("pow", "zero-exponent", lambda x: x ** 0.0, SAME, ((3,),)),
    Sample("pow", "scalar-base", lambda x: 2.0 ** x, SAME, ((2, 3),)),
    Sample("maximum", "bcast", lambda x, y: jg.maximum(x, y), lambda x, y: torch.maximum(x, y), BCAST,
           (grid(0.0), grid(0.25))),
    Sample("maximum", "method-0d", lambda x, y: x.maximum(y), SAME, ((2, 3), ()), (grid(0.25), grid(0.0))),
    Sample("minimum", "bcast", lambda x, y: jg.minimum(x, y), lambda x, y: torch.minimum(x, y), BCAST,
           (grid(0.0), grid(0.25))),
    Sample("minimum", "method-0d", lambda x, y: x.minimum(y), SAME, ((), (2, 3)), (grid(0.25), grid(0.0))),
    Sample("where", "bcast", lambda x, y: jg.where(jg.tensor(COND), x, y),
           lambda x, y: torch.where(_t(COND), x, y), BCAST),
    Sample("where", "scalar-other", lambda x: jg.where(jg.tensor(COND), x, 0.5),
           lambda x: torch.where(_t(COND), x, 0.5), ((3, 4),)),
    Sample("where", "scalar-self", lambda y: jg.where(jg.tensor(COND), -1.0, y),
           lambda y: torch.where(_t(COND), -1.0, y), ((4,),)),
    Sample("clamp", "both", lambda x: jg.clamp(x, -0.5, 0.5), lambda x: torch.clamp(x, -0.5, 0.5),
           ((3, 4),), real(avoid=(-0.5, 0.5))),
    Sample("clamp", "min", lambda x: x.clamp(min=0.0), SAME, ((2, 3),), NONZERO),
    Sample("clamp", "max", lambda x: x.clip(max=0.3), SAME, ((5,),), real(avoid=(0.3,))),
    Sample("abs", "builtin", lambda x: abs(x), SAME, ((2, 3),), NONZERO),
    Sample("abs", "function", lambda x: jg.abs(x), lambda x: torch.abs(x), ((),), NONZERO),
    Sample("sign", "method", lambda x: x.sign(), SAME, ((2, 3),), NONZERO),
    Sample("to_dtype", "float32", lambda x: x.to(jg.float32), lambda x: x.to(torch.float32), ((2, 3),),
           eps=1e-2, atol=1e-4),
    Sample("to_dtype", "float-then-double", lambda x: x.float().double(), SAME, ((4,),), eps=1e-2, atol=1e-4),
    Sample("to_device", "copy", lambda x: x.to("cpu", copy=True), SAME, ((2, 3),)),
    Sample("clone", "method", lambda x: x.clone(), SAME, ((2, 3),)),
    Sample("clone", "function", lambda x: jg.ops.clone(x), lambda x: torch.clone(x), ((),)),
    Sample("fill", "inplace", lambda x: (x * 1).fill_(0.5), SAME, ((2, 3),)),
    Sample("fill", "zero", lambda x: (x * 1).zero_(), SAME, ((3,),)),
    Sample("copy", "inplace-broadcast", lambda x, y: (x * 1).copy_(y), SAME, ((2, 3), (3,))),
    Sample("index_put", "setitem-slice", lambda x, v: _set_rows(x * 1, v), SAME, ((3, 4), (4,))),
    Sample("copy_slices", "setitem-int-then-list", lambda x, v: _set_at((1, Ellipsis, [0, 2]))(x * 1, v), SAME,
           ((2, 3, 4), (3, 2))),
    Sample("copy_slices", "inplace-through-view", lambda x, w: _scale_first_row(x * 1, w), SAME, ((3, 4), (4,))),
    # comparisons and logical ops: values only
    Sample("eq", "bcast", lambda x, y: x == y, SAME, BCAST, integers(), numpy_fn=np.equal),
    Sample("eq", "scalar", lambda x: jg.eq(x, 1.0), lambda x: torch.eq(x, 1.0), ((2, 3),), integers(),
           numpy_fn=lambda x: np.equal(x, 1.0)),
    Sample("ne", "bcast", lambda x, y: x != y, SAME, BCAST, integers(), numpy_fn=np.not_equal),
    Sample("lt", "bcast", lambda x, y: x < y, SAME, BCAST, integers(), numpy_fn=np.less),
    Sample("le", "bcast", lambda x, y: x <= y, SAME, BCAST, integers(), numpy_fn=np.less_equal),
    Sample("gt", "0d", lambda x, y: jg.gt(x, y), lambda x, y: torch.gt(x, y), ((), (2, 3)), integers(),
           numpy_fn=np.greater),
    Sample("ge", "scalar", lambda x: x >= 0.0, SAME, ((2, 3),), integers(),
           numpy_fn=lambda x: np.greater_equal(x, 0.0)),
    Sample("floor_divide", "bcast", lambda x, y: x // y, SAME, BCAST, (REAL, POSITIVE), numpy_fn=np.floor_divide),
    Sample("floor_divide", "function-scalar", lambda x: jg.floor_divide(x, 0.75),
           lambda x: torch.floor_divide(x, 0.75), ((2, 3),), numpy_fn=lambda x: np.floor_divide(x, 0.75)),
    # remainder jumps where self / other is a whole number: keep x / y within (-1, 0) or (0, 1).
    Sample("remainder", "bcast", lambda x, y: x % y, SAME, BCAST, (real(-1.4, 1.4, avoid=(0.0,)), real(1.5, 2.0))),
    Sample("remainder", "scalar", lambda x: jg.remainder(x, 2.0), lambda x: torch.remainder(x, 2.0), ((2, 3),),
           real(-3.0, 3.0, avoid=(-2.0, 0.0, 2.0))),
    Sample("logical_and", "operator", lambda x, y: x & y, SAME, BCAST, booleans(), numpy_fn=np.logical_and),
    Sample("logical_or", "function", lambda x, y: jg.logical_or(x, y), lambda x, y: torch.logical_or(x, y),
           BCAST, booleans(), numpy_fn=np.logical_or),
    Sample("logical_not", "operator", lambda x: ~x, SAME, ((2, 3),), booleans(), numpy_fn=np.logical_not),
    Sample("logical_not", "method", lambda x: x.logical_not(), SAME, ((2, 3),), integers(),
           numpy_fn=np.logical_not),
    # ---- math functions -----------------------------------------------------------------------------
    Sample("exp", "method", lambda x: x.exp(), SAME, ((2, 3),)),
    Sample("exp", "function-0d", lambda x: jg.exp(x), lambda x: torch.exp(x), ((),)),
    Sample("log", "method", lambda x: x.log(), SAME, ((2, 3),), POSITIVE),
    Sample("log", "function-0d", lambda x: jg.log(x), lambda x: torch.log(x), ((),), POSITIVE),
    Sample("log1p", "method", lambda x: x.log1p(), SAME, ((2, 3),), real(-0.5, 2.0)),
    Sample("expm1", "method", lambda x: x.expm1(), SAME, ((2, 3),)),
    Sample("sqrt", "method", lambda x: x.sqrt(), SAME, ((2, 3),), POSITIVE),
    Sample("sqrt", "function-0d", lambda x: jg.sqrt(x), lambda x: torch.sqrt(x), ((),), POSITIVE),
    Sample("rsqrt", "method", lambda x: x.rsqrt(), SAME, ((2, 3),), POSITIVE),
    Sample("sin", "method", lambda x: x.sin(), SAME, ((2, 3),)),
    Sample("cos", "function", lambda x: jg.cos(x), lambda x: torch.cos(x), ((2, 3),)),
    Sample("tan", "method", lambda x: x.tan(), SAME, ((2, 3),), real(-1.0, 1.0)),
    Sample("tanh", "method", lambda x: x.tanh(), SAME, ((2, 3),)),
    Sample("sigmoid", "method", lambda x: x.sigmoid(), SAME, ((2, 3),), real(-6.0, 6.0)),
    Sample("sigmoid", "function-0d", lambda x: jg.sigmoid(x), lambda x: torch.sigmoid(x), ((),)),
    Sample("erf", "method", lambda x: x.erf(), SAME, ((2, 3),)),
    Sample("sinh", "method", lambda x: x.sinh(), SAME, ((2, 3),)),
    Sample("cosh", "function", lambda x: jg.cosh(x), lambda x: torch.cosh(x), ((2, 3),)),
    Sample("asinh", "method", lambda x: x.asinh(), SAME, ((2, 3),)),
    Sample("acosh", "method", lambda x: x.acosh(), SAME, ((2, 3),), real(1.2, 3.0)),
    Sample("atanh", "method", lambda x: x.atanh(), SAME, ((2, 3),), real(-0.8, 0.8)),
    Sample("asin", "method", lambda x: x.asin(), SAME, ((2, 3),), real(-0.8, 0.8)),
    Sample("acos", "function", lambda x: jg.acos(x), lambda x: torch.acos(x), ((2, 3),), real(-0.8, 0.8)),
    Sample("atan", "method", lambda x: x.atan(), SAME, ((2, 3),)),
    # atan2 jumps by 2 pi across the negative x axis: y kept away from 0
    Sample("atan2", "bcast", lambda y, x: jg.atan2(y, x), lambda y, x: torch.atan2(y, x), BCAST,
           (real(avoid=(0.0,)), REAL)),
    # two elements broadcast against one: each elementwise kernel costs the CUDA simulator per element
    Sample("hypot", "bcast", lambda x, y: jg.hypot(x, y), lambda x, y: torch.hypot(x, y), ((2, 1), (1,))),
    Sample("copysign", "bcast", lambda x, y: x.copysign(y), SAME, ((1, 2), (2, 1)), (NONZERO, NONZERO)),
    Sample("copysign", "number", lambda x: jg.copysign(x, -0.0), lambda x: torch.copysign(x, -0.0), ((2, 3),),
           NONZERO),
    Sample("log2", "method", lambda x: x.log2(), SAME, ((2, 3),), POSITIVE),
    Sample("log10", "function", lambda x: jg.log10(x), lambda x: torch.log10(x), ((2, 3),), POSITIVE),
    Sample("exp2", "method", lambda x: x.exp2(), SAME, ((2, 3),)),
    # rounding: zero gradients, checked by finite differences away from the jumps
    Sample("floor", "method", lambda x: x.floor(), SAME, ((2, 3),), real(-2.0, 2.0, avoid=(-1.0, 0.0, 1.0))),
    Sample("ceil", "function", lambda x: jg.ceil(x), lambda x: torch.ceil(x), ((2, 3),),
           real(-2.0, 2.0, avoid=(-1.0, 0.0, 1.0))),
    Sample("round", "method", lambda x: x.round(), SAME, ((2, 3),), real(-2.0, 2.0, avoid=(-1.5, -0.5, 0.5, 1.5))),
    Sample("trunc", "method", lambda x: x.trunc(), SAME, ((2, 3),), real(-2.0, 2.0, avoid=(-1.0, 0.0, 1.0))),
    # fmod is x itself while |x| < |y|: no jumps inside these domains
    Sample("fmod", "bcast", lambda x, y: jg.fmod(x, y), lambda x, y: torch.fmod(x, y), BCAST,
           (real(-1.4, 1.4, avoid=(0.0,)), real(1.5, 2.0))),
    # ---- activations --------------------------------------------------------------------------------
    Sample("relu", "method", lambda x: x.relu(), SAME, ((2, 3),), NONZERO),
    Sample("relu", "functional", lambda x: F.relu(x), lambda x: torch.nn.functional.relu(x), ((4,),), NONZERO),
    Sample("gelu", "functional", lambda x: F.gelu(x), lambda x: torch.nn.functional.gelu(x), ((2, 3),)),
    Sample("gelu", "tanh", lambda x: jg.gelu(x, approximate="tanh"),
           lambda x: torch.nn.functional.gelu(x, approximate="tanh"), ((2, 3),)),
    Sample("softplus", "default", lambda x: jg.softplus(x), lambda x: torch.nn.functional.softplus(x), ((2, 3),)),
    Sample("softplus", "beta-threshold", lambda x: jg.softplus(x, beta=2.0, threshold=1.0),
           lambda x: torch.nn.functional.softplus(x, beta=2.0, threshold=1.0), ((3, 4),),
           real(avoid=(0.5,))),
    Sample("softmax", "dim1", lambda x: F.softmax(x, dim=1), lambda x: torch.softmax(x, dim=1), ((3, 4),)),
    Sample("softmax", "method-dim0", lambda x: x.softmax(0), SAME, ((3, 4),)),
    Sample("log_softmax", "dim-1", lambda x: F.log_softmax(x, dim=-1),
           lambda x: torch.log_softmax(x, dim=-1), ((3, 4),)),
    Sample("log_softmax", "method-dim0", lambda x: x.log_softmax(0), SAME, ((2, 3, 2),)),
    Sample("softmax_backward", "dim1", *_grad_of("softmax", 1), ((3, 4), (3, 4))),
    Sample("log_softmax_backward", "dim0", *_grad_of("log_softmax", 0), ((2, 3, 2), (2, 3, 2))),
    # a 0-d tensor takes dim 0 or -1, as in PyTorch: softmax over its one element
    Sample("softmax", "0d-dim0", lambda x: x.softmax(0), SAME, ((),)),
    Sample("log_softmax", "0d-dim-1", lambda x: F.log_softmax(x, -1), lambda x: torch.log_softmax(x, -1),
           ((),)),
    # ---- reductions ---------------------------------------------------------------------------------
    Sample("sum", "all", lambda x: x.sum(), SAME, ((2, 3),)),
    Sample("sum", "dim", lambda x: jg.sum(x, 1), lambda x: torch.sum(x, 1), ((2, 3, 2),)),
    Sample("sum", "dims-keepdim", lambda x: x.sum((0, 2), keepdim=True), SAME, ((2, 3, 2),)),
    Sample("mean", "all", lambda x: x.mean(), SAME, ((2, 3),)),
    Sample("mean", "dim-keepdim", lambda x: jg.mean(x, -1, keepdim=True),
           lambda x: torch.mean(x, -1, keepdim=True), ((3, 4),)),
    Sample("var", "all", lambda x: x.var(), SAME, ((2, 3),)),
    Sample("var", "dim-biased", lambda x: jg.var(x, 1, unbiased=False),
           lambda x: torch.var(x, 1, unbiased=False), ((3, 4),)),
    Sample("var", "correction-keepdim", lambda x: x.var(0, keepdim=True, correction=2), SAME, ((4, 3),)),
    Sample("std", "all", lambda x: x.std(), SAME, ((2, 3),)),
    Sample("std", "dim-keepdim", lambda x: jg.std(x, 1, keepdim=True), lambda x: torch.std(x, 1, keepdim=True),
           ((3, 4),)),
    Sample("prod", "all", lambda x: x.prod(), SAME, ((2, 3),), real(0.5, 1.5)),
    Sample("prod", "dim", lambda x: jg.prod(x, 1), lambda x: torch.prod(x, 1), ((3, 4),)),
    Sample("prod", "one-zero", lambda x: x.prod(), SAME, ((2, 3),), with_zeros(1)),
    Sample("prod", "two-zeros", lambda x: x.prod(), SAME, ((2, 3),), with_zeros(2)),
    Sample("prod", "dim-zero", lambda x: x.prod(0, keepdim=True), SAME, ((3, 2),), with_zeros(1)),
    # norm(p=0), a count of nonzeros: no gradient (None), as PyTorch's; finite differences around a zero agree
    Sample("nonzero_count", "norm-0-dim", lambda x: x.norm(p=0, dim=1), SAME, ((3, 4),), with_zeros(3)),
    Sample("amax", "dim", lambda x: x.amax(1), SAME, ((3, 4),), distinct()),
    Sample("amax", "dims-keepdim", lambda x: jg.amax(x, (0, 2), keepdim=True),
           lambda x: torch.amax(x, (0, 2), keepdim=True), ((2, 3, 2),), distinct()),
    Sample("amin", "dim", lambda x: x.amin(0), SAME, ((3, 4),), distinct()),
    Sample("max", "all", lambda x: x.max(), SAME, ((3, 4),), distinct()),
    Sample("min", "function", lambda x: jg.min(x), lambda x: torch.min(x), ((2, 3),), distinct()),
    Sample("max_dim", "values", lambda x: x.max(1).values, SAME, ((3, 4),), distinct()),
    Sample("max_dim", "indices", lambda x: x.max(1).indices, SAME, ((3, 4),), distinct(), grad=False,
           numpy_fn=lambda x: np.argmax(x, 1)),
    Sample("min_dim", "values-keepdim", lambda x: jg.min(x, 0, keepdim=True)[0],
           lambda x: torch.min(x, 0, keepdim=True)[0], ((3, 4),), distinct()),
    Sample("min_dim", "indices", lambda x: jg.min(x, -1)[1], lambda x: torch.min(x, -1)[1], ((3, 4),),
           distinct(), grad=False, numpy_fn=lambda x: np.argmin(x, -1)),
    Sample("argmax", "all", lambda x: x.argmax(), SAME, ((3, 4),), distinct(),
           numpy_fn=lambda x: np.argmax(x)),
    Sample("argmax", "dim", lambda x: jg.argmax(x, 1), lambda x: torch.argmax(x, 1), ((3, 4),), distinct(),
           numpy_fn=lambda x: np.argmax(x, 1)),
    Sample("argmin", "dim-keepdim", lambda x: x.argmin(0, keepdim=True), SAME, ((3, 4),), distinct(),
           numpy_fn=lambda x: np.argmin(x, 0, keepdims=True)),
    Sample("all", "all", lambda x: x.all(), SAME, ((2, 3),), booleans(), numpy_fn=np.all),
    Sample("all", "dim-float", lambda x: jg.all(x, 1), lambda x: torch.all(x, 1), ((3, 4),), integers(0, 3),
           numpy_fn=lambda x: np.all(x, 1)),
    Sample("any", "dim-keepdim", lambda x: x.any(0, keepdim=True), SAME, ((3, 4),), booleans(),
           numpy_fn=lambda x: np.any(x, 0, keepdims=True)),
    Sample("any", "function", lambda x: jg.any(x), lambda x: torch.any(x), ((2, 3),), integers(-1, 0),
           numpy_fn=np.any),
    Sample("logsumexp", "dim", lambda x: x.logsumexp(1), SAME, ((3, 4),)),
    Sample("logsumexp", "dims-keepdim", lambda x: jg.logsumexp(x, (0, 1), keepdim=True),
           lambda x: torch.logsumexp(x, (0, 1), keepdim=True), ((3, 4),)),
    # reductions along a 0-d tensor's dim (0 or -1): nothing to fold, a 0-d result with or without keepdim
    Sample("sum", "0d-dim0", lambda x: x.sum(0), SAME, ((),)),
    Sample("sum", "0d-dim-1-keepdim", lambda x: jg.sum(x, -1, keepdim=True),
           lambda x: torch.sum(x, -1, keepdim=True), ((),)),
    Sample("mean", "0d-dim-1", lambda x: x.mean(-1), SAME, ((),)),
    Sample("var", "0d-dim0-biased", lambda x: x.var(0, correction=0), SAME, ((),)),
    Sample("std", "0d-dim-1-biased-keepdim", lambda x: x.std(-1, keepdim=True, correction=0), SAME, ((),)),
    Sample("prod", "0d-dim0", lambda x: jg.prod(x, 0), lambda x: torch.prod(x, 0), ((),)),
    Sample("amax", "0d-dim-1", lambda x: x.amax(-1), SAME, ((),)),
    Sample("amin", "0d-dim0-keepdim", lambda x: jg.amin(x, 0, keepdim=True),
           lambda x: torch.amin(x, 0, keepdim=True), ((),)),
    Sample("max_dim", "0d-values", lambda x: x.max(0).values, SAME, ((),)),
    Sample("max_dim", "0d-indices-keepdim", lambda x: x.max(-1, keepdim=True).indices, SAME, ((),),
           grad=False, numpy_fn=lambda x: np.argmax(x)),
    Sample("min_dim", "0d-values-keepdim", lambda x: jg.min(x, -1, keepdim=True)[0],
           lambda x: torch.min(x, -1, keepdim=True)[0], ((),)),
    Sample("argmax", "0d-dim0", lambda x: x.argmax(0), SAME, ((),), numpy_fn=lambda x: np.argmax(x)),
    Sample("argmin", "0d-dim-1-keepdim", lambda x: jg.argmin(x, -1, keepdim=True),
           lambda x: torch.argmin(x, -1, keepdim=True), ((),), numpy_fn=lambda x: np.argmin(x)),
    Sample("argmax", "all-keepdim", lambda x: x.argmax(keepdim=True), SAME, ((3, 4),), distinct(),
           numpy_fn=lambda x: np.argmax(x, keepdims=True)),
    Sample("all", "0d-dim0", lambda x: jg.all(x, 0), lambda x: torch.all(x, 0), ((),), booleans(),
           numpy_fn=np.all),
    Sample("any", "0d-dim-1-keepdim", lambda x: x.any(-1, keepdim=True), SAME, ((),), integers(0, 1),
           numpy_fn=np.any),
    Sample("logsumexp", "0d-dim0", lambda x: x.logsumexp(0), SAME, ((),)),
    # ---- shape --------------------------------------------------------------------------------------
    Sample("reshape", "method", lambda x: x.reshape(4, 3), SAME, ((3, 4),)),
    Sample("reshape", "view", lambda x: x.view(-1), SAME, ((3, 4),)),
    Sample("reshape", "flatten", lambda x: jg.flatten(x, 1), lambda x: torch.flatten(x, 1), ((2, 3, 2),)),
    Sample("transpose", "method", lambda x: x.transpose(0, 2), SAME, ((2, 3, 2),)),
    Sample("transpose", "mT", lambda x: x.mT, SAME, ((2, 3, 4),)),
    Sample("transpose", "0d", lambda x: x.transpose(0, -1), SAME, ((),)),
    Sample("permute", "method", lambda x: x.permute(2, 0, 1), SAME, ((2, 3, 2),)),
    Sample("permute", "T", lambda x: x.T, SAME, ((3, 4),)),
    Sample("squeeze", "all", lambda x: x.squeeze(), SAME, ((3, 1, 4),)),
    Sample("squeeze", "dim", lambda x: jg.squeeze(x, 1), lambda x: torch.squeeze(x, 1), ((3, 1, 4),)),
    Sample("squeeze", "dims", lambda x: x.squeeze((0, 2)), SAME, ((1, 3, 1),)),
    Sample("squeeze", "0d-dim-1", lambda x: jg.squeeze(x, -1), lambda x: torch.squeeze(x, -1), ((),)),
    Sample("unsqueeze", "method", lambda x: x.unsqueeze(1), SAME, ((3, 4),)),
    Sample("unsqueeze", "function-last", lambda x: jg.unsqueeze(x, -1), lambda x: torch.unsqueeze(x, -1), ((3,),)),
    Sample("unsqueeze", "0d-dim-1", lambda x: x.unsqueeze(-1), SAME, ((),)),
    Sample("reshape", "flatten-0d", lambda x: jg.flatten(x, -1), lambda x: torch.flatten(x, -1), ((),)),
    Sample("expand", "method", lambda x: x.expand(2, 3, 4), SAME, ((3, 1),)),
    Sample("expand", "broadcast_to", lambda x: jg.broadcast_to(x, (3, 4)), lambda x: torch.broadcast_to(x, (3, 4)),
           ((4,),)),
    Sample("expand", "expand_as", lambda x, y: x.expand_as(y), SAME, ((1, 4), (3, 4))),
    Sample("cat", "dim1", lambda x, y: jg.cat([x, y], 1), lambda x, y: torch.cat([x, y], 1), ((3, 2), (3, 4))),
    Sample("cat", "dim0-three", lambda x, y: jg.cat([x, y, x], 0), lambda x, y: torch.cat([x, y, x], 0),
           ((1, 3), (2, 3))),
    Sample("stack", "dim1", lambda x, y: jg.stack([x, y], 1), lambda x, y: torch.stack([x, y], 1), ((3, 4), (3, 4))),
    Sample("stack", "dim-1", lambda x: jg.stack([x, x * 2.0], -1), lambda x: torch.stack([x, x * 2.0], -1),
           ((4,),)),
    Sample("stack", "0d-dim-1", lambda x, y: jg.stack([x, y], -1), lambda x, y: torch.stack([x, y], -1),
           ((), ())),
    Sample("split", "size", lambda x: x.split(2, 1)[1], SAME, ((3, 5),)),
    Sample("split", "sizes", lambda x: jg.split(x, [1, 3], 0)[1], lambda x: torch.split(x, [1, 3], 0)[1],
           ((4, 2),)),
    Sample("split", "chunk", lambda x: x.chunk(2, 1)[0], SAME, ((3, 4),)),
    Sample("unbind", "dim1", lambda x: x.unbind(1)[2], SAME, ((3, 4),)),
    Sample("unbind", "1d", lambda x: x.unbind(0)[1], SAME, ((3,),)),
    # ---- indexing -----------------------------------------------------------------------------------
    Sample("getitem", "int", lambda x: x[1], SAME, ((3, 4),)),
    Sample("getitem", "int-dim1", lambda x: x[:, 0], SAME, ((3, 4),)),
    Sample("getitem", "slice", lambda x: x[1:3], SAME, ((3, 4),)),
    Sample("getitem", "int-slice", lambda x: x[0, 1:3], SAME, ((3, 4),)),
    Sample("getitem", "ellipsis", lambda x: x[..., 1], SAME, ((2, 3, 4),)),
    Sample("getitem", "repeated-rows", lambda x: x[jg.tensor(REPEATED_ROWS)], lambda x: x[_t(REPEATED_ROWS)],
           ((3, 4),)),
    Sample("getitem", "mask", lambda x: x[jg.tensor(MASK)], lambda x: x[_t(MASK)], ((3, 4),)),
    # PyTorch applies integers, None and ... first, then the lists: numpy would order these otherwise
    Sample("getitem", "int-then-list", lambda x: x[1, ..., [0, 2, 0]], SAME, ((2, 3, 4),)),
    Sample("getitem", "list-none-int", lambda x: x[:, [2, 0], None, 0], SAME, ((2, 3, 4),)),
    Sample("getitem", "lists-around-empty-ellipsis", lambda x: x[:, [1, 0], ..., [0, 2]], SAME, ((3, 2, 4),)),
    Sample("getitem", "select", lambda x: jg.select(x, 1, 2), lambda x: torch.select(x, 1, 2), ((3, 4),)),
    Sample("getitem", "narrow", lambda x: x.narrow(1, 1, 2), SAME, ((3, 4),)),
    Sample("getitem", "select-dim-1", lambda x: x.select(-1, 2), SAME, ((3, 4),)),
    Sample("getitem", "narrow-dim-1", lambda x: jg.narrow(x, -1, 1, 2), lambda x: torch.narrow(x, -1, 1, 2),
           ((3, 4),)),
    Sample("index_scatter", "repeated-rows", *_grad_of_getitem(REPEATED_ROWS), ((3, 4),)),
    Sample("index_scatter", "int", *_grad_of_getitem(1), ((4,),)),
    Sample("index_scatter", "slice", *_grad_of_getitem(slice(1, 3)), ((2, 4),)),
    # ---- linear algebra -----------------------------------------------------------------------------
    Sample("dot", "operator", lambda x, y: x @ y, SAME, ((4,), (4,))),
    Sample("mv", "function", lambda x, y: jg.matmul(x, y), lambda x, y: torch.matmul(x, y), ((3, 4), (4,))),
    Sample("mm", "operator", lambda x, y: x @ y, SAME, ((3, 4), (4, 2))),
    Sample("mm", "function", lambda x, y: jg.mm(x, y), lambda x, y: torch.mm(x, y), ((2, 3), (3, 4))),
    Sample("matmul", "3d@2d", lambda x, y: x @ y, SAME, ((2, 3, 4), (4, 2))),
    Sample("matmul", "1d@3d", lambda x, y: x @ y, SAME, ((4,), (2, 4, 3))),
    Sample("matmul", "3d@1d", lambda x, y: jg.matmul(x, y), lambda x, y: torch.matmul(x, y), ((2, 3, 4), (4,))),
    Sample("matmul", "bcast-batch", lambda x, y: x @ y, SAME, ((2, 1, 3, 2), (3, 2, 2))),
    # ---- nn.functional composites (named after the op of their last node) ---------------------------
    Sample("add", "linear", lambda x, w, b: F.linear(x, w, b), lambda x, w, b: torch.nn.functional.linear(x, w, b),
           ((3, 4), (2, 4), (2,))),
    Sample("mm", "linear-no-bias", lambda x, w: F.linear(x, w), lambda x, w: torch.nn.functional.linear(x, w),
           ((3, 4), (2, 4))),
    Sample("mean", "mse_loss", lambda x, y: F.mse_loss(x, y), lambda x, y: torch.nn.functional.mse_loss(x, y),
           ((3, 4), (3, 4))),
    Sample("nll_loss", "cross_entropy", lambda x: F.cross_entropy(x, jg.tensor(CLASSES)),
           lambda x: torch.nn.functional.cross_entropy(x, _t(CLASSES)), ((3, 4),)),
    Sample("nll_loss", "sum", lambda x: F.nll_loss(x, jg.tensor(CLASSES), reduction="sum"),
           lambda x: torch.nn.functional.nll_loss(x, _t(CLASSES), reduction="sum"), ((3, 4),)),
    Sample("nll_loss", "none", lambda x: F.nll_loss(x, jg.tensor(CLASSES), reduction="none"),
           lambda x: torch.nn.functional.nll_loss(x, _t(CLASSES), reduction="none"), ((3, 4),)),
    Sample("nll_loss", "unbatched", lambda x: F.nll_loss(x, jg.tensor(1)),
           lambda x: torch.nn.functional.nll_loss(x, torch.tensor(1)), ((4,),)),
    Sample("nll_loss_backward", "mean", *_grad_of_nll_loss("mean"), ((),)),
    Sample("nll_loss_backward", "none", *_grad_of_nll_loss("none"), ((3,),)),
    Sample("cross_entropy_backward", "mean", _cross_entropy_backward("mean")[0], None, ((), (3, 4)),
           numpy_fn=_cross_entropy_backward("mean")[1]),
    # ---- random ops: no PyTorch equivalent (their bits are jitgrad's own) --------------------------
    Sample("uniform", "float64", _sampled("uniform", (3, 4), np.float64)[0], None, ((2,),), generator_states(),
           numpy_fn=_sampled("uniform", (3, 4), np.float64)[1]),
    Sample("uniform", "float32-0d", _sampled("uniform", (), np.float32)[0], None, ((2,),), generator_states(),
           numpy_fn=_sampled("uniform", (), np.float32)[1]),
    Sample("normal", "float64", _sampled("normal", (2, 5), np.float64)[0], None, ((2,),), generator_states(),
           numpy_fn=_sampled("normal", (2, 5), np.float64)[1]),
    Sample("normal", "float32", _sampled("normal", (7,), np.float32)[0], None, ((2,),), generator_states(),
           numpy_fn=_sampled("normal", (7,), np.float32)[1]),
    Sample("neg", "cross_entropy-probs", lambda x, p: F.cross_entropy(x, p.softmax(-1), reduction="sum"),
           lambda x, p: torch.nn.functional.cross_entropy(x, p.softmax(-1), reduction="sum"), ((3, 4), (3, 4))),
    # ---- integer indexing, sorting, cumsum, masked_fill, isnan/isinf (group: opsindex) -------------
    Sample("gather", "dim1", lambda x: jg.gather(x, 1, jg.tensor(GATHER_INDEX)),
           lambda x: torch.gather(x, 1, _t(GATHER_INDEX)), ((3, 4),)),
    Sample("gather", "dim0-method", lambda x: x.gather(0, jg.tensor(GATHER_ROWS)),
           lambda x: x.gather(0, _t(GATHER_ROWS)), ((3, 4),)),
    Sample("gather", "index-narrower-than-input", lambda x: x.gather(1, jg.tensor(GATHER_INDEX[:2])),
           lambda x: x.gather(1, _t(GATHER_INDEX[:2])), ((3, 4),)),
    Sample("scatter_add", "gather-backward", *_grad_of_gather(1, GATHER_INDEX), ((3, 2),)),
    Sample("embedding", "functional", lambda w: F.embedding(jg.tensor(TOKENS), w),
           lambda w: torch.nn.functional.embedding(_t(TOKENS), w), ((4, 3),)),
    Sample("embedding", "padding", lambda w: F.embedding(jg.tensor(TOKENS), w, padding_idx=-1),
           lambda w: torch.nn.functional.embedding(_t(TOKENS), w, padding_idx=-1), ((4, 2),), grad=False,
           numpy_fn=lambda w: w[TOKENS]),  # the padding row's gradient is zero on purpose: no finite differences
    Sample("embedding_dense_backward", "padding", *_grad_of_embedding(1), ((2, 3, 3),)),
    Sample("cumsum", "dim1", lambda x: x.cumsum(1), SAME, ((3, 4),)),
    Sample("cumsum", "function-dim0", lambda x: jg.cumsum(x, 0), lambda x: torch.cumsum(x, 0), ((3, 2, 2),)),
    Sample("cumsum", "0d", lambda x: x.cumsum(-1), SAME, ((),)),
    Sample("masked_fill", "number", lambda x: x.masked_fill(jg.tensor(FILL_MASK), 1.5),
           lambda x: x.masked_fill(_t(FILL_MASK), 1.5), ((3, 4),)),
    Sample("masked_fill", "tensor-value", lambda x, v: jg.masked_fill(x, jg.tensor(FILL_MASK[0]), v),
           lambda x, v: torch.masked_fill(x, _t(FILL_MASK[0]), v), ((3, 4), ())),
    Sample("topk", "values", lambda x: x.topk(2).values, SAME, ((3, 4),), distinct()),
    Sample("topk", "indices-smallest-dim0", lambda x: jg.topk(x, 2, 0, largest=False).indices,
           lambda x: torch.topk(x, 2, 0, largest=False).indices, ((3, 4),), distinct(), grad=False,
           numpy_fn=lambda x: np.argsort(x, 0)[:2]),
    Sample("topk", "sort-values", lambda x: x.sort(0, descending=True).values, SAME, ((3, 2, 2),), distinct()),
    Sample("topk", "sort-indices", lambda x: jg.sort(x)[1], lambda x: torch.sort(x)[1], ((3, 4),), distinct(),
           grad=False, numpy_fn=lambda x: np.argsort(x, -1)),
    Sample("topk", "argsort-descending", lambda x: x.argsort(1, descending=True), SAME, ((3, 4),), distinct(),
           grad=False, numpy_fn=lambda x: np.argsort(-x, 1)),
    Sample("nll_loss", "cross_entropy-ignored", lambda x: F.cross_entropy(x, jg.tensor(IGNORED)),
           lambda x: torch.nn.functional.cross_entropy(x, _t(IGNORED)), ((3, 4),)),
    Sample("nll_loss", "ignore_index-class-sum", lambda x: F.nll_loss(x, jg.tensor(CLASSES), ignore_index=0,
                                                                      reduction="sum"),
           lambda x: torch.nn.functional.nll_loss(x, _t(CLASSES), ignore_index=0, reduction="sum"), ((3, 4),)),
    Sample("nll_loss_backward", "mean-ignored", *_grad_of_nll_loss("mean", IGNORED), ((),)),
    Sample("cross_entropy_backward", "none-ignored", _cross_entropy_backward("none", IGNORED)[0], None,
           ((3,), (3, 4)), numpy_fn=_cross_entropy_backward("none", IGNORED)[1]),
    Sample("isnan", "special", lambda x: x.isnan(), SAME, ((2, 4),), _special_values(), numpy_fn=np.isnan),
    Sample("isinf", "special", lambda x: jg.isinf(x), lambda x: torch.isinf(x), ((2, 4),), _special_values(),
           numpy_fn=np.isinf),
    # ---- opsfactory: randperm, the random op behind jg.randperm (its order is jitgrad's own) ----------
    Sample("randperm", "int64", _permuted(6, np.int64)[0], None, ((2,),), generator_states(),
           numpy_fn=_permuted(6, np.int64)[1]),
    Sample("randperm", "float32", _permuted(3, np.float32)[0], None, ((2,),), generator_states(),
           numpy_fn=_permuted(3, np.float32)[1]),
    # einsum is a composite, named after its last op: the generated tests cover its gradients, jvp and lowerings
    Sample("reshape", "einsum-bij,bkj->bik", lambda a, b: jg.einsum("bij,bkj->bik", a, b),
           lambda a, b: torch.einsum("bij,bkj->bik", a, b), ((2, 3, 2), (2, 2, 2))),
    Sample("mul", "einsum-outer", lambda a, b: jg.einsum("i,j->ij", a, b), lambda a, b: torch.einsum("i,j->ij", a, b),
           ((3,), (2,))),
    # ---- convolution and pooling (opsconv) -----------------------------------------------------------
    Sample("convolution", "conv2d", lambda x, w, b: F.conv2d(x, w, b),
           lambda x, w, b: torch.nn.functional.conv2d(x, w, b), ((2, 2, 5, 5), (3, 2, 3, 3), (3,))),
    Sample("convolution", "conv2d-stride-padding", lambda x, w: F.conv2d(x, w, stride=2, padding=1),
           lambda x, w: torch.nn.functional.conv2d(x, w, stride=2, padding=1), ((1, 2, 5, 5), (2, 2, 3, 3))),
    Sample("convolution", "conv2d-dilation-groups",
           lambda x, w, b: F.conv2d(x, w, b, padding=(1, 0), dilation=2, groups=2),
           lambda x, w, b: torch.nn.functional.conv2d(x, w, b, padding=(1, 0), dilation=2, groups=2),
           ((1, 4, 5, 5), (4, 2, 2, 2), (4,))),
    Sample("convolution", "conv2d-same", lambda x, w: F.conv2d(x, w, padding="same"),
           lambda x, w: torch.nn.functional.conv2d(x, w, padding="same"), ((1, 1, 4, 4), (2, 1, 3, 3))),
    Sample("convolution", "conv1d", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1),
           lambda x, w, b: torch.nn.functional.conv1d(x, w, b, stride=2, padding=1), ((2, 2, 7), (3, 2, 3), (3,))),
    Sample("im2col", "unfold", lambda x: F.unfold(x, 2, padding=1, stride=(1, 2)),
           lambda x: torch.nn.functional.unfold(x, 2, padding=1, stride=(1, 2)), ((1, 2, 4, 4),)),
    Sample("im2col", "unfold-padded-width", lambda x: F.unfold(x, (2, 3), padding=(0, 1), dilation=(2, 1), stride=(2, 1)),
           lambda x: torch.nn.functional.unfold(x, (2, 3), padding=(0, 1), dilation=(2, 1), stride=(2, 1)),
           ((1, 2, 5, 4),)),
    Sample("col2im", "fold", lambda x: F.fold(x, (4, 4), 2),
           lambda x: torch.nn.functional.fold(x, (4, 4), 2), ((1, 8, 9),)),
    Sample("max_pool2d", "kernel2", lambda x: F.max_pool2d(x, 2), lambda x: torch.nn.functional.max_pool2d(x, 2),
           ((2, 2, 5, 5),), distinct()),
    Sample("max_pool2d", "stride-padding-ceil",
           lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
           lambda x: torch.nn.functional.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True), ((1, 2, 6, 6),),
           distinct()),
    Sample("max_pool2d", "indices", lambda x: F.max_pool2d(x, (2, 3), stride=1, return_indices=True)[1],
           lambda x: torch.nn.functional.max_pool2d(x, (2, 3), stride=1, return_indices=True)[1], ((1, 2, 4, 5),),
           distinct(), numpy_fn=_pool_indices, grad=False),
    Sample("max_pool2d_backward", "overlapping", *_grad_of_max_pool(), ((1, 2, 3, 3),)),
    Sample("max_pool2d_gather", "second-order", *_gather_of_max_pool(), ((1, 2, 5, 5),)),
    Sample("tap_sum", "bicubic", lambda x: F.interpolate(x, size=(5, 3), mode="bicubic"),
           lambda x: torch.nn.functional.interpolate(x, size=(5, 3), mode="bicubic"), ((1, 2, 3, 4),)),
    Sample("tap_sum", "avg_pool2d-overlapping", lambda x: F.avg_pool2d(x, 3, stride=1, padding=1),
           lambda x: torch.nn.functional.avg_pool2d(x, 3, stride=1, padding=1), ((2, 1, 4, 3),)),
]
