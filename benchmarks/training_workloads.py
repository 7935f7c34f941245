"""W5 and W6: a whole training step written with modules, a loss module and an optimizer, the way a
user ports a PyTorch script, on every library.

W1-W4 time the gradient of a loss. A training step adds what users also pay for on every batch: the
model's module calls, ``zero_grad`` and the optimizer's update (Adam, PyTorch's defaults). Each builder
follows workloads.py's contract: it takes the numpy inputs (the batch and the initial weights, in
PyTorch's layout and ``state_dict`` names) and returns a ``step()`` that does one whole training step
and returns ``(loss, gradients)``: the loss and the gradients at the weights the step started from, in
``MLP_PARAMS``/``CNN_PARAMS`` order, which is what verify.py compares with the hand-written numpy pass. The update itself
is timed but not compared: after the first step every library trains from its own weights.

Each library is written as its users write it at its best: jitgrad and PyTorch with their ``nn``
modules and ``optim.Adam``; compiled, jitgrad in two forms: the whole step under ``jitgrad.compile``
(``zero_grad``, the model, the loss, ``backward()`` and Adam's update in one program,
docs/compile.md's "An optimizer inside a compiled step"), and the loss compiled with ``backward()``
and the optimizer outside, as ``torch.compile`` users write it; JAX as one ``jax.jit`` of loss,
gradients and the Adam update (``lax.conv_general_dilated`` for the convolutions); HIPS autograd and
numpy with the update written in numpy.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from workloads import Inputs, Step, Workload

LR, BETAS, EPS = 1e-3, (0.9, 0.999), 1e-8


# ---- the update, written once for the array libraries ------------------------------------------------------
def adam_arrays(np_like: Any, params: tuple, grads: tuple, moments: tuple, step: Any) -> tuple[tuple, tuple]:
    """PyTorch's Adam (no weight decay) on tuples of arrays, functionally: returns the new parameters and
    the new ``(m, v)`` moment pairs. ``step`` is the step number after this update (1 on the first)."""
    beta1, beta2 = BETAS
    step_size = LR / (1 - beta1 ** step)
    root_correction = np_like.sqrt(1 - beta2 ** step)
    new_params, new_moments = [], []
    for p, g, (m, v) in zip(params, grads, moments):
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        new_params.append(p - step_size * m / (np_like.sqrt(v) / root_correction + EPS))
        new_moments.append((m, v))
    return tuple(new_params), tuple(new_moments)


def adam_in_place(params: list[np.ndarray], grads: tuple, moments: list[tuple[np.ndarray, np.ndarray]],
                  step: int) -> None:
    """The same update in place, as a hand-written numpy loop would do it (no new parameter arrays)."""
    beta1, beta2 = BETAS
    step_size = LR / (1 - beta1 ** step)
    root_correction = math.sqrt(1 - beta2 ** step)
    for p, g, (m, v) in zip(params, grads, moments):
        m *= beta1
        m += (1 - beta1) * g
        v *= beta2
        v += (1 - beta2) * g * g
        p -= step_size * m / (np.sqrt(v) / root_correction + EPS)


def _zero_moments(params) -> list:
    return [(np.zeros_like(p), np.zeros_like(p)) for p in params]


# ---- jitgrad and PyTorch: one builder for both, the APIs being the same ------------------------------------
def _module_step(lib: Any, make_model: Callable[[Any], Any], inp: Inputs, params: tuple[str, ...],
                 to_tensor: Callable, optimizer_options: dict, compile_loss: Callable | None = None,
                 compile_step: Callable | None = None) -> Step:
    """A training step with ``lib.nn`` modules: the model loaded from the inputs' weights, Adam, and
    ``zero_grad(); loss = criterion(model(x), y); loss.backward(); opt.step()``, with the loss compiled by
    ``compile_loss`` or the whole step by ``compile_step`` when one is given. ``zero_grad`` comes first, so
    after a call each parameter's ``.grad`` holds the gradient at the weights the step started from."""
    model = make_model(lib.nn)
    model.load_state_dict({name: to_tensor(inp[name]) for name in params})
    criterion = lib.nn.CrossEntropyLoss()
    opt = lib.optim.Adam(model.parameters(), lr=LR, betas=BETAS, eps=EPS, **optimizer_options)
    named = dict(model.named_parameters())
    ordered = [named[name] for name in params]
    x, y = to_tensor(inp["x"]), to_tensor(inp["y"])

    def loss_of(data, labels):
        return criterion(model(data), labels)
    if compile_loss is not None:
        loss_of = compile_loss(loss_of)

    def train_step(data, labels):
        opt.zero_grad()
        loss = loss_of(data, labels)
        loss.backward()
        opt.step()
        return loss
    if compile_step is not None:
        train_step = compile_step(train_step)
        _compile_then_rewind(lib, train_step, (x, y), opt, ordered)

    def step():
        return train_step(x, y), tuple(p.grad for p in ordered)
    return step


def _compile_then_rewind(lib: Any, train_step: Any, args: tuple, opt: Any, ordered: list) -> None:
    """Runs a compiled whole step until it has its program, then puts the weights and Adam's state back.

    Adam's first step makes its moments, so a compiled step runs its first call eagerly and compiles the
    second (docs/compile.md). Left as they are, the first call verify.py checks would be that eager one,
    and it would start from the initial weights while the program's first call would not. Rewinding in
    place (the weights copied back, the moments and step counts zeroed: the same tensors, so the
    program's guards still hold) makes every call verify.py and the timing see the compiled program's,
    the first of them starting from the inputs' weights as every other column does."""
    initial = [p.detach().clone() for p in ordered]
    for _ in range(2):
        train_step(*args)
    if not train_step.programs:
        raise RuntimeError(f"the whole training step did not compile: {train_step.log}")
    with lib.no_grad():
        for p, start in zip(ordered, initial):
            p.copy_(start)
        for entry in opt.state.entries:
            for value in entry.values():
                value.zero_()
    opt.zero_grad()


def _jitgrad_builder(make_model: Callable, params: tuple[str, ...], compiled: str | None) -> Callable[[Inputs], Step]:
    """jitgrad eager (``compiled`` None), with the loss compiled (``"loss"``) or the whole step (``"step"``)."""
    def build(inp: Inputs) -> Step:
        import jitgrad as jg
        return _module_step(jg, make_model, inp, params, lambda a: jg.tensor(a.copy()), {},
                            compile_loss=jg.compile if compiled == "loss" else None,
                            compile_step=jg.compile if compiled == "step" else None)
    return build


def _torch_builder(make_model: Callable, params: tuple[str, ...], compiled: bool) -> Callable[[Inputs], Step]:
    def build(inp: Inputs) -> Step:
        import torch
        # PyTorch at its best on the CPU: the fused Adam (one kernel for all parameters), which measured
        # faster here than its default per-parameter loop and than foreach.
        return _module_step(torch, make_model, inp, params, lambda a: torch.from_numpy(a.copy()),
                            {"fused": True}, compile_loss=torch.compile if compiled else None)
    return build


# ---- JAX, HIPS autograd, numpy: the loss on arrays ---------------------------------------------------------
def _cross_entropy(np_like: Any, logsumexp: Callable, logits, onehot):
    return -np_like.mean(np_like.sum((logits - logsumexp(logits, axis=1, keepdims=True)) * onehot, axis=1))


def _jax_builder(loss_of: Callable[[Any], Callable], params: tuple[str, ...]) -> Callable[[Inputs], Step]:
    """One ``jax.jit`` of the loss, its gradients and the Adam update: the whole step in one call."""
    def build(inp: Inputs) -> Step:
        import jax
        import jax.numpy as jnp
        loss = loss_of(jnp)
        gradient = jax.value_and_grad(loss)

        @jax.jit
        def train_step(weights, moments, step, x, onehot):
            value, grads = gradient(weights, x, onehot)
            step = step + 1
            weights, moments = adam_arrays(jnp, weights, grads, moments, step)
            return value, grads, weights, moments, step

        state = {"weights": tuple(jnp.asarray(inp[name]) for name in params),
                 "moments": tuple((jnp.zeros_like(jnp.asarray(inp[n])),) * 2 for n in params),
                 "step": jnp.asarray(0.0, dtype=jnp.float32)}
        x, onehot = jnp.asarray(inp["x"]), jnp.asarray(_onehot(inp))

        def step():
            value, grads, state["weights"], state["moments"], state["step"] = jax.block_until_ready(
                train_step(state["weights"], state["moments"], state["step"], x, onehot))
            return value, grads
        return step
    return build


def _autograd_builder(loss_of: Callable[[Any], Callable], params: tuple[str, ...]) -> Callable[[Inputs], Step]:
    def build(inp: Inputs) -> Step:
        import autograd
        import autograd.numpy as anp
        gradient = autograd.value_and_grad(loss_of(anp))
        weights = [inp[name].copy() for name in params]
        moments = _zero_moments(weights)
        x, onehot = inp["x"], _onehot(inp)
        count = [0]

        def step():
            value, grads = gradient(tuple(weights), x, onehot)
            count[0] += 1
            adam_in_place(weights, grads, moments, count[0])
            return value, tuple(grads)
        return step
    return build


def _numpy_builder(forward_backward: Callable, params: tuple[str, ...]) -> Callable[[Inputs], Step]:
    """The hand-written pass (the reference) followed by Adam in place."""
    def build(inp: Inputs) -> Step:
        weights = [inp[name].copy() for name in params]
        moments = _zero_moments(weights)
        x, onehot = inp["x"], _onehot(inp)
        count = [0]

        def step():
            value, grads = forward_backward(weights, x, onehot)
            count[0] += 1
            adam_in_place(weights, grads, moments, count[0])
            return value, grads
        return step
    return build


def _onehot(inp: Inputs) -> np.ndarray:
    return np.eye(CLASSES, dtype=np.float32)[inp["y"]]


def _logsumexp_for(np_like: Any) -> Callable:
    if np_like is np:
        return lambda a, axis, keepdims: np.log(np.exp(a - a.max(axis, keepdims=True)).sum(
            axis, keepdims=True)) + a.max(axis, keepdims=True)
    if np_like.__name__.startswith("jax"):
        import jax
        return jax.nn.logsumexp
    from autograd.scipy.special import logsumexp
    return logsumexp


def _softmax_cross_entropy_backward(logits: np.ndarray, onehot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean cross-entropy of class targets (one-hot) and its gradient with respect to the logits."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    total = exp.sum(axis=1, keepdims=True)
    loss = -((shifted - np.log(total)) * onehot).sum(axis=1).mean()
    return loss, (exp / total - onehot) / np.float32(logits.shape[0])


CLASSES = 10


# ---- W5: an MLP ------------------------------------------------------------------------------------------
MLP_SIZES, MLP_BATCH = (64, 128, 128, CLASSES), 64
MLP_PARAMS = ("0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias")


def _linear_weights(rng: np.random.Generator, fan_in: int, fan_out: int, prefix: str) -> Inputs:
    bound = 1 / math.sqrt(fan_in)   # PyTorch's Linear initialisation
    return {f"{prefix}.weight": rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32),
            f"{prefix}.bias": rng.uniform(-bound, bound, fan_out).astype(np.float32)}


def mlp_inputs(quick: bool) -> Inputs:
    rng = np.random.default_rng(5)
    inp = {"x": rng.standard_normal((MLP_BATCH, MLP_SIZES[0])).astype(np.float32),
           "y": rng.integers(0, CLASSES, MLP_BATCH)}
    for layer, (fan_in, fan_out) in enumerate(zip(MLP_SIZES[:-1], MLP_SIZES[1:])):
        inp.update(_linear_weights(rng, fan_in, fan_out, str(2 * layer)))
    return inp


def mlp_model(nn: Any) -> Any:
    a, b, c, d = MLP_SIZES
    return nn.Sequential(nn.Linear(a, b), nn.ReLU(), nn.Linear(b, c), nn.ReLU(), nn.Linear(c, d))


def mlp_loss(np_like: Any) -> Callable:
    logsumexp = _logsumexp_for(np_like)

    def loss(weights, x, onehot):
        w1, b1, w2, b2, w3, b3 = weights
        h = np_like.maximum(x @ w1.T + b1, 0.0)
        h = np_like.maximum(h @ w2.T + b2, 0.0)
        return _cross_entropy(np_like, logsumexp, h @ w3.T + b3, onehot)
    return loss


def mlp_numpy(weights: list[np.ndarray], x: np.ndarray, onehot: np.ndarray):
    w1, b1, w2, b2, w3, b3 = weights
    h1 = np.maximum(x @ w1.T + b1, 0)
    h2 = np.maximum(h1 @ w2.T + b2, 0)
    loss, g = _softmax_cross_entropy_backward(h2 @ w3.T + b3, onehot)
    gw3, gb3 = g.T @ h2, g.sum(axis=0)
    g = (g @ w3) * (h2 > 0)
    gw2, gb2 = g.T @ h1, g.sum(axis=0)
    g = (g @ w2) * (h1 > 0)
    return loss, (g.T @ x, g.sum(axis=0), gw2, gb2, gw3, gb3)


# ---- W6: a small CNN -----------------------------------------------------------------------------------------
CNN_BATCH, CNN_SIDE, CNN_CHANNELS = 32, 8, (1, 8, 16)
CNN_PARAMS = ("0.weight", "0.bias", "2.weight", "2.bias", "5.weight", "5.bias")


def cnn_inputs(quick: bool) -> Inputs:
    rng = np.random.default_rng(6)
    inp = {"x": rng.standard_normal((CNN_BATCH, CNN_CHANNELS[0], CNN_SIDE, CNN_SIDE)).astype(np.float32),
           "y": rng.integers(0, CLASSES, CNN_BATCH)}
    for prefix, (c_in, c_out) in zip(("0", "2"), zip(CNN_CHANNELS[:-1], CNN_CHANNELS[1:])):
        bound = 1 / math.sqrt(c_in * 9)   # PyTorch's Conv2d initialisation
        inp[f"{prefix}.weight"] = rng.uniform(-bound, bound, (c_out, c_in, 3, 3)).astype(np.float32)
        inp[f"{prefix}.bias"] = rng.uniform(-bound, bound, c_out).astype(np.float32)
    inp.update(_linear_weights(rng, CNN_CHANNELS[-1] * CNN_SIDE ** 2, CLASSES, "5"))
    return inp


def cnn_model(nn: Any) -> Any:
    c0, c1, c2 = CNN_CHANNELS
    return nn.Sequential(nn.Conv2d(c0, c1, 3, padding=1), nn.ReLU(), nn.Conv2d(c1, c2, 3, padding=1),
                         nn.ReLU(), nn.Flatten(), nn.Linear(c2 * CNN_SIDE ** 2, CLASSES))


def _conv_by_shifts(np_like: Any, x, w, b):
    """A 3x3 convolution with padding 1 as nine shifted products (what HIPS autograd can differentiate)."""
    side = x.shape[2]
    padded = np_like.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="constant")
    out = b[None, :, None, None]
    for i in range(3):
        for j in range(3):
            out = out + np_like.einsum("bchw,oc->bohw", padded[:, :, i:i + side, j:j + side], w[:, :, i, j])
    return out


def cnn_loss(np_like: Any) -> Callable:
    logsumexp = _logsumexp_for(np_like)
    if np_like.__name__.startswith("jax"):
        from jax import lax

        def conv(x, w, b):
            return lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1))) + b[None, :, None, None]
    else:
        def conv(x, w, b):
            return _conv_by_shifts(np_like, x, w, b)

    def loss(weights, x, onehot):
        k1, c1, k2, c2, w, b = weights
        h = np_like.maximum(conv(x, k1, c1), 0.0)
        h = np_like.maximum(conv(h, k2, c2), 0.0)
        return _cross_entropy(np_like, logsumexp, h.reshape(h.shape[0], -1) @ w.T + b, onehot)
    return loss


def _im2col(x: np.ndarray) -> np.ndarray:
    """(batch * h * w, channels * 9): every 3x3 window of ``x`` padded by 1, one row per output pixel,
    copied once into a matrix so that the convolution and both its gradients are matrix products."""
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))   # b, c, h, w, 3, 3
    b, c, h, w = x.shape
    return windows.transpose(0, 2, 3, 1, 4, 5).reshape(b * h * w, c * 9)


def _conv_forward(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    cols = _im2col(x)
    out = (cols @ w.reshape(w.shape[0], -1).T).reshape(x.shape[0], x.shape[2], x.shape[3], w.shape[0])
    return out.transpose(0, 3, 1, 2) + b[None, :, None, None], cols


def _conv_backward(g: np.ndarray, cols: np.ndarray, w: np.ndarray, need_input: bool):
    """Gradients of the weight, the bias and (when asked) the input of a 3x3, padding-1 convolution."""
    batch, _, side, _ = g.shape
    rows = g.transpose(0, 2, 3, 1).reshape(-1, w.shape[0])
    gw = (rows.T @ cols).reshape(w.shape)
    gx = None
    if need_input:
        g_cols = (rows @ w.reshape(w.shape[0], -1)).reshape(batch, side, side, w.shape[1], 3, 3)
        gx_padded = np.zeros((batch, w.shape[1], side + 2, side + 2), dtype=g.dtype)
        for i in range(3):
            for j in range(3):
                gx_padded[:, :, i:i + side, j:j + side] += g_cols[..., i, j].transpose(0, 3, 1, 2)
        gx = gx_padded[:, :, 1:-1, 1:-1]
    return gw, g.sum(axis=(0, 2, 3)), gx


def cnn_numpy(weights: list[np.ndarray], x: np.ndarray, onehot: np.ndarray):
    k1, c1, k2, c2, w, b = weights
    a1, cols1 = _conv_forward(x, k1, c1)
    h1 = np.maximum(a1, 0)
    a2, cols2 = _conv_forward(h1, k2, c2)
    h2 = np.maximum(a2, 0)
    flat = h2.reshape(h2.shape[0], -1)
    loss, g = _softmax_cross_entropy_backward(flat @ w.T + b, onehot)
    gw, gb = g.T @ flat, g.sum(axis=0)
    g = (g @ w).reshape(h2.shape) * (a2 > 0)
    gk2, gc2, g = _conv_backward(g, cols2, k2, need_input=True)
    gk1, gc1, _ = _conv_backward(g * (a1 > 0), cols1, k1, need_input=False)
    return loss, (gk1, gc1, gk2, gc2, gw, gb)


# ---- the workloads -----------------------------------------------------------------------------------------
def _builders(make_model: Callable, loss_of: Callable, numpy_pass: Callable, params: tuple[str, ...]) -> dict:
    return {"jitgrad": _jitgrad_builder(make_model, params, compiled=None),
            "jitgrad_compiled": _jitgrad_builder(make_model, params, compiled="step"),
            "jitgrad_loss": _jitgrad_builder(make_model, params, compiled="loss"),
            "torch": _torch_builder(make_model, params, compiled=False),
            "torch_compile": _torch_builder(make_model, params, compiled=True),
            "jax": _jax_builder(loss_of, params),
            "autograd": _autograd_builder(loss_of, params),
            "numpy": _numpy_builder(numpy_pass, params)}


W5 = Workload(
    key="W5", title="MLP training step",
    describe=lambda quick: (f"nn.Sequential {'-'.join(map(str, MLP_SIZES))} float32, ReLU, batch {MLP_BATCH}; "
                            "CrossEntropyLoss of class indices; zero_grad, backward, Adam step"),
    make_inputs=mlp_inputs, builders=_builders(mlp_model, mlp_loss, mlp_numpy, MLP_PARAMS),
    goal=None, rtol=1e-3, atol=1e-4)

W6 = Workload(
    key="W6", title="CNN training step",
    describe=lambda quick: (f"nn.Sequential Conv2d {CNN_CHANNELS[0]}->{CNN_CHANNELS[1]}->{CNN_CHANNELS[2]} "
                            f"3x3 padding 1, ReLU, Flatten, Linear to {CLASSES}; {CNN_BATCH}x{CNN_CHANNELS[0]}x"
                            f"{CNN_SIDE}x{CNN_SIDE} float32; CrossEntropyLoss, Adam step"),
    make_inputs=cnn_inputs, builders=_builders(cnn_model, cnn_loss, cnn_numpy, CNN_PARAMS),
    goal=None, rtol=1e-3, atol=1e-4)

WORKLOADS = (W5, W6)


def missing_for_jitgrad(workload: Workload) -> str | None:
    """Why jitgrad cannot run ``workload`` yet (a layer it lacks), or None when it can."""
    if workload is W6:
        import jitgrad.nn
        if not hasattr(jitgrad.nn, "Conv2d"):
            return "jitgrad.nn.Conv2d does not exist yet"
    return None


__all__ = ["WORKLOADS", "W5", "W6", "adam_arrays", "adam_in_place", "missing_for_jitgrad"]
