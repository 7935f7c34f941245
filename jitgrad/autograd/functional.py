"""``jitgrad.autograd.functional``: vjp, jvp, jacobian, hessian, hvp and vhp of plain functions.

They are built on reverse mode (``autograd.grad``): a JVP is the derivative of a VJP with respect to
its (linear) cotangent, which is what "the double-backward trick" refers to. Jacobians are built a row
at a time, or with ``strategy="forward-mode"`` a column at a time with dual tensors (``forward_ad``);
``vectorize`` is accepted for PyTorch's signature and computes the same rows.

Return structures follow PyTorch's: an argument given as a Tensor gives back a Tensor and one given as
a tuple gives back a tuple, so a Jacobian or Hessian is a Tensor, a tuple, or a tuple of tuples
``[output][input]`` depending on which of the function's outputs and inputs were tuples. Only tuples
count: a list of inputs, ``v`` or outputs is refused with a ``TypeError``, as PyTorch refuses it, rather
than guessed at.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..tensor import Tensor
from . import forward_ad, grad_mode, provided
from .differentiate import grad as autograd_grad

STRATEGIES = ("reverse-mode", "forward-mode")


def _as_tuple(value: Any, what: str, fn: str) -> tuple[bool, tuple[Tensor, ...]]:
    """Whether ``value`` was a tuple, and it as one, every entry checked to be a Tensor."""
    was_tuple = isinstance(value, tuple)
    values = value if was_tuple else (value,)
    for i, v in enumerate(values):
        if not isinstance(v, Tensor):  # PyTorch's words
            where = f"the value at index {i}" if was_tuple else f"the given {what}"
            raise TypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors but {where} "
                            f"has type {type(v)}.")
    return was_tuple, values


def _unpack(values: tuple, was_tuple: bool) -> Any:
    """Undoes ``_as_tuple``: a single Tensor where the caller gave one."""
    return values if was_tuple else values[0]


def _unpack_blocks(blocks: tuple, outputs_tuple: bool, inputs_tuple: bool) -> Any:
    """Undoes ``_as_tuple`` on both sides of ``blocks[output][input]``."""
    if not inputs_tuple:
        blocks = tuple(row[0] for row in blocks)
    return _unpack(blocks, outputs_tuple)


def _zeros_like(t: Tensor) -> Tensor:
    return Tensor._make(np.zeros(t._data.shape, t._data.dtype))


def _ones_like(t: Tensor) -> Tensor:
    return Tensor._make(np.ones(t._data.shape, t._data.dtype))


def _prepare(inputs: tuple[Tensor, ...], create_graph: bool) -> tuple[Tensor, ...]:
    """Fresh tensors that require grad, sharing the inputs' values.

    New objects, so that a function reading an input through a closure is not mistaken for one
    reading its argument; the inputs' own graphs are kept only with create_graph, as in PyTorch. A
    view (a registry op) also carries the input's tangent, which forward-over-reverse needs."""
    return tuple(t.view(t.shape) if create_graph and t.requires_grad
                 else Tensor._make(t._data, t.is_floating_point()) for t in inputs)


def _checked_v(v: Any, like: tuple[Tensor, ...], like_tuple: bool, create_graph: bool, fn: str,
               paired_with: str) -> tuple[Tensor, ...]:
    """``v`` as a tuple checked against the tensors it pairs with; ones when it may be left out."""
    if v is None:
        if len(like) != 1 or like[0]._data.size != 1:
            condition = ("the user-provided function returns" if paired_with.startswith("output")
                         else f"the {paired_with} is")
            raise RuntimeError(f"The vector v can only be None if {condition} a single Tensor with a single "
                               "element.")
        return (_ones_like(like[0]),)
    _, v = _as_tuple(v, "v", fn)
    if len(v) != len(like):
        count = f"a tuple of {len(like)} Tensors" if like_tuple else "a single Tensor"
        raise RuntimeError(f"{fn}: v should be {count} (one per {paired_with}), but has {len(v)} entries")
    for i, (a, b) in enumerate(zip(v, like)):
        if a._data.shape != b._data.shape:
            entry = f"entry {i} of v" if like_tuple else "v"
            raise RuntimeError(f"{fn}: Mismatch in shape: {entry} has shape {tuple(a._data.shape)} but "
                               f"should have shape {tuple(b._data.shape)}")
    return v if create_graph else tuple(t.detach() for t in v)


def _check_outputs(outputs: tuple[Tensor, ...], strict: bool, fn: str) -> None:
    if not strict:
        return
    for i, o in enumerate(outputs):
        if not o.requires_grad:
            raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The "
                               "outputs must be computed in a differentiable manner from the input when running "
                               f"in strict mode ({fn}).")


def _reverse(outputs: tuple, inputs: tuple, seeds: tuple | None, create_graph: bool) -> tuple:
    """``autograd.grad`` of the outputs that require grad (None or non-differentiable ones are
    skipped); None for every input when none does."""
    seeds = seeds if seeds is not None else (None,) * len(outputs)
    pairs = [(o, s) for o, s in zip(outputs, seeds) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return autograd_grad([o for o, _ in pairs], list(inputs), [s for _, s in pairs],
                         create_graph=create_graph, retain_graph=True, allow_unused=True)


def _fill_zeros(grads: tuple, like: tuple[Tensor, ...], strict: bool, create_graph: bool,
                independent: str, constant: str) -> tuple[Tensor, ...]:
    """Zeros for the gradients that are None; with strict=True, an error instead (``independent``),
    and with create_graph too, an error for a gradient that does not depend on the inputs
    (``constant``): each message is formatted with the entry's index ``i``."""
    filled = []
    for i, (g, t) in enumerate(zip(grads, like)):
        if g is None:
            if strict:
                raise RuntimeError(independent.format(i=i) + "; strict=True does not allow it")
            g = _zeros_like(t)
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(constant.format(i=i) + "; strict=True with create_graph=True does not "
                               "allow it")
        filled.append(g)
    return tuple(filled)


def _detached(values: tuple, create_graph: bool) -> tuple:
    return values if create_graph else tuple(v.detach() for v in values)


def vjp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), v^T J)``; ``v`` may be omitted for a function with a single-element output."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
    with grad_mode.enable_grad():
        leaves = _prepare(inputs, create_graph)
        outputs_tuple, outputs = _as_tuple(func(*leaves), "outputs of the user-provided function", "vjp")
        _check_outputs(outputs, strict, "vjp")
        seeds = _checked_v(v, outputs, outputs_tuple, create_graph, "vjp",
                         "output of the user-provided function")
        grads = _fill_zeros(_reverse(outputs, leaves, seeds, create_graph), leaves, strict, create_graph,
                            "vjp: the outputs of the user-provided function are independent of input {i}",
                            "vjp: the Jacobian of the user-provided function is independent of input {i}")
    return _unpack(_detached(outputs, create_graph), outputs_tuple), _unpack(grads, inputs_tuple)


def jvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), J v)``: the derivative of ``u -> u^T J`` along ``v``."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
    with grad_mode.enable_grad():
        leaves = _prepare(inputs, create_graph)
        v = _checked_v(v, inputs, inputs_tuple, create_graph, "jvp", "input to the user-provided function")
        outputs_tuple, outputs = _as_tuple(func(*leaves), "outputs of the user-provided function", "jvp")
        _check_outputs(outputs, strict, "jvp")
        # u^T J is linear in u, so the value of u is irrelevant: zeros, which cannot make a NaN.
        cotangents = tuple(Tensor._make(np.zeros(o._data.shape, o._data.dtype), True) for o in outputs)
        vjps = _reverse(outputs, leaves, cotangents, True)
        if strict:
            for i, g in enumerate(vjps):
                if g is None:
                    raise RuntimeError(f"jvp: the outputs of the user-provided function are independent "
                                       f"of input {i}; strict=True does not allow it")
        jvps = _reverse(vjps, cotangents, v, create_graph)
    jvps = _fill_zeros(jvps, outputs, strict, create_graph,
                       "jvp: output {i} of the user-provided function does not depend on the inputs",
                       "jvp: the Jacobian of the user-provided function's output {i} is independent of "
                       "the inputs")
    return _unpack(_detached(outputs, create_graph), outputs_tuple), _unpack(jvps, outputs_tuple)


def jacobian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of each output w.r.t. each input, shaped ``output.shape + input.shape``.

    A Tensor when ``func`` takes and returns Tensors; a tuple over the inputs (outputs) when only the
    inputs (outputs) are a tuple; ``result[output][input]`` when both are. ``strategy="forward-mode"``
    builds it a column at a time with dual tensors, with or without ``vectorize`` (PyTorch needs
    ``vectorize=True`` there), and, as in PyTorch, neither with ``create_graph`` nor with ``strict``."""
    _check_strategy(strategy, "strategy", "jacobian")
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("jacobian: strategy='forward-mode' cannot create_graph; use "
                                      "strategy='reverse-mode' or create_graph=False")
        if strict:
            raise RuntimeError("jacobian: strategy='forward-mode' has no strict mode; use "
                               "strategy='reverse-mode' or strict=False")
        return _forward_jacobian(func, inputs)
    if vectorize and strict:
        raise RuntimeError("jacobian: vectorize=True has no strict mode (as in PyTorch); use strict=False "
                           "or vectorize=False")
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    with grad_mode.enable_grad():
        leaves = _prepare(inputs, create_graph)
        outputs_tuple, outputs = _as_tuple(func(*leaves), "outputs of the user-provided function",
                                           "jacobian")
        _check_outputs(outputs, strict, "jacobian")
        blocks = []
        for i, out in enumerate(outputs):
            rows: list[list[Tensor]] = [[] for _ in leaves]
            for k in range(out._data.size):
                seed = np.zeros(out._data.size, out._data.dtype)
                seed[k] = 1
                grads = _fill_zeros(
                    _reverse((out,), leaves, (Tensor._make(seed.reshape(out._data.shape)),), create_graph),
                    leaves, strict, create_graph,
                    f"jacobian: output {i} of the user-provided function is independent of input {{i}}",
                    "jacobian: the Jacobian of the user-provided function is independent of input {i}")
                for row, g in zip(rows, grads):
                    row.append(g)
            blocks.append(tuple(_stack_rows(r, out, t) for r, t in zip(rows, leaves)))
    return _unpack_blocks(_detached_blocks(blocks, create_graph), outputs_tuple, inputs_tuple)


def _check_strategy(strategy: str, name: str, fn: str) -> None:
    if strategy not in STRATEGIES:
        raise ValueError(f"{fn}: {name} must be 'reverse-mode' or 'forward-mode', not {strategy!r}")


def _detached_blocks(blocks: list, create_graph: bool) -> tuple:
    return tuple(_detached(row, create_graph) for row in blocks)


def _stack_rows(rows: list[Tensor], out: Tensor, inp: Tensor) -> Tensor:
    shape = tuple(out._data.shape) + tuple(inp._data.shape)
    if not rows:
        return Tensor._make(np.zeros(shape, inp._data.dtype))
    return provided.stack(rows).reshape(shape)


def _forward_jacobian(func: Callable[..., Any], inputs: Any) -> Any:
    """The Jacobian a column at a time: one forward pass per input element, its tangent a one-hot.

    Inputs are used as given, so when they require grad the function's reverse mode (a gradient it
    computes, as hessian's forward-over-reverse does) sees the tangents too."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    columns: list[list[list[np.ndarray]]] = [[] for _ in inputs]   # [input][element][output]
    outputs_tuple, outputs = False, ()
    # Grad mode on, so that the duals of inputs that require grad are views a reverse pass inside
    # ``func`` differentiates (forward-over-reverse), whatever mode the caller is in.
    with grad_mode.enable_grad(), forward_ad.dual_level():
        for i, x in enumerate(inputs):
            for k in range(x._data.size):
                tangent = np.zeros(x._data.size, x._data.dtype)
                tangent[k] = 1
                args = list(inputs)
                args[i] = forward_ad.make_dual(x, Tensor._make(tangent.reshape(x._data.shape)))
                outputs_tuple, outputs = _as_tuple(func(*args), "outputs of the user-provided function",
                                                   "jacobian")
                columns[i].append([_tangent_array(o) for o in outputs])
    if not any(columns):   # every input is empty: run once for the outputs' shapes
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                           "jacobian")
    blocks = []
    for j, out in enumerate(outputs):
        row = []
        for x, cols in zip(inputs, columns):
            shape = tuple(out._data.shape) + tuple(x._data.shape)
            block = (np.stack([c[j] for c in cols], axis=-1).reshape(shape) if cols
                     else np.zeros(shape, out._data.dtype))
            row.append(Tensor._make(block))
        blocks.append(tuple(row))
    return _unpack_blocks(tuple(blocks), outputs_tuple, inputs_tuple)


def _tangent_array(out: Tensor) -> np.ndarray:
    tangent = forward_ad.unpack_dual(out).tangent
    return tangent._data if tangent is not None else np.zeros(out._data.shape, out._data.dtype)


def _scalar_output(value: Any, strict: bool, fn: str) -> Tensor:
    """``value`` checked to be the single single-element Tensor a second derivative is taken of."""
    outputs_tuple, outputs = _as_tuple(value, "outputs of the user-provided function", fn)
    _check_outputs(outputs, strict, fn)
    if outputs_tuple:
        raise RuntimeError(f"The function given to {fn} should return a single Tensor, not a tuple")
    (out,) = outputs
    if out._data.size != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn} should contain a single "
                           f"element, but it has shape {tuple(out._data.shape)}")
    return out


def _check_first_derivatives(grads: tuple, strict: bool, fn: str) -> None:
    """With strict=True, each gradient must depend on the inputs, or there is no second derivative."""
    if not strict:
        return
    for i, g in enumerate(grads):
        if g is None:
            raise RuntimeError(f"{fn}: the output of the user-provided function is independent of input "
                               f"{i}; strict=True does not allow it")
        if not g.requires_grad:
            raise RuntimeError(f"{fn}: the gradient of the user-provided function with respect to input "
                               f"{i} does not depend on the inputs (is the function linear?); strict=True "
                               "needs a function that is twice differentiable")


def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a scalar function: the Jacobian of its gradient. A Tensor of shape
    ``input.shape * 2`` for a Tensor input, ``result[i][j]`` for a tuple of inputs.
    ``outer_jacobian_strategy="forward-mode"`` is forward-over-reverse."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    _check_strategy(outer_jacobian_strategy, "outer_jacobian_strategy", "hessian")
    forward = outer_jacobian_strategy == "forward-mode"
    if forward:
        # Inputs that require grad: their duals are views the inner reverse pass differentiates.
        inputs = tuple(Tensor._make(t._data, t.is_floating_point()) for t in inputs)

    def gradient(*args: Tensor) -> tuple[Tensor, ...]:
        with grad_mode.enable_grad():
            leaves = _prepare(args, True)
            out = _scalar_output(func(*leaves), strict, "hessian")
            grads = _reverse((out,), leaves, None, True)
        _check_first_derivatives(grads, strict, "hessian")
        return tuple(g if g is not None else _zeros_like(t) for g, t in zip(grads, leaves))

    blocks = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                      strategy=outer_jacobian_strategy)
    return _unpack_blocks(blocks, inputs_tuple, inputs_tuple)


def _second_derivatives(func: Callable[..., Any], inputs: Any, v: Any, strict: bool, create_graph: bool,
                        fn: str) -> tuple[bool, Tensor, tuple, tuple, tuple]:
    """What vhp and hvp share: the leaves, ``func``'s output, its gradient (with a graph) and ``v``."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn)
    leaves = _prepare(inputs, create_graph)
    v = _checked_v(v, inputs, inputs_tuple, create_graph, fn, "input to the user-provided function")
    out = _scalar_output(func(*leaves), strict, fn)
    grads = _reverse((out,), leaves, None, True)
    _check_first_derivatives(grads, strict, fn)
    return inputs_tuple, out, leaves, grads, v


def vhp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), v^T H)`` for a scalar ``func``."""
    with grad_mode.enable_grad():
        inputs_tuple, out, leaves, grads, v = _second_derivatives(func, inputs, v, strict, create_graph,
                                                                  "vhp")
        products = _fill_zeros(_reverse(grads, leaves, v, create_graph), leaves, strict, create_graph,
                               "vhp: the gradient of the user-provided function is independent of input {i}",
                               "vhp: the Hessian of the user-provided function is independent of input {i}")
    return _detached((out,), create_graph)[0], _unpack(products, inputs_tuple)


def hvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), H v)`` for a scalar ``func``: the derivative of ``u -> H u`` (a vhp, linear
    in ``u``) along ``v``, by the double-backward trick."""
    with grad_mode.enable_grad():
        inputs_tuple, out, leaves, grads, v = _second_derivatives(func, inputs, v, strict, create_graph,
                                                                  "hvp")
        cotangents = tuple(Tensor._make(np.zeros(t._data.shape, t._data.dtype), True) for t in leaves)
        double_back = _reverse(grads, leaves, cotangents, True)
        products = _fill_zeros(_reverse(double_back, cotangents, v, create_graph), leaves, strict,
                               create_graph,
                               "hvp: the Hessian of the user-provided function is independent of entry {i} "
                               "of the cotangent",
                               "hvp: the Hessian of the user-provided function is independent of input {i}")
    return _detached((out,), create_graph)[0], _unpack(products, inputs_tuple)
