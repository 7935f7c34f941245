"""The functions users call for the ops of one or two inputs: one frame from the call to the node.

``OpDef.__call__`` takes any call: a list of tensors, a device, a tracer watching, forward mode, an
inference tensor. Most calls in a training step are none of that: a tensor and a tensor or a number,
grad mode on and nothing watching, and at 16 elements W1's forward was mostly the general path's
dispatch and recording (an op's numpy call is 4,200 instructions; its jitgrad call with recording
was 27,500). A caller here is a plain function (a method of ``Tensor`` binds without the op's
``__get__``, and a function call costs half an instance's ``__call__``) that tests for the common
call at once (``thread_settings.all_default``: grad mode on, no inference mode, tracer or
saved-tensor hooks in any thread) and hands anything else to ``OpDef.__call__``, unchanged.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..autograd.recording import recorder
from ..device import usage as _devices
from ..tensor import Tensor
from ..thread_settings import departures as _departures
from .registry import OpDef, _dual, _op_error, finish_call

_NUMBERS = (float, int, bool)
_ABSENT = object()
_new = object.__new__


def caller(op: OpDef) -> Callable[..., Any]:
    """What users call for ``op``: a caller of its common calls, or the op itself where it has none
    (variadic and view ops, and ops of more inputs)."""
    if op.variadic or op.view or len(op.inputs) not in (1, 2):
        return op
    call = _one_input(op) if len(op.inputs) == 1 else _two_inputs(op)
    call.__name__ = call.__qualname__ = op.name
    call.__doc__ = f"The op ``{op.name}`` (``jitgrad.ops.registry.REGISTRY[{op.name!r}]``)."
    return call


def _one_input(op: OpDef) -> Callable[..., Any]:
    def call(a, *rest, **attrs):
        if rest or _departures.count or _devices.active or _dual.level is not None or not isinstance(a, Tensor):
            return OpDef.__call__(op, a, *rest, **attrs)
        try:
            out = op.forward(a._data, **attrs) if attrs else op.forward(a._data)
        except (ValueError, IndexError, TypeError) as error:
            raise _op_error(op, (a,), attrs, error) from error
        if type(out) is not np.ndarray:
            if not isinstance(out, np.generic):
                return finish_call(op, (a,), (a,), attrs, out, a._requires_grad)
            out = np.asarray(out)  # a full reduction's numpy scalar, as a 0-d tensor's storage
        t = _new(Tensor)
        t._data = out
        t._requires_grad = False
        t._grad = t._grad_fn = t._hooks = t._grad_accumulator = t._version_counter = t._view = None
        t._post_accumulate_grad_hooks = None
        t._output_nr = 0
        t._retains_grad = t._is_inference = False
        if a._requires_grad and op.derivatives and out.dtype.kind == "f":
            if op.backward_class is None:
                recorder(op.node_class((a,), attrs), op, 1)(a, attrs, t)
            else:
                fixed = op.fixed_recorder
                if fixed is None:
                    fixed = op.fixed_recorder = recorder(op.backward_class, op, 1)
                fixed(a, attrs, t)
        return t
    return call


def _two_inputs(op: OpDef) -> Callable[..., Any]:
    def call(a, b=_ABSENT, *rest, **attrs):
        if rest or b is _ABSENT or _departures.count or _devices.active or _dual.level is not None:
            return OpDef.__call__(op, a, *rest, **attrs) if b is _ABSENT else OpDef.__call__(op, a, b, *rest, **attrs)
        if isinstance(a, Tensor):
            x, requires_grad = a._data, a._requires_grad
            if isinstance(b, Tensor):
                y, requires_grad = b._data, requires_grad or b._requires_grad
            elif type(b) in _NUMBERS:
                y = b
            else:
                return OpDef.__call__(op, a, b, **attrs)
        elif type(a) in _NUMBERS and isinstance(b, Tensor):
            x, y, requires_grad = a, b._data, b._requires_grad
        else:
            return OpDef.__call__(op, a, b, **attrs)
        try:
            out = op.forward(x, y, **attrs) if attrs else op.forward(x, y)
        except (ValueError, IndexError, TypeError) as error:
            raise _op_error(op, (a, b), attrs, error) from error
        if type(out) is not np.ndarray:
            if not isinstance(out, np.generic):
                return finish_call(op, (a, b), (a, b), attrs, out, requires_grad)
            out = np.asarray(out)
        t = _new(Tensor)
        t._data = out
        t._requires_grad = False
        t._grad = t._grad_fn = t._hooks = t._grad_accumulator = t._version_counter = t._view = None
        t._post_accumulate_grad_hooks = None
        t._output_nr = 0
        t._retains_grad = t._is_inference = False
        if requires_grad and op.derivatives and out.dtype.kind == "f":
            if op.backward_class is None:
                recorder(op.node_class((a, b), attrs), op, 2)(a, b, attrs, t)
            else:
                fixed = op.fixed_recorder
                if fixed is None:
                    fixed = op.fixed_recorder = recorder(op.backward_class, op, 2)
                fixed(a, b, attrs, t)
        return t
    return call


__all__ = ["caller"]
