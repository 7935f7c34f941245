"""Custom differentiable functions: ``jitgrad.autograd.Function``, as PyTorch spells it.

In forward mode a Function's tangents come from its ``jvp``, never from the ops inside its forward.

``MyFn.apply(*args)`` runs ``MyFn.forward(ctx, *args)`` without recording and, when an input requires
grad, makes one ``MyFnBackward`` node the ``grad_fn`` of the outputs. That node *is* the ``ctx`` the
user saw in ``forward``: what it saved is what ``backward`` reads.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..device import zeros_on
from ..tensor import Tensor
from . import forward_ad, grad_mode
from .graph import Node, gradient_edge, input_metadata_of
from .saved_tensor import SavedTensor
from .versions import increment_version, mark_custom_function_view

_ONCE_DIFFERENTIABLE_ERROR = ("trying to differentiate twice a function that was marked with "
                              "@once_differentiable")


class FunctionCtx:
    """What ``forward`` may record for ``backward`` (methods of the backward node, which is the ctx)."""

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        self._to_save = tensors

    def save_for_forward(self, *tensors: Tensor | None) -> None:
        """Tensors that ``jvp`` reads as ``ctx.saved_tensors`` (PyTorch's name; without it ``jvp`` reads
        what ``save_for_backward`` saved, where PyTorch's gets nothing)."""
        self._saved_for_forward = tensors

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Declares inputs that ``forward`` modified in place and returns; their history is rebased
        onto this function."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With ``False``, ``backward`` receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = value

    @property
    def saved_tensors(self) -> tuple[Tensor | None, ...]:
        if self._in_jvp and self._saved_for_forward is not None:
            return tuple(self._saved_for_forward)
        return tuple(s.unpack(self) if s is not None else None for s in self._saved)


class FunctionBackward(FunctionCtx, Node):
    """The backward node of one ``Function.apply`` call; subclassed per Function, with a ``__dict__``
    so that ``forward`` can store anything on ``ctx``."""

    function: type["Function"]

    def __init__(self, edges, tensor_positions: tuple[int, ...], needs_input_grad: tuple[bool, ...]) -> None:
        Node.__init__(self, edges)
        self._tensor_positions = tensor_positions
        self.needs_input_grad = needs_input_grad
        self.materialize_grads = True
        self._to_save: tuple = ()
        self._saved_for_forward: tuple | None = None
        self._in_jvp = False
        self._dirty: tuple = ()
        self._non_differentiable: tuple = ()
        self._saved: tuple = ()

    def apply(self, grads, needed):
        if self.materialize_grads:  # a non-Tensor output's slot (metadata None) always gets None
            grads = [g if g is not None or m is None else Tensor._make(zeros_on(m.shape, m.dtype, m.device))
                     for g, m in zip(grads, self._input_metadata)]
        result = self.function.user_backward()(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        expected = len(self.needs_input_grad)
        if len(result) < expected or any(g is not None for g in result[expected:]):
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {expected}, got {len(result)})")
        for position, grad in enumerate(result[:expected]):
            if grad is not None and not isinstance(grad, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(grad).__name__})")
            if grad is not None and position not in self._tensor_positions:
                raise RuntimeError(f"function {self.name()} returned a gradient different than None at "
                                   f"position {position + 1}, but the corresponding forward input was not "
                                   "a Variable")
        return [result[p] for p in self._tensor_positions]

    def release_variables(self) -> None:
        for saved in self._saved:
            if saved is not None:
                saved.release()


class _DelayedError(Node):
    """Stands in the graph of a ``@once_differentiable`` backward's results: differentiating them
    again raises instead of silently giving zeros."""

    def apply(self, grads, needed):
        raise RuntimeError(_ONCE_DIFFERENTIABLE_ERROR)


def once_differentiable(backward: Callable) -> Callable:
    """Marks a ``backward`` that is not itself differentiable: it runs without recording, and a
    gradient of its results (``create_graph=True``) raises."""
    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with grad_mode.no_grad():
            result = backward(ctx, *grads)
        if not grad_mode.is_grad_enabled():
            return result
        inputs = [g for g in grads if isinstance(g, Tensor) and g._requires_grad]
        if not inputs:
            return result
        results = result if isinstance(result, tuple) else (result,)
        node = _DelayedError([gradient_edge(g) for g in inputs])
        node._input_metadata = [input_metadata_of(r._data) for r in results if isinstance(r, Tensor)]
        wrapped, nr = [], 0
        for r in results:
            if isinstance(r, Tensor):
                r = Tensor._make(r._data, True)
                r._grad_fn, r._output_nr = node, nr
                nr += 1
            wrapped.append(r)
        return tuple(wrapped) if isinstance(result, tuple) else wrapped[0]
    return wrapper


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)``; call
    ``apply``. ``backward`` returns one gradient (or None) per ``forward`` argument."""

    _node_classes: dict[type, type[FunctionBackward]] = {}
    # The backward node's class name where it is not ``<class name>Backward``: jitgrad's own Functions
    # take PyTorch's name for the op they stand for (``LinalgInvExBackward0``); read from the class itself,
    # so a subclass is named after itself again.
    _node_name: str | None = None

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        """``forward(ctx, *args)``; or, with ``setup_context`` defined, ``forward(*args)``."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple, output: Any) -> None:
        """PyTorch's second style: ``forward`` takes no ctx, and this saves what ``backward`` needs from
        the inputs and the output. Run right after ``forward``, without recording."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Tensor) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward  # PyTorch's other name for it: a Function defines one of the two

    @classmethod
    def user_backward(cls) -> Callable[..., Any]:
        """The ``backward`` or ``vjp`` the Function defines (both is PyTorch's error)."""
        if cls.vjp is Function.vjp:
            return cls.backward
        if cls.backward is not Function.backward:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You "
                               "should only implement one of them.")
        return cls.vjp

    @staticmethod
    def jvp(ctx: FunctionCtx, *grad_inputs: Tensor | None) -> Any:
        """Forward mode: the outputs' tangents from the inputs' (None for inputs without one)."""
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use "
                                  "it with forward mode AD.")

    @classmethod
    def _node_class(cls) -> type[FunctionBackward]:
        node_class = Function._node_classes.get(cls)
        if node_class is None:
            name = vars(cls).get("_node_name") or f"{cls.__name__}Backward"
            node_class = type(name, (FunctionBackward,), {"function": cls})
            Function._node_classes[cls] = node_class
        return node_class

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        positions = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
        needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        records = grad_mode.is_grad_enabled() and not grad_mode.is_inference_mode_enabled() and any(needs_input_grad)
        ctx = cls._node_class()(tuple(gradient_edge(args[p]) for p in positions) if records else (),
                                positions, needs_input_grad)
        tangents = forward_ad.input_tangents(args)
        with grad_mode.no_grad(), forward_ad.suspended():
            if cls.setup_context is Function.setup_context:
                output = cls.forward(ctx, *args, **kwargs)
            else:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
        outputs = output if isinstance(output, tuple) else (output,)
        if records:
            outputs = _connect(ctx, args, outputs)
        _save(ctx, outputs, records)
        if tangents is not None:
            ctx._in_jvp = True
            try:
                forward_ad.run_jvp(lambda: cls.jvp(ctx, *tangents), [o for o in outputs if isinstance(o, Tensor)])
            finally:
                ctx._in_jvp = False
        return outputs if isinstance(output, tuple) else outputs[0]


def _connect(ctx: FunctionBackward, args: tuple, outputs: tuple) -> tuple:
    """Makes ``ctx`` the grad_fn of the differentiable outputs and saves what forward asked for."""
    dirty = {id(t) for t in ctx._dirty}
    if not dirty <= {id(o) for o in outputs}:
        raise RuntimeError("Some elements marked as dirty during the forward method were not returned as "
                           "output. The inputs that are modified inplace must all be outputs of the Function.")
    non_differentiable = {id(t) for t in ctx._non_differentiable}
    inputs = {id(a) for a in args if isinstance(a, Tensor)}
    connected, metadata = [], []
    for nr, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            connected.append(out)
            metadata.append(None)  # backward still gets a gradient, None, for it, as in PyTorch
            continue
        if id(out) in dirty:
            if out._grad_fn is None and out._requires_grad:
                raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                                   "operation.")
            if out._view is not None:
                # PyTorch rebuilds the base's history (CopySlices); here the base would keep its old one
                # and the view's would be replayed without the Function: a wrong gradient, silently.
                raise NotImplementedError(
                    f"{type(ctx).__name__}: mark_dirty() of an input that is a view is not supported; pass "
                    "a tensor that is not a view (clone() it) and copy the result back in place if needed")
            increment_version(out)  # as PyTorch's mark_dirty: a write forward hid (through numpy) is seen
        elif id(out) in inputs:
            out = Tensor._make(out._data)  # an input returned as is: a new tensor, never the input's history
            mark_custom_function_view(out, outputs[nr])
        else:
            mark_custom_function_view(out, None)
        if id(outputs[nr]) not in non_differentiable and out._data.dtype.kind == "f":
            out._requires_grad, out._grad_fn, out._output_nr = True, ctx, nr
        metadata.append(input_metadata_of(out._data))
        connected.append(out)
    ctx._input_metadata = metadata
    return tuple(connected)


def _save(ctx: FunctionBackward, outputs: tuple, connected: bool) -> None:
    """Turns what forward passed to ``save_for_backward`` into saved tensors (read by backward and by
    jvp); a connected output is saved as the node's own output, without a reference cycle."""
    for index, tensor in enumerate(ctx._to_save):
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"save_for_backward can only save variables, but argument {index} is of type "
                            f"{type(tensor).__name__}")
    output_nr = {id(o): nr for nr, o in enumerate(outputs) if isinstance(o, Tensor)} if connected else {}
    ctx._saved = tuple(None if t is None else SavedTensor(t, output_nr.get(id(t))) for t in ctx._to_save)
    ctx._to_save = ()
