"""``gradcheck`` and ``gradgradcheck``: analytical Jacobians against central finite differences.

PyTorch's signatures, so a test written for ``torch.autograd.gradcheck`` runs unchanged. The
analytical Jacobian is built a row at a time with ``autograd.grad`` (one-hot output gradients); the
numerical one a column at a time by nudging each input element by ``eps``. CUDA inputs are checked
too: values are read through host copies, a CUDA input is nudged on the host and copied back, and the
seeds go to each output's device.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..device import to_device, to_host
from ..tensor import Tensor
from .differentiate import grad as autograd_grad


class GradcheckError(RuntimeError):
    """The analytical and numerical gradients disagree (or backward mishandles a zero gradient)."""


def _as_tuple(value: Any) -> tuple:
    return value if isinstance(value, tuple) else tuple(value) if isinstance(value, list) else (value,)


def _differentiable(inputs: tuple) -> list[int]:
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _outputs(func: Callable, inputs: tuple) -> tuple[Tensor, ...]:
    return tuple(o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor))


def _values(tensor: Tensor) -> np.ndarray:
    """A tensor's values as float64 numbers on the host, flat."""
    return to_host(tensor._data).astype(np.float64).ravel()


def _like(tensor: Tensor, values: np.ndarray, requires_grad: bool = False) -> Tensor:
    """A tensor of ``values`` on ``tensor``'s device."""
    on_host = type(tensor._data) is np.ndarray
    return Tensor._make(values if on_host else to_device(values), requires_grad)


def _nudged(tensor: Tensor, k: int, value: float) -> None:
    """Sets element ``k`` of ``tensor`` (in place, on its device)."""
    if type(tensor._data) is np.ndarray:
        tensor._data.flat[k] = value
    else:
        host = to_host(tensor._data)
        host.flat[k] = value
        tensor._data = to_device(host)


def _numerical_jacobians(func: Callable, inputs: tuple, eps: float) -> list[list[np.ndarray]]:
    """``[input][output]`` Jacobians of shape (output numel, input numel). ``func`` runs in the caller's
    grad mode: it may differentiate something itself."""
    jacobians = []
    for i in _differentiable(inputs):
        tensor = inputs[i]
        originals = to_host(tensor._data).ravel().copy()
        columns: list[list[np.ndarray]] = []
        for k in range(originals.size):
            original = originals[k]
            _nudged(tensor, k, original + eps)
            plus = [_values(o).copy() for o in _outputs(func, inputs)]
            _nudged(tensor, k, original - eps)
            minus = [_values(o) for o in _outputs(func, inputs)]
            _nudged(tensor, k, original)
            columns.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
        n_outputs = len(_outputs(func, inputs))
        jacobians.append([np.stack([c[o] for c in columns], axis=1) if columns
                          else np.zeros((0, 0)) for o in range(n_outputs)])
    return jacobians


def _analytical_jacobians(func: Callable, inputs: tuple) -> list[list[np.ndarray]]:
    wanted = [inputs[i] for i in _differentiable(inputs)]
    outputs = _outputs(func, inputs)
    jacobians = [[np.zeros((o._data.size, t._data.size)) for o in outputs] for t in wanted]
    for o_index, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        for row in range(out._data.size):
            seed = np.zeros(out._data.size, out._data.dtype)
            seed[row] = 1
            grads = autograd_grad(out, wanted, _like(out, seed.reshape(out._data.shape)),
                                  retain_graph=True, allow_unused=True)
            for i_index, g in enumerate(grads):
                if g is not None:
                    jacobians[i_index][o_index][row] = _values(g)
    return jacobians


def _fail(message: str, raise_exception: bool) -> bool:
    if raise_exception:
        raise GradcheckError(message)
    return False


def gradcheck(func: Callable[..., Any], inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, check_undefined_grad: bool = True,
              nondet_tol: float = 0.0, fast_mode: bool = False) -> bool:
    """Whether ``func``'s gradients w.r.t. the inputs that require grad match finite differences.

    Use float64 inputs: float32 finite differences are too coarse for these tolerances. On failure,
    the error names the output, the input and the first element that differs. ``fast_mode`` is taken
    for PyTorch's signature and changes nothing: the whole Jacobians are compared, where PyTorch's fast
    mode compares a random projection of them (the whole check is the stricter one)."""
    inputs = _as_tuple(inputs)
    if not _differentiable(inputs):
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of "
                         "them have requires_grad=True.")
    numerical = _numerical_jacobians(func, inputs, eps)
    analytical = _analytical_jacobians(func, inputs)
    for i_index, (num_row, ana_row) in enumerate(zip(numerical, analytical)):
        for o_index, (num, ana) in enumerate(zip(num_row, ana_row)):
            bad = ~np.isclose(ana, num, rtol=rtol, atol=atol + nondet_tol)
            if bad.any():
                row, col = (int(k) for k in np.argwhere(bad)[0])
                return _fail(f"Jacobian mismatch for output {o_index} with respect to input {i_index},\n"
                             f"numerical:{num}\nanalytical:{ana}\nfirst mismatch: d output[{row}] / d input"
                             f"[{col}] is {float(ana[row, col])!r} analytically but {float(num[row, col])!r} "
                             "numerically",
                             raise_exception)
    if check_undefined_grad and not _check_zero_grads(func, inputs):
        return _fail("Backward is not reentrant or mishandles an all-zero gradient: with zero output "
                     "gradients some input gradient is not zero", raise_exception)
    return True


def _check_zero_grads(func: Callable, inputs: tuple) -> bool:
    """Backward given zero output gradients must give zero input gradients (or none)."""
    outputs = [o for o in _outputs(func, inputs) if o.requires_grad]
    if not outputs:
        return True
    zeros = [_like(o, np.zeros(o._data.shape, o._data.dtype)) for o in outputs]
    wanted = [inputs[i] for i in _differentiable(inputs)]
    grads = autograd_grad(outputs, wanted, zeros, allow_unused=True)
    return all(g is None or not np.any(to_host(g._data)) for g in grads)


def gradgradcheck(func: Callable[..., Any], inputs: Any, grad_outputs: Any = None, *, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, fast_mode: bool = False) -> bool:
    """``gradcheck`` of the first-order gradient: checks the derivatives that ``create_graph=True``
    records. ``grad_outputs`` defaults to random tensors that require grad.
    ``gen_non_contig_grad_outputs`` and ``fast_mode`` are accepted for PyTorch's signature and change
    nothing: no jitgrad op depends on memory layout, and the whole Jacobians are compared."""
    inputs = _as_tuple(inputs)
    outputs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(_like(o, rng.standard_normal(o._data.shape).astype(o._data.dtype), True)
                             for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n_inputs = len(inputs)

    def first_order(*values):
        args, seeds = values[:n_inputs], values[n_inputs:]
        outs = [o for o in _outputs(func, args) if o.requires_grad]
        wanted = [args[i] for i in _differentiable(args)]
        grads = autograd_grad(outs, wanted, list(seeds[:len(outs)]), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_order, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, check_undefined_grad=check_undefined_grad,
                     nondet_tol=nondet_tol)
