"""Forward-mode automatic differentiation: dual tensors whose tangent rides along every op.

Inside ``dual_level()``, ``make_dual(x, v)`` gives a tensor equal to ``x`` whose tangent is ``v``. Every
registry op run on a tensor with a tangent computes the tangent of its output with the op's JVP rule
(``jvp=`` in its ``defop``), so ``unpack_dual(f(make_dual(x, v))).tangent`` is the Jacobian-vector
product ``J_f(x) @ v``, in the same pass as ``f(x)`` itself.

A JVP rule names what it reads through its parameters, as a derivative formula does: ``<input>_t`` (that
input's tangent, **None when it has none**, a list for a variadic input), ``result``/``results``, an
input by its name, ``<input>_shape`` and the call's attributes. It returns the output's tangent (a tuple
for ops with several outputs, None for an output without one) at whatever broadcast shape and dtype it
computes: the tangent is expanded and cast to the output's in one place, here, as the engine sums
gradients back to an input's shape.

Rules are written in jitgrad ops and run with propagation suspended (a rule's own ops compute no
tangents), so a tangent is a plain tensor; when the primals require grad the rule's ops record the
backward graph, and reverse mode through a JVP (``grad`` of a tangent) needs nothing more.

Tangents live in the level, keyed by the tensor's id under a weak reference whose callback drops the
entry when the tensor dies, not in ``Tensor``'s slots: ``Tensor.__eq__`` is elementwise, which rules out
a ``WeakKeyDictionary``. Only one level is open at a time, process-wide, as in PyTorch; ``OpDef.__call__``
pays one attribute read (``state.level is not None``) per op when none is open.
"""
from __future__ import annotations

import functools
import threading
import weakref
from contextlib import contextmanager
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import numpy as np

from ..tensor import Tensor

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal, and the tangent (None when there is none)."""

    primal: Tensor
    tangent: Tensor | None


class _DualLevel:
    """The tangents of one level, by tensor id; a tensor's entry goes when the tensor does."""

    __slots__ = ("index", "_tangents", "_node_outputs")

    def __init__(self, index: int) -> None:
        self.index = index
        self._tangents: dict[int, tuple[weakref.ref, Tensor]] = {}
        # Tangents by (grad_fn, output_nr) too: a backward run inside the level rebuilds a node's saved
        # output as a new tensor (the original may be gone) that must carry the same tangent.
        self._node_outputs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def get(self, tensor: Any) -> Tensor | None:
        entry = self._tangents.get(id(tensor))
        if entry is None or entry[0]() is not tensor:
            return None
        return entry[1]

    def set(self, tensor: Tensor, tangent: Tensor) -> None:
        key, tangents = id(tensor), self._tangents

        def drop(ref: weakref.ref) -> None:
            if tangents.get(key, (None,))[0] is ref:
                del tangents[key]
        tangents[key] = (weakref.ref(tensor, drop), tangent)
        if tensor._grad_fn is not None:
            self._node_outputs.setdefault(tensor._grad_fn, {})[tensor._output_nr] = tangent

    def forget(self, tensor: Tensor) -> None:
        self._tangents.pop(id(tensor), None)

    def output_tangent(self, node: Any, output_nr: int) -> Tensor | None:
        """The tangent output ``output_nr`` of ``node``'s forward op had."""
        return self._node_outputs.get(node, {}).get(output_nr)

    def clear(self) -> None:
        self._tangents.clear()
        self._node_outputs.clear()


class _State:
    """The open dual level, or None. Process-wide, like PyTorch's: a tensor made dual in one thread is
    dual in all of them."""

    __slots__ = ("level",)

    def __init__(self) -> None:
        self.level: _DualLevel | None = None


class _Suspended(threading.local):
    """Set while this thread runs a JVP rule, whose own ops must not compute tangents."""

    active = False


state = _State()
_suspended = _Suspended()


# ---- levels -------------------------------------------------------------------------------------------
def enter_dual_level() -> int:
    """Opens a dual level and returns its index (always 0: only one level may be open)."""
    if state.level is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    state.level = _DualLevel(0)
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Closes the open level; every tangent made in it is forgotten."""
    current = _current_level(level, "exit_dual_level")
    current.clear()
    state.level = None


class dual_level:
    """``with dual_level():`` opens a dual level for the block (``as`` gives its index); also a decorator."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: object) -> None:
        exit_dual_level()

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with dual_level():
                return fn(*args, **kwargs)
        return wrapper


def _current_level(level: int | None, caller: str) -> _DualLevel:
    current = state.level
    if current is None:
        if caller == "make_dual":  # PyTorch's words
            raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                               "enter_dual_level() first.")
        raise RuntimeError(f"{caller}: no dual level is open; enter one with "
                           "jitgrad.autograd.forward_ad.dual_level() first")
    if level is not None and level != current.index:
        raise RuntimeError(f"{caller}: level {level} is not the open dual level ({current.index})")
    return current


# ---- dual tensors -------------------------------------------------------------------------------------
def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A tensor equal to ``tensor`` whose tangent is ``tangent``, for the ops that follow.

    The dual is a view of ``tensor`` for reverse mode (``ViewBackward0``, as in PyTorch), so gradients
    still flow back to ``tensor``; ``tangent`` is kept as given, cast to ``tensor``'s dtype if needed."""
    current = _current_level(level, "make_dual")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError(f"make_dual expects two Tensors, got {type(tensor).__name__} and "
                        f"{type(tangent).__name__}")
    if tensor._data.dtype.kind != "f":
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype!r}")
    if tangent._data.dtype.kind != "f":
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype!r}")
    if tangent._data.shape != tensor._data.shape:
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the "
                           f"original Tensor, this is not supported. Tensor is of size "
                           f"{list(tensor._data.shape)} while the given forward gradient is of size "
                           f"{list(tangent._data.shape)}.")
    if current.get(tensor) is not None:
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward gradient at "
                           f"the same level {current.index} is not supported.")
    if tangent._data.dtype != tensor._data.dtype:
        tangent = Tensor._make(tangent._data.astype(tensor._data.dtype))
    dual = _alias(tensor)
    current.set(dual, tangent)
    return dual


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor``. The primal is a view without the tangent (the tensor itself
    when it has none); the tangent is None outside a dual level or when the tensor has none."""
    current = state.level
    if current is None:
        return UnpackedDualTensor(tensor, None)
    if level is not None and level != current.index:
        raise RuntimeError(f"unpack_dual: level {level} is not the open dual level ({current.index})")
    tangent = current.get(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(_alias(tensor), tangent)


def _alias(tensor: Tensor) -> Tensor:
    """A new tensor on ``tensor``'s array, its view in reverse mode, carrying no tangent."""
    with suspended():
        return tensor.reshape(tensor._data.shape)


@contextmanager
def suspended() -> Iterator[None]:
    """No tangents are computed inside (a custom Function's forward, whose tangent is its ``jvp``'s)."""
    _suspended.active, previous = True, _suspended.active
    try:
        yield
    finally:
        _suspended.active = previous


# ---- propagation --------------------------------------------------------------------------------------
def input_tangents(inputs: Sequence[Any]) -> list[Tensor | None] | None:
    """The tangent of each input at the open level, or None when none has one (nothing to propagate).

    With ``run_jvp`` this is all a caller outside the registry (a custom ``Function``) needs."""
    current = state.level
    if current is None or _suspended.active:
        return None
    tangents = [current.get(t) if isinstance(t, Tensor) else None for t in inputs]
    for t in tangents:
        if t is not None:
            return tangents
    return None


def run_jvp(rule: Callable[[], Any], outputs: Sequence[Tensor]) -> None:
    """Runs ``rule()`` with propagation suspended and gives each float output its tangent, expanded to
    the output's shape and cast to its dtype: the one place tangents are broadcast."""
    current = state.level
    _suspended.active, previous = True, _suspended.active
    try:
        tangents = rule()
        if not isinstance(tangents, (tuple, list)):
            tangents = (tangents,)
        if len(tangents) != len(outputs):
            raise RuntimeError(f"a JVP rule returned {len(tangents)} tangents for {len(outputs)} outputs")
        for out, tangent in zip(outputs, tangents):
            if tangent is not None and out._data.dtype.kind == "f":
                current.set(out, _fit(tangent, out))
    finally:
        _suspended.active = previous


def carry_tangent(source: Tensor, target: Tensor) -> None:
    """``target`` takes ``source``'s tangent, or loses its own when ``source`` has none. For in-place
    ops, which run out of place and write the result back: the snapshot of the old value takes the
    tensor's tangent, then the tensor takes the result's, so that ``x.mul_(2)`` doubles it."""
    current = state.level
    if current is None:
        return
    tangent = current.get(source)
    if tangent is None:
        current.forget(target)
    else:
        current.set(target, tangent)


def _fit(tangent: Any, out: Tensor) -> Tensor:
    if not isinstance(tangent, Tensor):
        tangent = Tensor._make(np.asarray(tangent, dtype=out._data.dtype))
    if tangent._data.shape != out._data.shape:
        tangent = tangent.expand(out._data.shape)
    if tangent._data.dtype != out._data.dtype:
        tangent = tangent.to(out._data.dtype)
    return tangent


def propagate(op: Any, args: tuple, attrs: dict, outputs: tuple[Tensor, ...]) -> None:
    """Called by ``OpDef.__call__`` while a level is open: runs the op's JVP rule when an input has a
    tangent. A differentiable op without a rule refuses, rather than give a tangent that is silently
    missing; a non-differentiable one (``eq``, ``argmax``) gives its outputs none."""
    tangents = input_tangents(args[0] if op.variadic else args)
    if tangents is None:
        return
    if op.jvp is None:
        if not op.differentiable:
            return
        raise NotImplementedError(f"Trying to use forward AD with {op.name} that does not support it: its "
                                  "registry entry declares no jvp rule")
    arguments = _jvp_arguments(op, args, attrs, outputs, tangents)
    run_jvp(lambda: op.jvp(*arguments), outputs)


def _jvp_arguments(op: Any, args: tuple, attrs: dict, outputs: tuple, tangents: list) -> list:
    values = []
    for param in op.jvp_reads:
        if param.endswith("_t") and param[:-2] in op.inputs:
            values.append(tangents if op.variadic else tangents[op.inputs.index(param[:-2])])
        elif param == "result":
            values.append(outputs[0])
        elif param == "results":
            values.append(outputs)
        elif param in op.inputs:
            values.append(args[op.inputs.index(param)])
        elif param.endswith("_shape") and param[:-6] in op.inputs:
            value = args[op.inputs.index(param[:-6])]
            values.append([np.shape(_array(t)) for t in value] if op.variadic else np.shape(_array(value)))
        elif param in attrs:
            values.append(attrs[param])
        else:
            raise TypeError(f"op {op.name}: its jvp rule reads {param!r}, which is neither a tangent, an "
                            "input, an attribute of this call nor result(s)")
    return values


def _array(value: Any) -> Any:
    return value._data if isinstance(value, Tensor) else value


# ---- helpers for writing rules ------------------------------------------------------------------------
def tangent_sum(*terms: Tensor | None) -> Tensor | None:
    """The sum of the terms that are not None: a rule's term is None when the tangent it scales is."""
    total = None
    for term in terms:
        if term is not None:
            total = term if total is None else total + term
    return total


def tangent_or_zeros(tangent: Tensor | None, like: Any) -> Tensor:
    """``tangent``, or zeros shaped like the input ``like`` where that input has none (``cat``)."""
    if tangent is not None:
        return tangent
    data = like._data if isinstance(like, Tensor) else np.asarray(like)
    return Tensor._make(np.zeros(data.shape, data.dtype))
