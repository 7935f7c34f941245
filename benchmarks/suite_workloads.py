"""The workload suite (K1-K15): the compiler measured beyond the four workloads it was tuned on.

Each workload is one loss written once against a small table of operations (``Ops``) that jitgrad,
PyTorch and JAX each fill in their own spelling, so the columns compute the same maths by
construction; the inputs, which of them are parameters (differentiated) and the dtype are part of
the workload. From that one description ``suite.py`` builds every column the issue asks for:

- ``jitgrad``: eager, ``loss.backward()`` into cleared ``.grad``s;
- ``jitgrad_compiled``: the whole step under one ``jitgrad.compile`` (``.grad`` cleared, the loss,
  ``loss.backward()`` inside), the ``.grad``s it writes back read after the call;
- ``jitgrad_loss``: the loss compiled, ``backward()`` outside, as a training loop ported from PyTorch
  writes it;
- ``torch`` (eager), ``torch_compile`` (the loss compiled, ``backward()`` outside) and ``jax``
  (``jit(value_and_grad)`` of the whole step), each run as its users run it at its best;
- ``torch_float64``, the reference: PyTorch eager in float64 on float64 copies of the inputs. Every other column is
  verified against it (``verify.check``) before anything is timed; a hand-written numpy backward for
  fifteen losses would be fifteen more places for a bug, and PyTorch's gradients are the behaviour
  jitgrad promises to follow.

The sizes are those of issue 17's table for K1-K4, chosen for the rest so that one step takes from
tens of microseconds (per-call overhead matters) to a few milliseconds (the kernels matter).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from workloads import Inputs, Step, Workload

F32, F64 = np.float32, np.float64


@dataclass(frozen=True)
class Ops:
    """The operations a suite loss uses beyond Python's operators, in one library's spelling."""

    tanh: Callable
    exp: Callable
    sqrt: Callable
    mean: Callable            # (x, dim) -> mean over dim, kept as a size-1 dimension
    softmax: Callable         # (x, dim)
    logsumexp: Callable       # (x, dim)
    cumsum: Callable          # (x, dim)
    transpose: Callable       # (x, dim0, dim1)
    permute: Callable         # (x, dims)
    gather: Callable          # (x, dim, index): torch.gather
    conv2d: Callable          # (x, weight): NCHW, OIHW, stride 1, no padding
    cross_entropy: Callable   # (logits, targets): class indices, mean over the batch
    embedding: Callable       # (index, table): table's rows at index


def torch_like_ops(module: Any, functional: Any) -> Ops:
    """jitgrad and PyTorch share PyTorch's spelling."""
    return Ops(tanh=module.tanh, exp=module.exp, sqrt=module.sqrt,
               mean=lambda x, dim: x.mean(dim, keepdim=True),
               softmax=lambda x, dim: x.softmax(dim), logsumexp=lambda x, dim: x.logsumexp(dim),
               cumsum=lambda x, dim: x.cumsum(dim), transpose=lambda x, a, b: x.transpose(a, b),
               permute=lambda x, dims: x.permute(*dims), gather=lambda x, dim, index: x.gather(dim, index),
               conv2d=functional.conv2d, cross_entropy=functional.cross_entropy, embedding=functional.embedding)


def jax_ops() -> Ops:
    import jax
    import jax.numpy as jnp

    def cross_entropy(logits, targets):
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.take_along_axis(logp, targets[:, None], axis=1).mean()

    return Ops(tanh=jnp.tanh, exp=jnp.exp, sqrt=jnp.sqrt,
               mean=lambda x, dim: x.mean(dim, keepdims=True),
               softmax=lambda x, dim: jax.nn.softmax(x, axis=dim),
               logsumexp=lambda x, dim: jax.nn.logsumexp(x, axis=dim),
               cumsum=lambda x, dim: jnp.cumsum(x, axis=dim), transpose=lambda x, a, b: jnp.swapaxes(x, a, b),
               permute=lambda x, dims: jnp.transpose(x, dims),
               gather=lambda x, dim, index: jnp.take_along_axis(x, index, axis=dim),
               conv2d=lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), "VALID"),
               cross_entropy=cross_entropy, embedding=lambda index, table: table[index])


@dataclass(frozen=True)
class Case:
    """One suite workload: its loss, its inputs and which of them are parameters."""

    key: str
    title: str
    formula: str                                   # the loss, for the report
    loss: Callable[[Ops], Callable]                # ops -> loss(*inputs)
    inputs: Callable[[bool], Inputs]               # quick -> inputs, in the loss's argument order
    params: tuple[str, ...]                        # the inputs differentiated
    rtol: float = 1e-3
    atol: float = 1e-4                             # relative to the largest reference value


def _rng(key: str) -> np.random.Generator:
    return np.random.default_rng(int(key[1:]))


def _normal(rng: np.random.Generator, shape: tuple[int, ...], dtype=F32, scale: float = 1.0) -> np.ndarray:
    return (scale * rng.standard_normal(shape)).astype(dtype)


# ---- the losses ------------------------------------------------------------------------------------------
def k1_loss(ops: Ops) -> Callable:
    def loss(x):
        return ((x[1:] - x[:-1]) ** 2).sum()
    return loss


def k2_loss(ops: Ops) -> Callable:
    def loss(x):
        return (ops.softmax(x, -1) * x).sum()
    return loss


def k3_loss(ops: Ops) -> Callable:
    def loss(a, b):
        return ((a @ b) ** 2).sum()
    return loss


def k4_loss(ops: Ops) -> Callable:
    def loss(x, g, b):
        centred = x - ops.mean(x, -1)
        var = ops.mean(centred * centred, -1)
        return ops.tanh(centred / ops.sqrt(var + 1e-5) * g + b).sum()
    return loss


def k5_loss(ops: Ops) -> Callable:
    def loss(table, index, y):
        return (ops.tanh(ops.embedding(index, table)) * y).sum()
    return loss


def k6_loss(ops: Ops) -> Callable:
    def loss(x, index, y):
        return (ops.gather(x, 1, index) * y).sum()
    return loss


def k7_loss(ops: Ops) -> Callable:
    def loss(x):
        return ops.tanh(ops.cumsum(x, 1)).sum()
    return loss


def k8_loss(ops: Ops) -> Callable:
    def loss(a, b, c):
        d = ((a - b) * (a - b) * c).sum(-1)
        return ops.exp(-d).sum()
    return loss


def k9_loss(ops: Ops) -> Callable:
    def loss(q, k, v):
        scores = ops.tanh(q @ ops.transpose(k, 1, 2))
        return (scores @ ops.permute(v, (1, 0, 2))).sum()
    return loss


def k10_loss(ops: Ops) -> Callable:
    def loss(x, w):
        return (ops.logsumexp(x, 1) * w).sum()
    return loss


def k11_loss(ops: Ops) -> Callable:
    def loss(logits, targets):
        return ops.cross_entropy(logits, targets)
    return loss


def k12_loss(ops: Ops) -> Callable:
    def loss(x, w):
        return ops.tanh(ops.conv2d(x, w)).sum()
    return loss


K13_LAYERS, K13_WIDTH = 16, 8


def k13_loss(ops: Ops) -> Callable:
    def loss(x, *params):
        h = x
        for i in range(K13_LAYERS):
            h = ops.tanh(h @ params[2 * i] + params[2 * i + 1])
        return (h * h).sum()
    return loss


def k14_loss(ops: Ops) -> Callable:
    def loss(a, b):
        return ops.tanh(a @ b).sum()
    return loss


# ---- the inputs --------------------------------------------------------------------------------------------
def k1_inputs(quick: bool) -> Inputs:
    return {"x": _normal(_rng("K1"), (4096, 3), F64)}


def k2_inputs(quick: bool) -> Inputs:
    return {"x": _normal(_rng("K2"), (256 if quick else 1024, 1024))}


def k3_inputs(quick: bool) -> Inputs:
    rng, batch = _rng("K3"), 4 if quick else 16
    return {"a": _normal(rng, (batch, 128, 64), scale=0.2), "b": _normal(rng, (batch, 64, 128), scale=0.2)}


def k4_inputs(quick: bool) -> Inputs:
    rng = _rng("K4")
    return {"x": _normal(rng, (512 if quick else 4096, 512)), "g": _normal(rng, (512,), scale=0.5),
            "b": _normal(rng, (512,), scale=0.5)}


def k5_inputs(quick: bool) -> Inputs:
    rng = _rng("K5")
    return {"table": _normal(rng, (10000, 64)), "index": rng.integers(0, 10000, 1024 if quick else 8192),
            "y": _normal(rng, (1024 if quick else 8192, 64))}


def k6_inputs(quick: bool) -> Inputs:
    rng, rows = _rng("K6"), 256 if quick else 1024
    return {"x": _normal(rng, (rows, 512)), "index": rng.integers(0, 512, (rows, 64)),
            "y": _normal(rng, (rows, 64))}


def k7_inputs(quick: bool) -> Inputs:
    return {"x": _normal(_rng("K7"), (64 if quick else 256, 2048), F64, scale=0.05)}


def k8_inputs(quick: bool) -> Inputs:
    rng, n = _rng("K8"), 64 if quick else 256
    return {"a": _normal(rng, (n, 1, 32), scale=0.2), "b": _normal(rng, (1, n, 32), scale=0.2),
            "c": np.abs(_normal(rng, (32,)))}


def k9_inputs(quick: bool) -> Inputs:
    rng, batch = _rng("K9"), 2 if quick else 8
    return {"q": _normal(rng, (batch, 128, 64), scale=0.15), "k": _normal(rng, (batch, 128, 64), scale=0.15),
            "v": _normal(rng, (128, batch, 64), scale=0.15)}


def k10_inputs(quick: bool) -> Inputs:
    rng, rows = _rng("K10"), 64 if quick else 256
    return {"x": _normal(rng, (rows, 8192)), "w": _normal(rng, (rows,))}


def k11_inputs(quick: bool) -> Inputs:
    rng, rows = _rng("K11"), 64 if quick else 256
    return {"logits": _normal(rng, (rows, 8192)), "targets": rng.integers(0, 8192, rows)}


def k12_inputs(quick: bool) -> Inputs:
    rng = _rng("K12")
    return {"x": _normal(rng, (2 if quick else 8, 3, 32, 32)), "w": _normal(rng, (16, 3, 3, 3), scale=0.3)}


def k13_inputs(quick: bool) -> Inputs:
    rng = _rng("K13")
    scale = 1.0 / math.sqrt(K13_WIDTH)
    inputs = {"x": _normal(rng, (16, K13_WIDTH), F64)}
    for i in range(K13_LAYERS):
        inputs[f"w{i}"] = _normal(rng, (K13_WIDTH, K13_WIDTH), F64, scale)
        inputs[f"b{i}"] = _normal(rng, (K13_WIDTH,), F64, 0.1)
    return inputs


def k14_inputs(quick: bool) -> Inputs:
    rng, rows = _rng("K14"), 8192 if quick else 65536
    return {"a": _normal(rng, (rows, 16)), "b": _normal(rng, (16, 16), scale=0.25)}


def k15_inputs(quick: bool) -> Inputs:
    rng, inner = _rng("K15"), 8192 if quick else 65536
    return {"a": _normal(rng, (16, inner), scale=0.05), "b": _normal(rng, (inner, 16), scale=0.05)}


CASES = (
    Case("K1", "sliced difference", "((x[1:] - x[:-1]) ** 2).sum()", k1_loss, k1_inputs, ("x",),
         rtol=1e-9, atol=1e-12),
    Case("K2", "softmax", "(softmax(x, -1) * x).sum()", k2_loss, k2_inputs, ("x",)),
    Case("K3", "batched matmul", "((a @ b) ** 2).sum()", k3_loss, k3_inputs, ("a", "b")),
    Case("K4", "layer norm by hand", "tanh((x - mean) / sqrt(var + 1e-5) * g + b).sum()", k4_loss, k4_inputs,
         ("x", "g", "b")),
    Case("K5", "embedding gather", "(tanh(embedding(index, table)) * y).sum()", k5_loss, k5_inputs, ("table",)),
    Case("K6", "gather along rows", "(x.gather(1, index) * y).sum()", k6_loss, k6_inputs, ("x",)),
    Case("K7", "cumsum", "tanh(x.cumsum(1)).sum()", k7_loss, k7_inputs, ("x",), rtol=1e-9, atol=1e-12),
    Case("K8", "broadcasting", "exp(-((a - b) * (a - b) * c).sum(-1)).sum()", k8_loss, k8_inputs,
         ("a", "b", "c")),
    Case("K9", "transposed matmuls", "(tanh(q @ k.transpose(1, 2)) @ v.permute(1, 0, 2)).sum()", k9_loss,
         k9_inputs, ("q", "k", "v")),
    Case("K10", "logsumexp, wide rows", "(x.logsumexp(1) * w).sum()", k10_loss, k10_inputs, ("x", "w")),
    Case("K11", "cross-entropy, wide rows", "cross_entropy(logits, targets)", k11_loss, k11_inputs,
         ("logits",)),
    Case("K12", "conv2d", "tanh(conv2d(x, w)).sum()", k12_loss, k12_inputs, ("x", "w")),
    Case("K13", "many small parameters", f"{K13_LAYERS} layers h = tanh(h @ w + b); (h * h).sum()", k13_loss,
         k13_inputs, ("x",) + tuple(f"{p}{i}" for i in range(K13_LAYERS) for p in "wb"), rtol=1e-9, atol=1e-12),
    Case("K14", "tall-skinny matmul", "tanh(a @ b).sum()", k14_loss, k14_inputs, ("a", "b")),
    Case("K15", "short-wide matmul", "tanh(a @ b).sum()", k14_loss, k15_inputs, ("a", "b")),
)
BY_KEY = {case.key: case for case in CASES}


def describe(case: Case, quick: bool) -> str:
    """The case's one-line description: the loss, then the inputs of this run (shape and dtype)."""
    inputs = case.inputs(quick)
    shown = [f"{name} {tuple(a.shape)} {a.dtype}" for name, a in list(inputs.items())[:4]]
    more = f", ... ({len(inputs)} inputs)" if len(inputs) > 4 else ""
    return f"{case.formula}; {', '.join(shown)}{more}"


# ---- the columns -------------------------------------------------------------------------------------------
def _wanted(case: Case, inputs: Inputs) -> list[int]:
    return [i for i, name in enumerate(inputs) if name in case.params]


def _backward_step(loss: Callable, tensors: list, wanted: list[int]) -> Step:
    """Eager, or a compiled loss: ``.grad`` cleared (``zero_grad(set_to_none=True)``), the loss,
    ``backward()``."""
    params = [tensors[i] for i in wanted]

    def step():
        for p in params:
            p.grad = None
        value = loss(*tensors)
        value.backward()
        return value, tuple(p.grad for p in params)
    return step


def _jitgrad_tensors(case: Case, inputs: Inputs) -> list:
    import jitgrad as jg
    return [jg.tensor(a, requires_grad=name in case.params) for name, a in inputs.items()]


def _jitgrad_ops() -> Ops:
    import jitgrad as jg
    return torch_like_ops(jg, jg.nn.functional)


def jitgrad_eager(case: Case) -> Callable[[Inputs], Step]:
    def build(inputs: Inputs) -> Step:
        return _backward_step(case.loss(_jitgrad_ops()), _jitgrad_tensors(case, inputs), _wanted(case, inputs))
    return build


def jitgrad_whole_step(case: Case) -> Callable[[Inputs], Step]:
    """The whole step in one ``jitgrad.compile``: the ``.grad``s cleared, the loss and ``backward()``
    inside; the compiled call writes the gradients back into the parameters' ``.grad``."""
    def build(inputs: Inputs) -> Step:
        import jitgrad as jg
        loss = case.loss(_jitgrad_ops())
        tensors, wanted = _jitgrad_tensors(case, inputs), _wanted(case, inputs)
        params = [tensors[i] for i in wanted]

        @jg.compile
        def step_fn(*args):
            for i in wanted:
                args[i].grad = None
            value = loss(*args)
            value.backward()
            return value

        def step():
            value = step_fn(*tensors)
            return value, tuple(p.grad for p in params)
        return step
    return build


def jitgrad_compiled_loss(case: Case) -> Callable[[Inputs], Step]:
    def build(inputs: Inputs) -> Step:
        import jitgrad as jg
        return _backward_step(jg.compile(case.loss(_jitgrad_ops())), _jitgrad_tensors(case, inputs),
                              _wanted(case, inputs))
    return build


def _torch_tensors(case: Case, inputs: Inputs, dtype: Any = None) -> list:
    import torch
    out = []
    for name, a in inputs.items():
        if dtype is not None and a.dtype.kind == "f":
            a = a.astype(dtype)
        out.append(torch.from_numpy(a.copy()).requires_grad_(name in case.params))
    return out


def _torch_ops() -> Ops:
    import torch
    return torch_like_ops(torch, torch.nn.functional)


def torch_eager(case: Case, dtype: Any = None) -> Callable[[Inputs], Step]:
    def build(inputs: Inputs) -> Step:
        return _backward_step(case.loss(_torch_ops()), _torch_tensors(case, inputs, dtype), _wanted(case, inputs))
    return build


def torch_compiled(case: Case) -> Callable[[Inputs], Step]:
    def build(inputs: Inputs) -> Step:
        import torch
        return _backward_step(torch.compile(case.loss(_torch_ops())), _torch_tensors(case, inputs),
                              _wanted(case, inputs))
    return build


def jax_jit(case: Case) -> Callable[[Inputs], Step]:
    """``jit(value_and_grad)`` of the whole step, the form JAX users write and its fastest."""
    def build(inputs: Inputs) -> Step:
        import jax
        import jax.numpy as jnp
        wanted = _wanted(case, inputs)
        f = jax.jit(jax.value_and_grad(case.loss(jax_ops()), argnums=tuple(wanted)))
        arrays = [jnp.asarray(a) for a in inputs.values()]

        def step():
            return jax.block_until_ready(f(*arrays))
        return step
    return build


REFERENCE = "torch_float64"   # a torch key: workloads.to_numpy detaches it


def workload(case: Case) -> Workload:
    """The case as a ``Workload`` of the benchmark harness (verify.py, timing.py, report.py)."""
    builders = {"jitgrad": jitgrad_eager(case), "jitgrad_compiled": jitgrad_whole_step(case),
                "jitgrad_loss": jitgrad_compiled_loss(case), "torch": torch_eager(case),
                "torch_compile": torch_compiled(case), "jax": jax_jit(case),
                REFERENCE: torch_eager(case, np.float64)}
    return Workload(key=case.key, title=case.title, describe=lambda quick: describe(case, quick),
                    make_inputs=case.inputs, builders=builders, goal=None, rtol=case.rtol, atol=case.atol)


WORKLOADS = tuple(workload(case) for case in CASES)
SUITE_BY_KEY = {w.key: w for w in WORKLOADS}

# Issue 17's goals: (workload or "*" for every one, jitgrad column, peer, at most this ratio of the peer's time).
GOALS = (
    ("*", "jitgrad_compiled", "torch", 1.0),
    ("*", "jitgrad_compiled", "jax", 1.5),
    ("*", "jitgrad_compiled", "jitgrad", 1.0),
    ("K1", "jitgrad_compiled", "jax", 1.5),
    ("K2", "jitgrad_compiled", "jax", 1.0),
    ("K3", "jitgrad_compiled", "torch", 1.0),
)

__all__ = ["BY_KEY", "CASES", "GOALS", "Ops", "REFERENCE", "SUITE_BY_KEY", "WORKLOADS", "jax_ops", "torch_like_ops"]
