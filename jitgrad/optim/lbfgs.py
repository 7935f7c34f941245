"""``LBFGS``: limited-memory BFGS over all the parameters as one flat vector, step for step as
PyTorch's ``torch.optim.LBFGS`` computes it (fixed steps or the strong Wolfe line search)."""
from __future__ import annotations

from typing import Any, Callable, Iterable

from ..autograd import enable_grad, no_grad
from ..factories import zeros
from ..ops import cat
from ..ops.registry import observed
from ..tensor import Tensor
from .line_search import dot, strong_wolfe
from .optimizer import Optimizer

_CURVATURE_FLOOR = 1e-10  # a pair (s, y) with y·s at most this is not remembered: no positive curvature


class LBFGS(Optimizer):
    """Each ``step(closure)`` runs up to ``max_iter`` iterations (``max_eval`` closure calls): the
    direction is the two-loop product of the inverse-Hessian estimate from the last ``history_size``
    pairs of steps and gradient changes with the negative gradient, the step ``lr`` (on the very
    first iteration ``min(1, 1 / |g|₁) lr``), or the one the strong Wolfe line search finds with
    ``line_search_fn="strong_wolfe"``. It stops early when the gradient's largest element is at most
    ``tolerance_grad`` or the step or the change of the loss is below ``tolerance_change``.

    Eager only: the closure's loss and the directions' products are read as Python numbers to
    decide each iteration, so a compiled function calling ``step`` runs that call eagerly. One
    parameter group, as in PyTorch; the state (``func_evals``, ``n_iter``, ``d``, ``t``,
    ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``, ``prev_flat_grad``, ``prev_loss``, ``al``) sits
    under the first parameter, PyTorch's layout, with the scalars as Python floats (PyTorch's are
    0-d tensors of the parameters' dtype: the same numbers in float64)."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float = 1, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9,
                 history_size: int = 100, line_search_fn: str | None = None) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, {"lr": lr, "max_iter": max_iter, "max_eval": max_eval,
                                  "tolerance_grad": tolerance_grad, "tolerance_change": tolerance_change,
                                  "history_size": history_size, "line_search_fn": line_search_fn})
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self) -> Tensor:
        return cat([zeros(p.numel(), dtype=p.dtype, device=p.device) if p.grad is None else p.grad.reshape(-1)
                    for p in self._params])

    def _move(self, step: float, direction: Tensor) -> None:
        """Every parameter ``+= step * direction`` (its slice of the flat vector)."""
        offset = 0
        for param in self._params:
            count = param.numel()
            param.add_(direction[offset:offset + count].reshape(tuple(param.shape)), alpha=step)
            offset += count

    def _direction(self, flat_grad: Tensor, state: dict[str, Any], history_size: int) -> Tensor:
        """Remembers the last step and gradient change (when their curvature is positive) and returns
        ``-H g`` by the two-loop recursion, ``H`` scaled by ``y·s / y·y`` of the newest pair."""
        change = flat_grad - state["prev_flat_grad"]
        step = state["d"] * state["t"]
        curvature = dot(change, step)
        dirs, steps, ro = state["old_dirs"], state["old_stps"], state["ro"]
        if curvature > _CURVATURE_FLOOR:
            if len(dirs) == history_size:
                del dirs[0], steps[0], ro[0]
            dirs.append(change)
            steps.append(step)
            ro.append(1.0 / curvature)
            state["H_diag"] = curvature / dot(change, change)
        al = state.setdefault("al", [None] * history_size)
        q = -flat_grad
        for i in range(len(dirs) - 1, -1, -1):
            al[i] = dot(steps[i], q) * ro[i]
            q = q - dirs[i] * al[i]
        r = q * state["H_diag"]
        for i in range(len(dirs)):
            r = r + steps[i] * (al[i] - dot(dirs[i], r) * ro[i])
        return r

    @no_grad()
    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Runs the iterations; ``closure`` clears the gradients, computes the loss, calls
        ``backward()`` and returns the loss (it runs with grad mode on). Returns the first loss."""
        if observed():   # every call: eager, said once, not traced again
            from ..ops.host_reads import TraceRefused
            raise TraceRefused("LBFGS.step() reads the loss and the search directions as numbers on the host "
                               "at each of its iterations, which a trace would keep as constants")
        if closure is None:
            raise RuntimeError("LBFGS.step() needs a closure that reevaluates the model and returns the loss")

        def evaluate() -> Any:
            with enable_grad():
                return closure()
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        first_loss = evaluate()
        loss, evaluations = float(first_loss), 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        optimal = float(flat_grad.abs().max()) <= tolerance_grad
        if optimal:
            return first_loss
        iterations = 0
        while iterations < max_iter:
            iterations += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                state.update(d=-flat_grad, old_dirs=[], old_stps=[], ro=[], H_diag=1)
            else:
                state["d"] = self._direction(flat_grad, state, group["history_size"])
            direction = state["d"]
            state["prev_flat_grad"], state["prev_loss"] = flat_grad.clone(), loss
            step = min(1.0, 1.0 / float(flat_grad.abs().sum())) * lr if state["n_iter"] == 1 else lr
            slope = dot(flat_grad, direction)
            if slope > -tolerance_change:  # not a descent direction any more
                state["t"] = step
                break
            if group["line_search_fn"] is not None:
                if group["line_search_fn"] != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                loss, flat_grad, step, calls = strong_wolfe(self._evaluator(evaluate, direction), step, direction,
                                                            (loss, flat_grad, slope), max_ls=max_eval - evaluations)
                self._move(step, direction)
                optimal = float(flat_grad.abs().max()) <= tolerance_grad
            else:
                self._move(step, direction)
                calls = 0
                if iterations != max_iter:  # the last iteration's loss is left for the next step
                    loss, calls = float(evaluate()), 1
                    flat_grad = self._flat_grad()
                    optimal = float(flat_grad.abs().max()) <= tolerance_grad
            state["t"] = step
            evaluations += calls
            state["func_evals"] += calls
            if iterations == max_iter or evaluations >= max_eval or optimal:
                break
            if float((direction * step).abs().max()) <= tolerance_change or \
                    abs(loss - state["prev_loss"]) < tolerance_change:
                break
        return first_loss

    def _evaluator(self, evaluate: Callable[[], Any], direction: Tensor) -> Callable[[float], tuple[float, Tensor]]:
        """The loss and flat gradient at ``x + step * direction``, the parameters put back after."""
        start = [param.clone() for param in self._params]

        def at(step: float) -> tuple[float, Tensor]:
            self._move(step, direction)
            loss = float(evaluate())
            flat_grad = self._flat_grad()
            for param, value in zip(self._params, start):
                param.copy_(value)
            return loss, flat_grad
        return at


__all__ = ["LBFGS"]
