"""A line search that finds a step satisfying the strong Wolfe conditions, for ``LBFGS``
(``line_search_fn="strong_wolfe"``), with the bracketing and zoom phases and the cubic interpolation
of Nocedal & Wright (Numerical Optimization, algorithms 3.5 and 3.6) as PyTorch's ``lswolfe`` port
runs them, so that an LBFGS step takes the same trial steps as PyTorch's.

Eager only: every trial is a closure call whose loss and directional derivative are read as Python
numbers to choose the next trial.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ..tensor import Tensor

Evaluate = Callable[[float], "tuple[float, Tensor]"]  # step -> (loss, flat gradient) at x + step * d


def dot(a: Tensor, b: Tensor) -> float:
    """The inner product of two flat vectors, as a number."""
    return float((a * b).sum())


def cubic_minimum(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                  bounds: tuple[float, float] | None = None) -> float:
    """The minimizer of the cubic through ``(x1, f1)`` and ``(x2, f2)`` with slopes ``g1`` and
    ``g2``, kept within ``bounds`` (the two points by default); their middle where the cubic has no
    minimum."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    discriminant = d1 * d1 - g1 * g2
    if discriminant < 0:
        return (low + high) / 2.0
    d2 = math.sqrt(discriminant)
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, low), high)


@dataclass
class _Point:
    """A trial: its step, loss, flat gradient and directional derivative."""

    step: float
    loss: float
    grad: Tensor
    slope: float


@dataclass
class _Search:
    direction: Tensor
    evaluate: Evaluate
    evaluations: int = 0

    def at(self, step: float) -> _Point:
        loss, grad = self.evaluate(step)
        self.evaluations += 1
        return _Point(step, loss, grad, dot(grad, self.direction))


def strong_wolfe(evaluate: Evaluate, step: float, direction: Tensor, start: tuple[float, Tensor, float],
                 c1: float = 1e-4, c2: float = 0.9, tolerance_change: float = 1e-9,
                 max_ls: int = 25) -> tuple[float, Tensor, float, int]:
    """A step along ``direction`` from the start point (loss, flat gradient, directional derivative
    at step 0) with sufficient decrease (``c1``) and a flat enough slope (``c2``). Returns the loss,
    the flat gradient and the step found, and the number of evaluations."""
    origin = _Point(0.0, *start)
    search = _Search(direction, evaluate)
    scale = float(direction.abs().max())
    # no sufficient decrease (Armijo's condition fails), and a slope flat enough (the curvature condition)
    too_high = lambda point: point.loss > origin.loss + c1 * point.step * origin.slope  # noqa: E731
    flat = lambda point: abs(point.slope) <= -c2 * origin.slope  # noqa: E731

    # bracketing: grow the step until the interval [previous, current] must hold an acceptable one
    previous, current = origin, search.at(step)
    bracket, done, tries = None, False, 0
    while tries < max_ls:
        if too_high(current) or (tries > 1 and current.loss >= previous.loss):
            bracket = [previous, current]
            break
        if flat(current):
            bracket, done = [current], True
            break
        if current.slope >= 0:
            bracket = [previous, current]
            break
        low, high = current.step + 0.01 * (current.step - previous.step), current.step * 10
        trial = cubic_minimum(previous.step, previous.loss, previous.slope, current.step, current.loss,
                              current.slope, bounds=(low, high))
        previous, current = current, search.at(trial)
        tries += 1
    if tries == max_ls:
        bracket = [origin, current]

    # zoom: shrink the bracket around the acceptable step
    lowest = 0 if bracket[0].loss <= bracket[-1].loss else 1
    stalled = False
    while not done and tries < max_ls:
        a, b = bracket
        if abs(b.step - a.step) * scale < tolerance_change:
            break
        trial = cubic_minimum(a.step, a.loss, a.slope, b.step, b.loss, b.slope)
        left, right = min(a.step, b.step), max(a.step, b.step)
        margin = 0.1 * (right - left)
        if min(right - trial, trial - left) < margin:  # too near an end: move it inside, unless new
            if stalled or trial >= right or trial <= left:
                trial = right - margin if abs(trial - right) < abs(trial - left) else left + margin
                stalled = False
            else:
                stalled = True
        else:
            stalled = False
        point = search.at(trial)
        tries += 1
        highest = 1 - lowest
        if too_high(point) or point.loss >= bracket[lowest].loss:  # the new high end
            bracket[highest] = point
            lowest = 0 if bracket[0].loss <= bracket[1].loss else 1
        else:  # the new low end; the old low becomes the high one if the slope points past it
            if flat(point):
                done = True
            elif point.slope * (bracket[highest].step - bracket[lowest].step) >= 0:
                bracket[highest] = bracket[lowest]
            bracket[lowest] = point
    best = bracket[lowest]
    return best.loss, best.grad, best.step, search.evaluations


__all__ = ["cubic_minimum", "dot", "strong_wolfe"]
