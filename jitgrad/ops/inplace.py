"""In-place ops (``add_``, ``x += y``, ``x[i] = v``...): the out-of-place op's result written back.

Autograd sees an in-place op as its out-of-place op followed by a rebase: the tensor's ``grad_fn``
becomes the new node, whose input edge is the tensor's old history (recorded through a snapshot of
the old value, so the new node never reads overwritten memory). The version counter is bumped, so a
node that saved the old value refuses to run. Through a view, the root base's history is rebuilt too
(PyTorch's CopySlices). In-place on a leaf that requires grad, or on a view of one, is refused.
"""
from __future__ import annotations

import gc
import sys
from typing import Any, Callable

import numpy as np

from .. import dtypes
from ..autograd import forward_ad, grad_mode
from ..autograd.forward_ad import tangent_or_zeros
from ..autograd.mutation_on_saved import clone_saved_before_write
from ..autograd.versions import (IN_CUSTOM_FUNCTION, INFERENCE_MODE_VIEW, MULTI_OUTPUT_VIEW, NO_GRAD_VIEW,
                                 custom_function_view_error, forward_name, increment_version, rebase_history,
                                 refresh_view, view_positions)
from ..device import copy_array, copy_into, device_of
from ..random import Generator
from ..tensor import Tensor
from . import arithmetic, arithmetic_arguments, sampling
from .indexing import getitem, in_pytorch_order, is_advanced, normalize_index
from .lowering import intrinsic
from .meta_rules import like
from .public import PUBLIC, declare_public, public
from .registry import defop, note_alias, note_write, observed
from .shape import reshape

_LEAF_ERROR = "a leaf Variable that requires grad is being used in an in-place operation."
_VIEW_OF_LEAF_ERROR = "a view of a leaf Variable that requires grad is being used in an in-place operation."
# An expanded view, or ``from_numpy`` of a numpy array that is not writeable (PyTorch writes into it, after
# a warning, with undefined behaviour; jitgrad refuses): until 2026-11-28 the text named only the first.
_READ_ONLY = ("this tensor's memory is read-only (an expanded view, or a numpy array that is not writeable); "
              "clone() it first")


_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location (a stride of 0 along a dimension of size > 1). Please clone() the tensor before performing "
            "the operation.")


def elements_share_memory(data: Any) -> bool:
    """Whether several elements of ``data`` lie at one memory location (a stride of 0 along a dimension of
    size > 1, as a writeable array from ``from_numpy`` may have). An empty array (numpy may give it
    strides of 0) has no elements to share anything."""
    return bool(data.size) and any(stride == 0 and size > 1 for stride, size in zip(data.strides, data.shape))


def _check_no_internal_overlap(name: str, data: Any) -> None:
    """PyTorch's refusal to write into memory that several elements share: which element's value would
    land there is undefined, and eager (numpy's last write) and a compiled graph (its own order)
    disagreed until 2026-11-28."""
    if elements_share_memory(data):
        raise RuntimeError(f"{name}({data.dtype.name}{list(data.shape)}, strides={list(data.strides)}): {_OVERLAP}")


def _involves_grad(self: Tensor, args: tuple) -> bool:
    return grad_mode.state.grad_enabled and not grad_mode.state.inference and (
        self._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args))


def _snapshot(tensor: Tensor) -> Tensor:
    """The tensor's value now, as a separate tensor with the same place in the graph."""
    snapshot = Tensor._make(_copied(tensor), tensor._requires_grad)
    snapshot._grad_fn, snapshot._output_nr = tensor._grad_fn, tensor._output_nr
    return snapshot


def _copied(tensor: Tensor) -> Any:
    """A copy of ``tensor``'s array on its device."""
    return copy_array(tensor._data)


def _check_not_inference(tensor: Tensor) -> None:
    if tensor._is_inference and not grad_mode.state.inference:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can make "
                           "a clone to get a normal tensor before doing inplace update.")


def _check_view_creation(view: Tensor) -> None:
    """PyTorch's refusals of an in-place change, with grad mode on, to a view whose history could not be
    rebuilt unambiguously (its ``CreationMeta``, ``versions.mark_views``)."""
    creation = view._view[3]
    if creation in (NO_GRAD_VIEW, INFERENCE_MODE_VIEW):
        made, mode, block = (("no_grad mode", "with grad mode enabled", "no_grad") if creation == NO_GRAD_VIEW
                             else ("inference mode", "in normal mode", "inference_mode"))
        raise RuntimeError(
            f"A view was created in {made} and is being modified inplace {mode}. Given that this use case is "
            "ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and "
            f"the inplace either both inside the {block} block (if you don't want the inplace to be tracked) or "
            "both outside (if you want the inplace to be tracked).")
    if creation == IN_CUSTOM_FUNCTION:
        raise custom_function_view_error(view, "is being modified inplace")
    if creation == MULTI_OUTPUT_VIEW:
        raise RuntimeError(
            f"Output {view._output_nr} of {forward_name(view, 'a view op')} is a view and is being "
            "modified inplace. This view is the output of a function that returns multiple views. Such "
            "functions do not allow the output views to be modified inplace. You should replace the inplace "
            "operation by an out-of-place one.")


def _rebase(tensor: Tensor, result: Tensor) -> None:
    """``tensor``'s history becomes ``result``'s (``versions.rebase_history``), and it requires grad."""
    rebase_history(tensor, result)
    tensor._requires_grad = True


def _check_changeable(self: Tensor, args: tuple) -> bool:
    """PyTorch's refusals of an in-place change of ``self`` (an inference tensor outside inference mode,
    a leaf that requires grad, a view whose creation forbids it); whether the change is recorded."""
    _check_not_inference(self)
    recording = _involves_grad(self, args)
    if recording and self._grad_fn is None and self._requires_grad:
        raise RuntimeError(_LEAF_ERROR)
    view = self._view
    if view is not None and view[3] is not None and grad_mode.state.grad_enabled \
            and (recording or view[0]._requires_grad):   # a no_grad view's own requires_grad is False
        _check_view_creation(self)
    return recording


def apply_inplace(name: str, self: Tensor, op: Callable[..., Tensor], *args: Any, **kwargs: Any) -> Tensor:
    """Runs ``op(self, *args)`` and writes the result into ``self``'s memory."""
    recording = _check_changeable(self, args)
    # Traced, a write through a view must reach its base's node too (until 2026-11-28 one without
    # gradients wrote the memory only, and the program lost it)
    if self._view is not None and (recording or forward_ad.state.level is not None or observed()):
        return _apply_through_view(name, self, op, recording, *args, **kwargs)
    if recording:
        snapshot = _snapshot(self)
        note_alias(snapshot, self)
        result = op(snapshot, *args, **kwargs)
    else:
        result = op(self, *args, **kwargs)
    _write(name, self, result)
    if recording and result._grad_fn is not None:
        _rebase(self, result)
    return self


def apply_view_inplace(name: str, self: Tensor, view_op: Callable[..., Tensor], *args: Any) -> Tensor:
    """Makes ``self`` the view ``view_op(self, *args)`` of its own memory (``unsqueeze_``, ``t_``): its
    shape and strides change, not its values; the version counter is bumped and, recorded, its history
    becomes the view op's node, as PyTorch's. A tensor whose views are alive is refused (``_has_views``)."""
    recording = _check_changeable(self, args)
    view = self._view
    if view is not None and recording and view[0]._grad_fn is None and view[0]._requires_grad:
        raise RuntimeError(_VIEW_OF_LEAF_ERROR)
    if view is None and _has_views(self):
        raise RuntimeError(f"{name}(): this tensor has views (taken by indexing, view(), t()...) that would "
                           "still read its elements in its old shape; change its shape before taking them, or "
                           f"use the out-of-place {name.rstrip('_')}()")
    result = view_op(self, *args)
    note_write(self)
    self._data = result._data
    note_alias(self, result)   # before the version moves on, which would make ``result`` a stale view of ``self``
    increment_version(self)
    if view is not None:   # a view of a view: the root's, with one more step
        self._view = result._view[:1] + (self._version_counter[0],) + result._view[2:]
    result._view = None   # ``self`` is that view now; the tracer may keep ``result`` alive
    if recording and result._grad_fn is not None:
        _rebase(self, result)
    return self


def _has_views(tensor: Tensor) -> bool:
    """Whether a view of ``tensor`` is alive: a view's ``_view`` tuple names its root first. Views find
    their elements by replaying their view ops on the root, so after the root's shape changed in place
    they would read and write the wrong ones, silently (PyTorch's views keep their own strides). The
    search walks the garbage collector's objects, which is slow (milliseconds), so it runs only where the
    version counter, which every view shares, has another holder (``sys.getrefcount`` also counts the
    tensor's reference, this function's and its own argument's)."""
    counter = tensor._version_counter
    if counter is None or sys.getrefcount(counter) <= 3:
        return False
    return any(type(ref) is tuple and len(ref) == 4 and ref[0] is tensor for ref in gc.get_referrers(tensor))


def _write(name: str, self: Tensor, result: Tensor) -> None:
    """Copies ``result`` into ``self``'s memory (checked) and bumps the version counter."""
    note_write(self)
    clone_saved_before_write(self)
    if result._data.shape != self._data.shape:
        raise RuntimeError(f"{name}: output with shape {list(self._data.shape)} doesn't match the broadcast "
                           f"shape {list(result._data.shape)}")
    if not np.can_cast(result._data.dtype, self._data.dtype, casting="same_kind"):
        raise RuntimeError(f"{name}: result type {result._data.dtype.name} can't be cast to the desired "
                           f"output type {self._data.dtype.name}")
    if type(self._data) is not np.ndarray:
        _write_on_device(self, result)
    else:
        if not self._data.flags.writeable:
            raise RuntimeError(f"{name}: {_READ_ONLY}")
        _check_no_internal_overlap(name, self._data)
        np.copyto(self._data, result._data, casting="same_kind")
    increment_version(self)
    note_alias(self, result)


def _write_on_device(self: Tensor, result: Tensor) -> None:
    """``_write``'s copy for a CUDA tensor: the result, cast on the device, copied into its memory."""
    if device_of(result._data) != device_of(self._data):
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{device_of(self._data)} and {device_of(result._data)}!")
    if result._data.dtype != self._data.dtype:
        previous = grad_mode.state.grad_enabled
        grad_mode.state.grad_enabled = False
        try:
            result = arithmetic.to_dtype(result, self._data.dtype)
        finally:
            grad_mode.state.grad_enabled = previous
    copy_into(self._data, result._data)


def _apply_through_view(name: str, view: Tensor, op: Callable[..., Tensor], recording: bool, *args: Any,
                        **kwargs: Any) -> Tensor:
    """An in-place op on a view, with derivatives (PyTorch's CopySlices): the view's old value is
    gathered from a snapshot of its root base, the op runs on it, and the root's new value scatters the
    result back into the snapshot (``copy_slices``). When ``recording``, the root's history becomes
    CopySlices and the view's its view ops replayed on it (``refresh_view``); forward-mode tangents
    follow through ``note_alias`` either way."""
    root = view._view[0]
    if recording and root._grad_fn is None and root._requires_grad:
        raise RuntimeError(_VIEW_OF_LEAF_ERROR)
    refresh_view(view)
    positions = view_positions(view)
    snapshot = _snapshot(root)
    note_alias(snapshot, root)
    old_value = reshape(getitem(reshape(snapshot, -1), (positions.reshape(-1),)), view._data.shape)
    level = forward_ad.state.level
    if level is not None and level.get(view) is not None:
        forward_ad.carry_tangent(view, old_value)  # a dual made by make_dual holds its tangent itself
    result = op(old_value, *args, **kwargs)
    if result._data.shape != view._data.shape:
        raise RuntimeError(f"{name}: output with shape {list(view._data.shape)} doesn't match the broadcast "
                           f"shape {list(result._data.shape)}")
    new_root = _copy_slices(snapshot, result, positions=positions)
    _write(name, view, result)
    note_alias(root, new_root)
    if recording:
        # the view's history is its view ops replayed on the root's CopySlices, as PyTorch regenerates it
        # (until 2026-11-28 it was the op's node, which also got what the root's users sent through
        # CopySlices: the view's retain_grad() saw both)
        _rebase(root, new_root)
        view._requires_grad = True
        refresh_view(view)
    else:
        view._view = view._view[:1] + (view._version_counter[0],) + view._view[2:]
    return view


def _fill_forward(a: np.ndarray, value, zero: bool) -> np.ndarray:
    dtypes.check_fits(value, a.dtype, f"fill_({a.dtype}{list(a.shape)})")
    return np.full_like(a, value)


_fill = defop("fill", ("self",), _fill_forward,
              lambda args, attrs: "ZeroBackward0" if attrs["zero"] else "FillBackward2", meta=like(0),
              lower=intrinsic("fill"),
              jvp=lambda self_t: self_t * 0.0,
              self=lambda grad: grad * 0.0)

_copy = defop("copy", ("self", "src"),
              lambda a, src: np.array(np.broadcast_to(src, a.shape), dtype=a.dtype),
              "CopyBackwards", meta=like(0), lower=intrinsic("copy"),
              jvp=lambda self_t, src_t: self_t * 0.0 if src_t is None else src_t,
              self=lambda grad: grad * 0.0,
              src=lambda grad: grad)


def _index_put_forward(a, values, index):
    out = a.copy()
    out[index] = values
    return out


_index_put = defop("index_put", ("self", "values"), _index_put_forward, "IndexPutBackward0", meta=like(0),
                   lower=intrinsic("index_put"),
                   jvp=lambda self_t, values_t, self, index: _index_put(
                       tangent_or_zeros(self_t, self), 0.0 if values_t is None else values_t, index=index),
                   self=lambda grad, index: _index_put(grad, 0.0, index=index),
                   values=lambda grad, index: grad[index])


def _copy_slices_forward(a, src, positions):
    out = a.copy()
    out.reshape(-1)[positions.reshape(-1)] = np.reshape(src, -1) if np.ndim(src) else src
    return out


# ``self`` with the elements at flat ``positions`` replaced by ``src``: a root base after an in-place op
# through one of its views. PyTorch's node of the same name.
_copy_slices = defop("copy_slices", ("self", "src"), _copy_slices_forward, "CopySlices", meta=like(0),
                     lower=intrinsic("copy_slices"),
                     jvp=lambda self_t, src_t, self, positions: _copy_slices(
                         tangent_or_zeros(self_t, self), 0.0 if src_t is None else src_t, positions=positions),
                     self=lambda grad, positions: _copy_slices(grad, 0.0, positions=positions),
                     src=lambda grad, src_shape, positions: reshape(
                         getitem(reshape(grad, -1), (positions.reshape(-1),)), src_shape))


@public("method")
def add_(self: Tensor, other: Any, *, alpha: float = 1) -> Tensor:
    if alpha == 1 and alpha is not True:
        return apply_inplace("add_", self, arithmetic.add, other)
    return apply_inplace("add_", self, arithmetic_arguments.add_with_alpha, other, alpha=alpha)


@public("method")
def sub_(self: Tensor, other: Any, *, alpha: float = 1) -> Tensor:
    if alpha == 1 and alpha is not True:
        return apply_inplace("sub_", self, arithmetic.sub, other)
    return apply_inplace("sub_", self, arithmetic_arguments.sub_with_alpha, other, alpha=alpha)


@public("method")
def mul_(self: Tensor, other: Any) -> Tensor:
    return apply_inplace("mul_", self, arithmetic.mul, other)


@public("method")
def div_(self: Tensor, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    if rounding_mode is None:
        return apply_inplace("div_", self, arithmetic.div, other)
    return apply_inplace("div_", self, arithmetic_arguments.div_with_rounding, other, rounding_mode=rounding_mode)


@public("method")
def pow_(self: Tensor, exponent: Any) -> Tensor:
    return apply_inplace("pow_", self, arithmetic.pow, exponent)


@public("method")
def clamp_(self: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    return apply_inplace("clamp_", self, arithmetic_arguments.clamp, min, max)


@public("method")
def fill_(self: Tensor, value: float) -> Tensor:
    return apply_inplace("fill_", self, _fill, value=value, zero=False)


@public("function")
def fill(input: Tensor, value: float) -> Tensor:
    """A tensor of ``input``'s shape and dtype filled with ``value``, whose gradient to ``input`` is
    zeros (PyTorch's ``torch.fill``): what an in-place op whose result ignores ``self``'s values writes."""
    return _fill(input, value=value, zero=False)


@public("method")
def zero_(self: Tensor) -> Tensor:
    return apply_inplace("zero_", self, _fill, value=0, zero=True)


@public("method")
def copy_(self: Tensor, src: Any) -> Tensor:
    """Writes ``src`` (broadcast, cast) into ``self``; the gradient flows to ``src``. As in PyTorch,
    ``src`` may be on another device: it is copied to ``self``'s first."""
    if isinstance(src, Tensor) and type(src._data) is not type(self._data) and src.device != self.device:
        src = src.to(self.device)
    return apply_inplace("copy_", self, _copy, src)


@public("method")
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fills ``self`` with normal samples from jitgrad's generator (or ``generator``): the numbers
    ``randn`` of that shape and dtype would draw, times ``std`` plus ``mean``, written by ``copy_``."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _random_fill("normal_", self, sampling.normal, std, mean, generator)


@public("method")
def uniform_(self: Tensor, from_: float = 0.0, to: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fills ``self`` with samples uniform in ``[from_, to)`` (PyTorch's ``from``, a Python keyword),
    from ``rand``'s numbers for that shape and dtype."""
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}")
    return _random_fill("uniform_", self, sampling.uniform, to - from_, from_, generator)


def _random_fill(name: str, self: Tensor, op: Callable[..., Tensor], scale: float, shift: float,
                 generator: Generator | None) -> Tensor:
    """``self`` = ``op``'s draw for its shape, dtype and generator, ``* scale + shift``. The draw is a
    random op like a factory's (``sampling.draw``), so a compiled function draws afresh at each call;
    the write is ``copy_``, which refuses a leaf that requires grad outside ``no_grad`` and moves the
    draw to ``self``'s device."""
    dtype = self._data.dtype
    if dtype.kind != "f":
        raise NotImplementedError(f"{name}: not implemented for {dtype} tensors (random floats need a "
                                  "floating dtype)")
    values = sampling.draw(op, tuple(self.shape), dtype, generator)
    return copy_(self, values * scale + shift if (scale, shift) != (1, 0) else values)


def setitem(self: Tensor, index: Any, value: Any) -> None:
    """``self[index] = value``: the gradient of ``value`` is the indexed gradient; the overwritten
    elements of ``self`` get none. With nothing to differentiate or observe, the elements are written
    directly rather than through a copy of the whole tensor. An index that PyTorch applies in two
    steps (``x[1, ..., [0, 2]]``: the integers first) writes through the view its first step makes."""
    _check_not_inference(self)
    index = normalize_index(index)
    steps = in_pytorch_order(index, self._data.ndim)
    if steps is not None:
        basic, advanced = steps
        setitem(getitem(self, basic), advanced, value)
        return
    recording = _involves_grad(self, (value,))
    if recording or forward_ad.state.level is not None or observed() or type(self._data) is not np.ndarray:
        if recording and self._grad_fn is None and self._requires_grad \
                and not is_advanced(index) and any(item is not Ellipsis for item in index):
            raise RuntimeError(_VIEW_OF_LEAF_ERROR)  # PyTorch writes a basic index through a view of self
        apply_inplace("__setitem__", self, _index_put, value, index=index)
        return
    if not self._data.flags.writeable:
        raise RuntimeError(f"__setitem__: {_READ_ONLY}")
    _check_no_internal_overlap("__setitem__", self._data)
    clone_saved_before_write(self)
    try:
        self._data[index] = value._data if isinstance(value, Tensor) else value
    except ValueError as error:  # numpy's broadcast error: PyTorch's is a RuntimeError, as the recorded path's
        raise RuntimeError(f"__setitem__({self._data.dtype.name}{list(self._data.shape)}, index={index}): "
                           f"{error}") from None
    increment_version(self)


def _written_back(name: str, fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The in-place method ``name_`` of the public op ``fn``: its result written into ``self``."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return apply_inplace(f"{name}_", self, fn, *args, **kwargs)
    method.__name__ = method.__qualname__ = f"{name}_"
    method.__doc__ = f"``{name}`` of this tensor, written into its memory (``self``, as PyTorch's ``{name}_``)."
    return method


# The in-place variants of the elementwise ops, PyTorch's ``Tensor.<op>_``: the out-of-place op's
# result written back (so their gradients are the op's). A float result of an integer tensor is
# refused, as in PyTorch (``_write``'s cast check).
_ELEMENTWISE_INPLACE = ("abs", "neg", "sign", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
                        "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
                        "acosh", "atanh", "sigmoid", "relu", "erf", "floor", "ceil", "round", "trunc", "frac", "fix",
                        "reciprocal", "square", "nan_to_num", "clamp_min", "clamp_max", "masked_fill", "lerp", "fmod",
                        "remainder")
for _name in _ELEMENTWISE_INPLACE:
    declare_public(f"{_name}_", _written_back(_name, PUBLIC[_name].value), ("method",))
