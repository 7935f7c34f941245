"""The four eager workloads, each written once per library.

Every implementation is a *builder*: it takes the workload's numpy inputs, does all one-off setup
(wrapping arrays as tensors, moving them to JAX, tracing and compiling under ``jax.jit``) and returns a
``step`` callable. One call of ``step()`` is one timed training step: forward, loss, and the gradients the
workload asks for. It returns ``(loss, grads)`` in the library's own types, and has finished its work
when it returns (JAX results are blocked on), so timing ``step()`` times the work and nothing else.

The numpy builders are hand-written forward and backward passes: they are both the correctness
reference every library is checked against and the "what would it cost without autodiff" baseline.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

GELU_K = math.sqrt(2.0 / math.pi)   # tanh-approximate GELU: 0.5 x (1 + tanh(K (x + C x^3)))
GELU_C = 0.044715
STD_EPS = 1e-5

Inputs = dict[str, np.ndarray]
Step = Callable[[], tuple[Any, tuple[Any, ...]]]
Builder = Callable[[Inputs], Step]


@dataclass(frozen=True)
class Goal:
    """``library`` should take at most ``max_ratio`` times ``baseline``'s median step time."""

    library: str
    baseline: str
    max_ratio: float


@dataclass(frozen=True)
class Workload:
    key: str
    title: str
    describe: Callable[[bool], str]            # quick -> one line for the report
    make_inputs: Callable[[bool], Inputs]       # quick -> timed inputs
    builders: dict[str, Builder]
    goal: Goal | None                           # None: the issue sets no goal; ratios are still shown
    rtol: float
    atol: float                                 # relative to the largest reference value
    atol_floor: float = 0.0                     # absolute tolerance never below this (see W3)
    # Extra inputs that are only verified, never timed: see W3.
    check_inputs: Callable[[], list[Inputs]] = field(default=lambda: [])


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def to_numpy(lib: str, value: Any) -> np.ndarray:
    """A library's loss or gradient as a float64 numpy array, for comparison (copied from the GPU
    for the ``--device cuda`` columns, whose keys contain ``cuda``)."""
    if lib.startswith(("jitgrad", "torch")):   # eager or compiled
        value = value.detach()
        value = (value.cpu() if "cuda" in lib else value).numpy()
    return np.asarray(value, dtype=np.float64)


# --------------------------------------------------------------------------------------------------
# W1: a tiny chain of elementwise ops. At 16 elements the arithmetic is free, so this measures pure
# per-op overhead: graph recording, dispatch and the backward engine.
# --------------------------------------------------------------------------------------------------
W1_ITERS = 25


def w1_inputs(quick: bool) -> Inputs:
    return {"x": _rng(1).standard_normal(16)}


def w1_loss(lib):
    """The W1 loss written against any module with ``sin``, ``tanh`` and ``sum`` (jitgrad, torch,
    jax.numpy, autograd.numpy)."""
    def loss(x):
        y = x
        for _ in range(W1_ITERS):
            y = lib.sin(y) * 1.01 + 0.1
            y = lib.tanh(y) * y
        return lib.sum(y)
    return loss


def w1_jitgrad(inp: Inputs) -> Step:
    import jitgrad as jg
    x = jg.tensor(inp["x"], requires_grad=True)
    loss_of = w1_loss(jg)

    def step():
        x.grad = None
        loss = loss_of(x)
        loss.backward()
        return loss, (x.grad,)
    return step


def w1_torch(inp: Inputs) -> Step:
    import torch
    x = torch.from_numpy(inp["x"].copy()).requires_grad_()
    loss_of = w1_loss(torch)

    def step():
        x.grad = None
        loss = loss_of(x)
        loss.backward()
        return loss, (x.grad,)
    return step


def w1_jax(inp: Inputs) -> Step:
    import jax
    import jax.numpy as jnp
    f = jax.jit(jax.value_and_grad(w1_loss(jnp)))
    x = jnp.asarray(inp["x"])

    def step():
        loss, gx = jax.block_until_ready(f(x))
        return loss, (gx,)
    return step


def w1_autograd(inp: Inputs) -> Step:
    import autograd
    import autograd.numpy as anp
    f = autograd.value_and_grad(w1_loss(anp))
    x = inp["x"]

    def step():
        loss, gx = f(x)
        return loss, (gx,)
    return step


def w1_numpy(inp: Inputs) -> Step:
    x = inp["x"]

    def step():
        saved = []
        y = x
        for _ in range(W1_ITERS):
            s = np.sin(y) * 1.01 + 0.1
            t = np.tanh(s)
            saved.append((y, s, t))
            y = t * s
        loss = y.sum()
        g = np.ones_like(y)
        for y_in, s, t in reversed(saved):
            g_s = g * t + g * s * (1.0 - t * t)
            g = g_s * 1.01 * np.cos(y_in)
        return loss, (g,)
    return step


W1 = Workload(
    key="W1", title="tiny chain",
    describe=lambda quick: f"x (16,) float64; {W1_ITERS}x [y = sin(y)*1.01 + 0.1; y = tanh(y)*y]; sum; d/dx",
    make_inputs=w1_inputs,
    builders={"jitgrad": w1_jitgrad, "torch": w1_torch, "jax": w1_jax, "autograd": w1_autograd,
              "numpy": w1_numpy},
    goal=Goal("jitgrad", "torch", 1.0), rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------------------------------
# W2: one MLP training step, the typical small-model case: three matmuls dominate, plus a dozen
# small ops whose overhead still shows at batch 64.
# --------------------------------------------------------------------------------------------------
W2_SIZES = (784, 256, 256, 10)
W2_BATCH = 64
W2_PARAMS = ("w1", "b1", "w2", "b2", "w3", "b3")


def w2_inputs(quick: bool) -> Inputs:
    rng = _rng(2)
    inp = {"x": rng.standard_normal((W2_BATCH, W2_SIZES[0])).astype(np.float32)}
    for i, (fan_in, fan_out) in enumerate(zip(W2_SIZES[:-1], W2_SIZES[1:]), start=1):
        inp[f"w{i}"] = (rng.standard_normal((fan_in, fan_out)) / math.sqrt(fan_in)).astype(np.float32)
        inp[f"b{i}"] = (0.1 * rng.standard_normal(fan_out)).astype(np.float32)
    labels = rng.integers(0, W2_SIZES[-1], W2_BATCH)
    inp["onehot"] = np.eye(W2_SIZES[-1], dtype=np.float32)[labels]
    return inp


def w2_jitgrad(inp: Inputs) -> Step:
    import jitgrad as jg
    F = jg.nn.functional
    x, onehot = jg.tensor(inp["x"]), jg.tensor(inp["onehot"])
    params = [jg.tensor(inp[name], requires_grad=True) for name in W2_PARAMS]
    w1, b1, w2, b2, w3, b3 = params

    def step():
        h = jg.tanh(x @ w1 + b1)
        h = jg.tanh(h @ w2 + b2)
        loss = F.cross_entropy(h @ w3 + b3, onehot)
        return loss, jg.autograd.grad(loss, params)
    return step


def w2_torch(inp: Inputs) -> Step:
    import torch
    F = torch.nn.functional
    x, onehot = torch.from_numpy(inp["x"]), torch.from_numpy(inp["onehot"])
    params = [torch.from_numpy(inp[name].copy()).requires_grad_() for name in W2_PARAMS]
    w1, b1, w2, b2, w3, b3 = params

    def step():
        h = torch.tanh(x @ w1 + b1)
        h = torch.tanh(h @ w2 + b2)
        loss = F.cross_entropy(h @ w3 + b3, onehot)
        return loss, torch.autograd.grad(loss, params)
    return step


def _w2_loss(np_like, logsumexp):
    """The W2 loss against a numpy-compatible module; cross-entropy spelled out as log-softmax."""
    def loss(params, x, onehot):
        w1, b1, w2, b2, w3, b3 = params
        h = np_like.tanh(x @ w1 + b1)
        h = np_like.tanh(h @ w2 + b2)
        logits = h @ w3 + b3
        log_probs = logits - logsumexp(logits, axis=1, keepdims=True)
        return -np_like.mean(np_like.sum(log_probs * onehot, axis=1))
    return loss


def w2_jax(inp: Inputs) -> Step:
    import jax
    import jax.numpy as jnp
    f = jax.jit(jax.value_and_grad(_w2_loss(jnp, jax.nn.logsumexp)))
    params = tuple(jnp.asarray(inp[name]) for name in W2_PARAMS)
    x, onehot = jnp.asarray(inp["x"]), jnp.asarray(inp["onehot"])

    def step():
        return jax.block_until_ready(f(params, x, onehot))
    return step


def w2_autograd(inp: Inputs) -> Step:
    import autograd
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp
    f = autograd.value_and_grad(_w2_loss(anp, logsumexp))
    params = tuple(inp[name] for name in W2_PARAMS)
    x, onehot = inp["x"], inp["onehot"]

    def step():
        loss, grads = f(params, x, onehot)
        return loss, tuple(grads)
    return step


def w2_numpy(inp: Inputs) -> Step:
    x, onehot = inp["x"], inp["onehot"]
    w1, b1, w2, b2, w3, b3 = (inp[name] for name in W2_PARAMS)
    n = x.shape[0]

    def step():
        h1 = np.tanh(x @ w1 + b1)
        h2 = np.tanh(h1 @ w2 + b2)
        logits = h2 @ w3 + b3
        shifted = logits - logits.max(axis=1, keepdims=True)
        exp = np.exp(shifted)
        total = exp.sum(axis=1, keepdims=True)
        log_probs = shifted - np.log(total)
        loss = -(log_probs * onehot).sum(axis=1).mean()
        # d loss / d logits of a mean log-softmax cross-entropy with probability targets
        g_logp = onehot * np.float32(-1.0 / n)
        g = g_logp - (exp / total) * g_logp.sum(axis=1, keepdims=True)
        gw3, gb3 = h2.T @ g, g.sum(axis=0)
        g = (g @ w3.T) * (1.0 - h2 * h2)
        gw2, gb2 = h1.T @ g, g.sum(axis=0)
        g = (g @ w2.T) * (1.0 - h1 * h1)
        gw1, gb1 = x.T @ g, g.sum(axis=0)
        return loss, (gw1, gb1, gw2, gb2, gw3, gb3)
    return step


W2 = Workload(
    key="W2", title="MLP step",
    describe=lambda quick: (f"batch {W2_BATCH}, {'-'.join(map(str, W2_SIZES))} float32, tanh, "
                            "log-softmax cross-entropy vs one-hot (mean); grads of 6 params"),
    make_inputs=w2_inputs,
    builders={"jitgrad": w2_jitgrad, "torch": w2_torch, "jax": w2_jax, "autograd": w2_autograd,
              "numpy": w2_numpy},
    goal=Goal("jitgrad", "numpy", 1.2), rtol=1e-3, atol=1e-4)


# --------------------------------------------------------------------------------------------------
# W3: big elementwise work plus row reductions. Per-op overhead is negligible here; what counts is
# how many full-size temporaries each library allocates and how many passes over memory it makes.
#
# Note: sum((z - mean) / (std + eps)) over a row is identically zero, so the timed loss and the true
# gradient are zero up to rounding. To make the correctness check mean something, W3 is also verified
# (not timed) on small inputs with a random weight ``r``: loss = sum(r * standardised).
# --------------------------------------------------------------------------------------------------
W3_SIDE, W3_QUICK_SIDE = 2048, 512


def _w3_arrays(side: int, seed: int) -> Inputs:
    rng = _rng(seed)
    return {"x": rng.standard_normal((side, side)).astype(np.float32),
            "y": rng.standard_normal((side, side)).astype(np.float32)}


def w3_inputs(quick: bool) -> Inputs:
    return _w3_arrays(W3_QUICK_SIDE if quick else W3_SIDE, 3)


def w3_check_inputs() -> list[Inputs]:
    inp = _w3_arrays(64, 33)
    inp["r"] = _rng(34).standard_normal((64, 64)).astype(np.float32)
    return [inp]


def w3_jitgrad(inp: Inputs) -> Step:
    import jitgrad as jg
    x, y = jg.tensor(inp["x"], requires_grad=True), jg.tensor(inp["y"])
    r = jg.tensor(inp["r"]) if "r" in inp else None

    def step():
        x.grad = None
        z = jg.gelu(x, approximate="tanh") * y
        out = (z - z.mean(1, keepdim=True)) / (z.std(1, keepdim=True) + STD_EPS)
        loss = (out if r is None else out * r).sum()
        loss.backward()
        return loss, (x.grad,)
    return step


def w3_torch(inp: Inputs) -> Step:
    import torch
    x = torch.from_numpy(inp["x"].copy()).requires_grad_()
    y = torch.from_numpy(inp["y"])
    r = torch.from_numpy(inp["r"]) if "r" in inp else None

    def step():
        x.grad = None
        z = torch.nn.functional.gelu(x, approximate="tanh") * y
        out = (z - z.mean(1, keepdim=True)) / (z.std(1, keepdim=True) + STD_EPS)
        loss = (out if r is None else out * r).sum()
        loss.backward()
        return loss, (x.grad,)
    return step


def _w3_loss(np_like, weighted: bool):
    """The W3 loss against a numpy-compatible module, with GELU and the unbiased std spelled out."""
    def loss(x, y, r):
        gelu = 0.5 * x * (1.0 + np_like.tanh(GELU_K * (x + GELU_C * x * x * x)))
        z = gelu * y
        centred = z - np_like.mean(z, axis=1, keepdims=True)
        var = np_like.sum(centred * centred, axis=1, keepdims=True) / (z.shape[1] - 1)
        out = centred / (np_like.sqrt(var) + STD_EPS)
        return np_like.sum(out * r) if weighted else np_like.sum(out)
    return loss


def w3_jax(inp: Inputs) -> Step:
    import jax
    import jax.numpy as jnp
    f = jax.jit(jax.value_and_grad(_w3_loss(jnp, "r" in inp)))
    x, y = jnp.asarray(inp["x"]), jnp.asarray(inp["y"])
    r = jnp.asarray(inp["r"]) if "r" in inp else None

    def step():
        loss, gx = jax.block_until_ready(f(x, y, r))
        return loss, (gx,)
    return step


def w3_autograd(inp: Inputs) -> Step:
    import autograd
    import autograd.numpy as anp
    f = autograd.value_and_grad(_w3_loss(anp, "r" in inp))
    x, y, r = inp["x"], inp["y"], inp.get("r")

    def step():
        loss, gx = f(x, y, r)
        return loss, (gx,)
    return step


def w3_numpy(inp: Inputs) -> Step:
    x, y = inp["x"], inp["y"]
    g_out = inp.get("r", np.float32(1.0))   # d loss / d out: r, or 1 for a plain sum
    n = x.shape[1]

    def step():
        u = GELU_K * (x + GELU_C * x * x * x)
        t = np.tanh(u)
        gelu = 0.5 * x * (1.0 + t)
        z = gelu * y
        centred = z - z.mean(axis=1, keepdims=True)
        std = np.sqrt((centred * centred).sum(axis=1, keepdims=True) / (n - 1))
        denom = std + np.float32(STD_EPS)
        out = centred / denom
        loss = (out * g_out).sum()
        # backward through out = centred / denom, denom = sqrt(sum(centred^2) / (n-1)) + eps
        g_std = -(g_out * centred).sum(axis=1, keepdims=True) / (denom * denom)
        g_centred = g_out / denom + centred * (g_std / (std * (n - 1)))
        g_z = g_centred - g_centred.mean(axis=1, keepdims=True)
        d_gelu = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_K * (1.0 + 3.0 * GELU_C * x * x)
        return loss, (g_z * y * d_gelu,)
    return step


W3 = Workload(
    key="W3", title="big elementwise",
    describe=lambda quick: (f"x, y {W3_QUICK_SIDE if quick else W3_SIDE}^2 float32; z = gelu_tanh(x)*y; "
                            "(z - mean_row) / (std_row + 1e-5); sum; d/dx"),
    make_inputs=w3_inputs,
    builders={"jitgrad": w3_jitgrad, "torch": w3_torch, "jax": w3_jax, "autograd": w3_autograd,
              "numpy": w3_numpy},
    # The timed loss and gradient are zero up to float32 rounding (see above), so they can only be
    # compared to an absolute floor; the weighted check inputs are what test the gradient's values.
    goal=None, rtol=1e-3, atol=1e-4, atol_floor=1e-2,
    check_inputs=w3_check_inputs)


# --------------------------------------------------------------------------------------------------
# W4: a small RNN unrolled over 50 steps: ~150 tiny ops with matrix-vector products, so again mostly
# per-op overhead, but with gradients accumulating into shared weights across time steps.
# --------------------------------------------------------------------------------------------------
W4_HIDDEN, W4_INPUT, W4_STEPS = 32, 32, 50


def w4_inputs(quick: bool) -> Inputs:
    rng = _rng(4)
    scale = 0.9 / math.sqrt(W4_HIDDEN)   # keeps tanh out of saturation, so gradients stay informative
    return {"wh": scale * rng.standard_normal((W4_HIDDEN, W4_HIDDEN)),
            "wx": scale * rng.standard_normal((W4_HIDDEN, W4_INPUT)),
            "xs": rng.standard_normal((W4_STEPS, W4_INPUT))}


def w4_jitgrad(inp: Inputs) -> Step:
    import jitgrad as jg
    wh, wx = (jg.tensor(inp[k], requires_grad=True) for k in ("wh", "wx"))
    xs = [jg.tensor(row) for row in inp["xs"]]
    h0 = jg.zeros(W4_HIDDEN, dtype=jg.float64)

    def step():
        h = h0
        for x_t in xs:
            h = jg.tanh(wh @ h + wx @ x_t)
        loss = (h * h).sum()
        return loss, jg.autograd.grad(loss, [wh, wx])
    return step


def w4_torch(inp: Inputs) -> Step:
    import torch
    wh, wx = (torch.from_numpy(inp[k].copy()).requires_grad_() for k in ("wh", "wx"))
    xs = [torch.from_numpy(row) for row in inp["xs"]]
    h0 = torch.zeros(W4_HIDDEN, dtype=torch.float64)

    def step():
        h = h0
        for x_t in xs:
            h = torch.tanh(wh @ h + wx @ x_t)
        loss = (h * h).sum()
        return loss, torch.autograd.grad(loss, [wh, wx])
    return step


def _w4_loss(np_like):
    def loss(weights, xs):
        wh, wx = weights
        h = np_like.zeros(W4_HIDDEN)
        for t in range(W4_STEPS):
            h = np_like.tanh(wh @ h + wx @ xs[t])
        return np_like.sum(h * h)
    return loss


def w4_jax(inp: Inputs) -> Step:
    import jax
    import jax.numpy as jnp
    f = jax.jit(jax.value_and_grad(_w4_loss(jnp)))   # the Python loop unrolls while tracing
    weights = (jnp.asarray(inp["wh"]), jnp.asarray(inp["wx"]))
    xs = jnp.asarray(inp["xs"])

    def step():
        return jax.block_until_ready(f(weights, xs))
    return step


def w4_autograd(inp: Inputs) -> Step:
    import autograd
    import autograd.numpy as anp
    f = autograd.value_and_grad(_w4_loss(anp))
    weights, xs = (inp["wh"], inp["wx"]), inp["xs"]

    def step():
        loss, grads = f(weights, xs)
        return loss, tuple(grads)
    return step


def w4_numpy(inp: Inputs) -> Step:
    wh, wx, xs = inp["wh"], inp["wx"], inp["xs"]

    def step():
        hs = [np.zeros(W4_HIDDEN)]
        for x_t in xs:
            hs.append(np.tanh(wh @ hs[-1] + wx @ x_t))
        h = hs[-1]
        loss = (h * h).sum()
        g_wh, g_wx = np.zeros_like(wh), np.zeros_like(wx)
        g_h = 2.0 * h
        for t in range(len(xs) - 1, -1, -1):
            g_a = g_h * (1.0 - hs[t + 1] * hs[t + 1])
            g_wh += np.outer(g_a, hs[t])
            g_wx += np.outer(g_a, xs[t])
            g_h = wh.T @ g_a
        return loss, (g_wh, g_wx)
    return step


W4 = Workload(
    key="W4", title="small RNN",
    describe=lambda quick: (f"hidden {W4_HIDDEN}, input {W4_INPUT}, {W4_STEPS} steps of "
                            "h = tanh(Wh@h + Wx@x_t) float64, h0 = 0; sum(h*h); grads of Wh, Wx"),
    make_inputs=w4_inputs,
    builders={"jitgrad": w4_jitgrad, "torch": w4_torch, "jax": w4_jax, "autograd": w4_autograd,
              "numpy": w4_numpy},
    goal=Goal("jitgrad", "torch", 1.2), rtol=1e-9, atol=1e-12)


WORKLOADS = (W1, W2, W3, W4)
