"""The operator registry: every op is declared here once, and every call to an op goes through here.

An ``OpDef`` holds an op's numpy forward, one derivative formula per differentiable input (written in
jitgrad ops, so ``create_graph``, higher order and tracing come for free) and the name of its backward
node. A formula names what it reads through its parameters, as PyTorch's ``derivatives.yaml`` does:

- ``grad`` (the gradient of the op's output) or ``grads`` (of each output, zeros where none arrived);
- ``result`` (the op's output), an input's name (``self``, ``other``...), ``<input>_shape``;
- any attribute of the call (``dim``, ``keepdim``...).

Its JVP rule (``jvp=``, for forward mode, see ``jitgrad.autograd.forward_ad``) reads the same names, with
``<input>_t`` (that input's tangent, None when it has none) in place of ``grad``.

Its lowering (``lower=``) is the maths every compiling backend writes as its own code, in no backend's
terms (``jitgrad.ops.lowering``): a scalar expression for an elementwise op, a fold for a reduction, a
named intrinsic for the rest (docs/backends.md). An op without one runs only eagerly. Its shape and
dtype rule (``meta=``, ``jitgrad.ops.meta_rules``) gives graph mode its output's metadata.

Only what the formulas of inputs that require grad read is saved for backward. A formula returns the
gradient at the broadcast shape it computes; the engine sums it back to the input's shape.
"""
from __future__ import annotations

from contextlib import contextmanager
from types import MethodType
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from ..autograd import forward_ad, grad_mode
from ..autograd.versions import mark_views
from ..device import CPU, device_of, is_device_array, to_device
from ..dtypes import UnsupportedOperand
from ..device import usage as _devices
from ..signatures import parameter_names
from ..tensor import Tensor
from ..thread_settings import ThreadSettings
from ..autograd.recording import record
from .op_backward import SavePlan, node_class, save_plan
from .public import declare_public

REGISTRY: dict[str, "OpDef"] = {}
# How an op runs on a device: ``DEVICE_RUNNERS["cuda"](op, values, attrs)`` returns device arrays where
# ``op.forward(*values, **attrs)`` returns numpy ones. ``jitgrad/backends/numba_cuda/eager.py`` installs
# the CUDA runner (``install()``), which ``jitgrad.cuda`` calls when the first CUDA tensor is made.
DEVICE_RUNNERS: dict[str, Callable[..., Any]] = {}
KINDS = frozenset({"elementwise", "reduction", "statement"})


class SymbolicValue:
    """A stand-in for a Python number inside a trace (``jitgrad.fx.numbers.SymbolicNumber``): an op
    computes with its ``value``, and a tracer records the stand-in's node as the operand."""

    __slots__ = ("value",)


@dataclass(eq=False)
class OpDef:
    """One operator: forward over numpy arrays, derivatives in jitgrad ops, backward node name.

    ``inputs`` names the tensor arguments in order; with ``variadic`` the single input is a sequence
    of tensors (``cat``, ``stack``) and its formula returns one gradient per tensor. ``node`` is the
    backward node's class name, or a function of ``(args, attrs)`` where PyTorch's name depends on the
    call (``PowBackward0/1/2``). ``jvp`` gives the output's tangent from the inputs' (forward mode).
    ``view`` ops (reshape, transpose, basic indexing...) may return their input's memory.
    ``explain`` turns a failure of the forward into a message that names the op and the shapes.
    ``kind`` is what the fusion pass and the backends need to know of it: ``"elementwise"`` (one
    output element from the inputs' elements at the same, broadcast, index: it fuses into a loop),
    ``"reduction"`` (folds ``dim`` of its input: it can end a loop) or ``"statement"`` (anything else).
    ``recompute`` marks an elementwise op as a few arithmetic instructions per element: cheaper for a
    fused loop to compute again than to read back from memory (``rematerialize``); not so a call to
    the C library (``exp``, float64 ``tanh``). ``meta`` is its shape and dtype rule: the output's
    ``TensorMeta`` from the inputs' and the attributes, which graph mode gives its nodes
    (``jitgrad.ops.meta_rules``).
    """

    name: str
    inputs: tuple[str, ...]
    forward: Callable[..., Any]
    derivatives: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    node: str | Callable[[tuple, dict], str] = ""
    variadic: bool = False
    explain: Callable[[tuple, dict], str | None] | None = None
    jvp: Callable[..., Any] | None = None
    view: bool = False
    lower: Any = None
    kind: str = "statement"
    recompute: bool = False
    meta: Callable[..., Any] | None = None
    crosses_devices: bool = False  # its forward copies between devices itself (``ops/device_copy.py``)
    jvp_reads: tuple[str, ...] = field(init=False, repr=False)
    reads: dict[str, tuple[str, ...]] = field(init=False, repr=False)
    save_plans: dict[tuple[bool, ...], Any] = field(init=False, repr=False)  # op_backward.SavePlan
    backward_class: type | None = field(init=False, repr=False)  # the node class once made, when ``node`` names one
    # the recorder of ``backward_class`` the op callers use (``autograd.recording.recorder``), once made: kept
    # here, not in the callers' closures, which the warm-start index's fingerprint walks (it describes an
    # op by its name, so what the op caches never changes a function's fingerprint)
    fixed_recorder: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"op {self.name}: kind must be one of {sorted(KINDS)}, not {self.kind!r}")
        if self.recompute and self.kind != "elementwise":
            raise ValueError(f"op {self.name}: only an elementwise op can be recomputed inside a loop")
        self.reads, self.save_plans = {}, {}
        for input_name, formula in self.derivatives.items():
            if input_name not in self.inputs:
                raise ValueError(f"op {self.name}: derivative for unknown input {input_name!r}")
            self.reads[input_name] = parameter_names(formula)
        self.jvp_reads = parameter_names(self.jvp) if self.jvp else ()
        if self.derivatives and not self.node:
            raise ValueError(f"op {self.name}: a differentiable op needs a backward node name")
        self.backward_class = None   # made at the first node of the op (op_backward.node_class: ~70 classes at import)

    @property
    def differentiable(self) -> bool:
        return bool(self.derivatives)

    def plan_for(self, needs_grad: tuple[bool, ...]) -> SavePlan:
        """The save plan of this op's nodes when the inputs flagged in ``needs_grad`` want gradients
        (kept in ``save_plans``, which recording reads first)."""
        plan = self.save_plans[needs_grad] = save_plan(self, needs_grad)
        return plan

    def node_class(self, args: tuple, attrs: dict) -> type:
        """The backward node class of this call (``MulBackward0``...); kept as ``backward_class`` where
        the op names one class for every call."""
        if isinstance(self.node, str):
            self.backward_class = node_class(self.node)
            return self.backward_class
        return node_class(self.node(args, attrs))

    def __call__(op, *args: Any, **attrs: Any) -> Any:  # noqa: N805 - the op is what is being run
        """Runs ``op`` eagerly and, when grad mode is on and an input requires grad, records its node.

        Every op call of a training step comes through here, so the common arities are unrolled."""
        requires_grad = False
        if op.variadic:
            tensors = tuple(args[0])
            values: tuple = ([_value(t) for t in tensors],)
            requires_grad = any(isinstance(t, Tensor) and t._requires_grad for t in tensors)
        else:
            tensors = args
            if len(args) == 1:
                a = args[0]
                if isinstance(a, Tensor):
                    values, requires_grad = (a._data,), a._requires_grad
                else:
                    values = args
            elif len(args) == 2:
                a, b = args
                if isinstance(a, Tensor):
                    requires_grad = a._requires_grad
                    a = a._data
                elif isinstance(a, SymbolicValue):
                    a = a.value
                if isinstance(b, Tensor):
                    requires_grad = requires_grad or b._requires_grad
                    b = b._data
                elif isinstance(b, SymbolicValue):
                    b = b.value
                values = (a, b)
            else:
                values = tuple(_value(t) for t in args)
                requires_grad = any(isinstance(t, Tensor) and t._requires_grad for t in args)
        try:
            if _devices.active:  # False until the first CUDA tensor is made: CPU programs pay one test
                out = _run_on_device(op, tensors, values, attrs)
            else:
                out = op.forward(*values, **attrs)
        except (ValueError, IndexError, TypeError) as error:
            raise _op_error(op, tensors, attrs, error) from error
        return finish_call(op, args, tensors, attrs, out, requires_grad)

    def __get__(self, instance: Any, owner: type) -> Any:
        """An op stored on ``Tensor`` binds like a method: ``Tensor.__mul__ = mul`` needs no wrapper."""
        return self if instance is None else MethodType(self, instance)

    def __repr__(self) -> str:
        return f"<op {self.name}>"


def finish_call(op: OpDef, args: tuple, tensors: tuple, attrs: dict, out: Any, requires_grad: bool) -> Any:
    """The rest of a call of ``op`` once its forward returned ``out``: its output tensors, their views,
    its node, and what the observers are told (``OpDef.__call__``, and ``op_callers`` for what is not
    a single array)."""
    # made in inference mode, or a view of what was: an inference tensor; a view made in inference mode of
    # a normal tensor is a normal one, as PyTorch's (``versions.INFERENCE_MODE_VIEW`` refuses its in-place
    # change outside)
    inference = getattr(tensors[0], "_is_inference", False) if op.view else _modes.inference
    if type(out) is tuple:
        outputs = tuple(Tensor._make(o if type(o) is np.ndarray else as_storage(o)) for o in out)
        if inference:
            for o in outputs:
                o._is_inference = True
        if op.view:
            mark_views(op, attrs, tensors[0], outputs)
        if requires_grad and op.derivatives and _modes.grad_enabled and not (inference or _modes.inference):
            record(op.backward_class or op.node_class(args, attrs), op, tensors, attrs, outputs)
        if _observers.observer is not None:
            _observers.observer(op, args, attrs, outputs)
        if _dual.level is not None:
            forward_ad.propagate(op, args, attrs, outputs)
        return outputs
    result = Tensor._make(out if type(out) is np.ndarray else as_storage(out))
    if inference:
        result._is_inference = True
    if op.view:
        mark_views(op, attrs, tensors[0], (result,))
    if requires_grad and op.derivatives and _modes.grad_enabled and not (inference or _modes.inference):
        record(op.backward_class or op.node_class(args, attrs), op, tensors, attrs, (result,))
    if _observers.observer is not None:
        _observers.observer(op, args, attrs, result)
    if _dual.level is not None:
        forward_ad.propagate(op, args, attrs, (result,))
    return result


def register(op: OpDef) -> OpDef:
    if op.name in REGISTRY:
        raise ValueError(f"op {op.name} is registered twice")
    REGISTRY[op.name] = op
    return op


def defop(name: str, inputs: Sequence[str], forward: Callable[..., Any], node: Any = "",
          variadic: bool = False, explain: Callable[[tuple, dict], str | None] | None = None,
          jvp: Callable[..., Any] | None = None, view: bool = False, lower: Any = None,
          kind: str = "statement", recompute: bool = False, meta: Callable[..., Any] | None = None,
          public: tuple[str, ...] = (), crosses_devices: bool = False, **derivatives: Callable[..., Any]) -> OpDef:
    """Declares and registers an op; keyword arguments are the per-input derivative formulas. A
    ``view`` op's outputs may share their first input's memory (and then its version counter).
    ``public`` makes the op public under its name (its caller, ``op_callers``, where it has one), as
    a ``"function"``, a ``"method"`` or both (``jitgrad/ops/public.py``); an op reached through a
    wrapper leaves it empty."""
    op = register(OpDef(name, tuple(inputs), forward, derivatives, node, variadic, explain, jvp, view, lower,
                        kind, recompute, meta, crosses_devices))
    if public:
        from .op_callers import caller  # built on this module: the op's users call a caller when it has one
        declare_public(name, caller(op), public)
    return op


class _Observers(ThreadSettings):
    observer: Callable[[OpDef, tuple, dict, Any], None] | None = None
    alias: Callable[[Tensor, Tensor], None] | None = None
    created: Callable[[Tensor, Any], None] | None = None
    before_write: Callable[[Tensor], None] | None = None


_observers = _Observers()
_dual = forward_ad.state  # its ``level`` is checked after every op: not None while a dual level is open
_modes = grad_mode.state  # the thread's grad and inference modes, read by every op


@contextmanager
def observing(observer: Callable[[OpDef, tuple, dict, Any], None],
              alias: Callable[[Tensor, Tensor], None] | None = None, *,
              created: Callable[[Tensor, Any], None] | None = None,
              before_write: Callable[[Tensor], None] | None = None) -> Iterator[None]:
    """Calls ``observer(op, args, attrs, output)`` after every op this thread runs, inside the block;
    ``alias(tensor, source)`` when a tensor takes another's value without an op of its own (an
    in-place op writing its result back); ``created(tensor, data)`` when a factory makes a tensor
    from ``data``; and ``before_write(tensor)`` before an in-place op writes into ``tensor``'s memory.

    This is how graph mode sees a program: a tracer observes the ops of the forward and, since the
    engine's derivative formulas are jitgrad ops too, of the backward, in the order the engine runs
    them."""
    previous = _observers.observer, _observers.alias, _observers.created, _observers.before_write
    _observers.observer, _observers.alias = observer, alias
    _observers.created, _observers.before_write = created, before_write
    try:
        yield
    finally:
        _observers.observer, _observers.alias, _observers.created, _observers.before_write = previous


def observed() -> bool:
    """Whether an observer (a tracer) is watching this thread's ops."""
    return _observers.observer is not None


def note_alias(tensor: Tensor, source: Tensor) -> None:
    """Tells an observer, and forward mode, that ``tensor`` now holds ``source``'s value."""
    if _observers.alias is not None:
        _observers.alias(tensor, source)
    if _dual.level is not None:
        forward_ad.carry_tangent(source, tensor)


def note_created(tensor: Tensor, data: Any) -> None:
    """Tells an observer that a factory made ``tensor`` from ``data`` (a list, an array, a shape)."""
    if _observers.created is not None:
        _observers.created(tensor, data)


def note_write(tensor: Tensor) -> None:
    """Tells an observer that an in-place op is about to write into ``tensor``'s memory."""
    if _observers.before_write is not None:
        _observers.before_write(tensor)


def _value(arg: Any) -> Any:
    if isinstance(arg, Tensor):
        return arg._data
    return arg.value if isinstance(arg, SymbolicValue) else arg


def as_storage(out: Any) -> Any:
    """An op's output as a tensor's storage: a device array as it is (``np.asarray`` would copy it
    to the host), anything else (a numpy scalar) as a numpy array."""
    return out if is_device_array(out) else np.asarray(out)


def _run_on_device(op: OpDef, tensors: tuple, values: tuple, attrs: dict) -> Any:
    """Runs ``op`` on the device of its tensors: ``op.forward`` when they are all on the CPU, else the
    device's runner. A 0-d CPU tensor may join a CUDA op (it is copied to the device), as in PyTorch;
    any other mix of devices is PyTorch's error."""
    arguments = list(tensors)  # a variadic op's tensors are already its list's
    target = None
    for t in arguments:
        if isinstance(t, Tensor) and is_device_array(t._data):
            target = device_of(t._data)
            break
    if target is None or op.crosses_devices:
        return op.forward(*values, **attrs)
    for t in arguments:
        if isinstance(t, Tensor) and t._data.ndim and device_of(t._data) != target:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                               f"devices, {target} and {CPU}!")
    values = tuple(_moved(v) for v in values) if not op.variadic else \
        ([_moved(v) for v in values[0]],) + tuple(_moved(v) for v in values[1:])
    runner = DEVICE_RUNNERS.get(target.type)
    if runner is None:
        raise RuntimeError(f"{op.name}: no {target.type.upper()} runner is installed: this jitgrad has no "
                           f"CUDA backend (jitgrad.backends.numba_cuda.eager installs the runner)")
    return runner(op, values, attrs)


def _moved(value: Any) -> Any:
    """A value of a CUDA op: a 0-d CPU tensor's array copied to the device, anything else as it is."""
    if type(value) is np.ndarray and value.ndim == 0:
        return to_device(value)
    return value


def _describe(t: Any) -> str:
    if isinstance(t, Tensor):
        return f"{t._data.dtype.name}{list(t._data.shape)}"
    if isinstance(t, np.ndarray):
        return f"ndarray {t.dtype.name}{list(t.shape)}"
    return repr(t)


def _op_error(op: OpDef, tensors: tuple, attrs: dict, error: Exception) -> Exception:
    detail = op.explain(tuple(_value(t) for t in tensors), attrs) if op.explain else None
    args = ", ".join(_describe(t) for t in tensors)
    attr_text = "".join(f", {k}={v!r}" for k, v in attrs.items())
    message = detail or str(error)
    cls = IndexError if isinstance(error, IndexError) else TypeError if isinstance(error, UnsupportedOperand) \
        else RuntimeError
    return cls(f"{op.name}({args}{attr_text}): {message}")

