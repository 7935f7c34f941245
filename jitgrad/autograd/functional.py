"""``jitgrad.autograd.functional``: vjp, jvp, jacobian, hessian, hvp and vhp of plain functions.

All of them are built on reverse mode (``autograd.grad``): a JVP is the derivative of a VJP with
respect to its (linear) cotangent, which is what "the double-backward trick" refers to. Jacobians are
built a row at a time (no vectorisation).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..tensor import Tensor
from . import grad_mode
from .differentiate import grad as autograd_grad


def _as_tuple(value: Any) -> tuple[bool, tuple]:
    """Whether ``value`` was a tuple, and it as one."""
    if isinstance(value, (tuple, list)):
        return True, tuple(value)
    return False, (value,)


def _zeros_like(t: Tensor) -> Tensor:
    return Tensor._make(np.zeros(t._data.shape, t._data.dtype))


def _unpack(was_tuple: bool, values: tuple) -> Any:
    return values if was_tuple else values[0]


def _prepare(inputs: tuple, create_graph: bool) -> tuple[Tensor, ...]:
    """Fresh leaves that require grad, sharing the inputs' values (the inputs' own graphs are kept
    only with create_graph, as in PyTorch)."""
    prepared = []
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"The inputs given to the function must be Tensors, but input {i} is "
                            f"{type(t).__name__}")
        if create_graph and t.requires_grad:
            prepared.append(t.view(t.shape))
        else:
            prepared.append(Tensor._make(t._data, t.is_floating_point()))
    return tuple(prepared)


def _grads(outputs: tuple, inputs: tuple, seeds: Any, create_graph: bool, strict: bool, what: str) -> tuple:
    differentiable = [o for o in outputs if o.requires_grad]
    if not differentiable:
        if strict:
            raise RuntimeError(f"{what}: the output of the user-provided function does not require "
                               "gradients (strict=True)")
        return tuple(_zeros_like(t) for t in inputs)
    seeds = [s for o, s in zip(outputs, seeds) if o.requires_grad] if seeds is not None else None
    grads = autograd_grad(differentiable, list(inputs), seeds, create_graph=create_graph,
                          retain_graph=True, allow_unused=True)
    result = []
    for i, (g, t) in enumerate(zip(grads, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"{what}: the output of the user-provided function is independent of "
                                   f"input {i} (strict=True)")
            g = _zeros_like(t)
        result.append(g)
    return tuple(result)


def _check_v(v: tuple, like: tuple, name: str) -> None:
    if len(v) != len(like):
        raise RuntimeError(f"{name} has {len(v)} entries but there are {len(like)} tensors it pairs with")
    for i, (a, b) in enumerate(zip(v, like)):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"Mismatch in shape: entry {i} of {name} has shape {tuple(a.shape)} but the "
                               f"tensor it pairs with has shape {tuple(b.shape)}")


def _detached(values: tuple, create_graph: bool) -> tuple:
    return values if create_graph else tuple(v.detach() for v in values)


def vjp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), v^T J)``; ``v`` may be omitted for a function with a single-element output."""
    inputs_tuple, inputs = _as_tuple(inputs)
    with grad_mode.enable_grad():
        leaves = _prepare(inputs, create_graph)
        outputs_tuple, outputs = _as_tuple(func(*leaves))
        seeds = None
        if v is not None:
            _, seeds = _as_tuple(v)
            _check_v(seeds, outputs, "v")
        grads = _grads(outputs, leaves, seeds, create_graph, strict, "vjp")
    return _unpack(outputs_tuple, _detached(outputs, create_graph)), _unpack(inputs_tuple, grads)


def jvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), J v)``: the derivative of ``u -> u^T J`` along ``v``."""
    inputs_tuple, inputs = _as_tuple(inputs)
    with grad_mode.enable_grad():
        leaves = _prepare(inputs, create_graph)
        outputs_tuple, outputs = _as_tuple(func(*leaves))
        if v is None:
            if any(t._data.size != 1 for t in inputs):
                raise RuntimeError("The vector v can only be None if the input to the user-provided "
                                   "function is a single Tensor with a single element.")
            v = tuple(Tensor._make(np.ones(t._data.shape, t._data.dtype)) for t in inputs)
        _, v = _as_tuple(v)
        _check_v(v, inputs, "v")
        cotangents = tuple(Tensor._make(np.zeros(o._data.shape, o._data.dtype), True) for o in outputs)
        vjps = _grads(outputs, leaves, cotangents, True, strict, "jvp")
        linear = [g for g in vjps if g.requires_grad]
        if not linear:
            jvps = tuple(_zeros_like(o) for o in outputs)
        else:
            pairs = [(g, t) for g, t in zip(vjps, v) if g.requires_grad]
            jvps = autograd_grad([g for g, _ in pairs], list(cotangents), [t for _, t in pairs],
                                 create_graph=create_graph, allow_unused=True)
            jvps = tuple(j if j is not None else _zeros_like(o)
                         for j, o in zip(jvps, outputs))
    return _unpack(outputs_tuple, _detached(outputs, create_graph)), _unpack(outputs_tuple, jvps)


def jacobian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of each output w.r.t. each input, shaped ``output.shape + input.shape``; nested
    tuples ``[output][input]`` when either side is a tuple, as in PyTorch."""
    if strategy != "reverse-mode":
        raise NotImplementedError("jacobian: only strategy='reverse-mode' is available")
    inputs_tuple, inputs = _as_tuple(inputs)
    with grad_mode.enable_grad():
        leaves = _prepare(inputs, create_graph)
        outputs_tuple, outputs = _as_tuple(func(*leaves))
        blocks = []
        for out in outputs:
            rows: list[list[Tensor]] = [[] for _ in leaves]
            for k in range(out._data.size):
                seed = np.zeros(out._data.size, out._data.dtype)
                seed[k] = 1
                grads = _grads((out,), leaves, (Tensor._make(seed.reshape(out._data.shape)),),
                               create_graph, strict, "jacobian")
                for i, g in enumerate(grads):
                    rows[i].append(g)
            blocks.append(tuple(_stack_rows(r, out, t) for r, t in zip(rows, leaves)))
    if inputs_tuple and outputs_tuple:
        return tuple(blocks)
    if outputs_tuple:
        return tuple(b[0] for b in blocks)
    return blocks[0] if inputs_tuple else blocks[0][0]


def _stack_rows(rows: list[Tensor], out: Tensor, inp: Tensor) -> Tensor:
    from ..ops import reshape, stack
    shape = tuple(out._data.shape) + tuple(inp._data.shape)
    if not rows:
        return Tensor._make(np.zeros(shape, inp._data.dtype))
    return reshape(stack(rows), shape)


def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a scalar function: the Jacobian of its gradient."""
    inputs_tuple, inputs = _as_tuple(inputs)

    def gradient(*args):
        out = func(*args)
        if not isinstance(out, Tensor) or out._data.size != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor with a "
                               "single element")
        return _grads((out,), args, None, True, strict, "hessian")

    result = jacobian(gradient, inputs, create_graph=create_graph, strict=strict)
    return result if inputs_tuple else result[0]


def vhp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), v^T H)`` for a scalar ``func``."""
    inputs_tuple, inputs = _as_tuple(inputs)
    with grad_mode.enable_grad():
        leaves = _prepare(inputs, create_graph)
        out = func(*leaves)
        if not isinstance(out, Tensor) or out._data.size != 1:
            raise RuntimeError("The function given to vhp should return a single Tensor with a single element")
        grads = _grads((out,), leaves, None, True, strict, "vhp")
        _, v = _as_tuple(v if v is not None else tuple(Tensor._make(np.ones(t._data.shape, t._data.dtype))
                                                          for t in inputs))
        _check_v(v, inputs, "v")
        linked = [(g, t) for g, t in zip(grads, v) if g.requires_grad]
        if linked:
            products = autograd_grad([g for g, _ in linked], list(leaves), [t for _, t in linked],
                                     create_graph=create_graph, allow_unused=True)
        else:
            products = (None,) * len(leaves)
        products = tuple(p if p is not None else _zeros_like(t)
                         for p, t in zip(products, leaves))
    out = out if create_graph else out.detach()
    return out, _unpack(inputs_tuple, products)


def hvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), H v)``; the Hessian of a scalar function is symmetric, so this is ``vhp``."""
    return vhp(func, inputs, v, create_graph, strict)
