"""Guards: what a call must share with an earlier one to run what was compiled for it.

A call's *key* is one flat tuple: the grad mode and default dtype, the nesting of the arguments
(``pytree`` spec), one descriptor per argument leaf, one per guarded free variable (``FreeGuards``),
and which of the tensors are the same object. A tensor's descriptor is its shape, dtype,
requires_grad, whether it has a ``.grad`` and hooks, its device (a CUDA program and a CPU one never
serve each other's calls), whether it is a leaf, computed or an inference tensor, its class (a
``Parameter`` is one inside the trace too) and its layout (``tensor_layout``); its values are read
afresh at every call; a Python number's, string's or None's is its type and value (a number made
*dynamic* keeps only its type, see docs/compile.md); a numpy array's its shape, dtype and values
(``array_contents``: a trace may bake any value it computed from them into the graph, through numpy
where no tracer sees, so a changed element must recompile); any other object's its identity (or its
value, for a hashable object that defines equality, such as a dtype); a free run-time number's
(``free_variables``: an optimizer's ``lr``) its type alone.

Programs are found by the key, which is exact, so a call either runs what was compiled for exactly
its situation or traces again. ``describe_miss`` says which guard failed, naming the argument or the
free variable, and whether only sizes (a *retrace*, whose lowered kernels are reused) or something
structural changed (a *recompile*).
"""
from __future__ import annotations

import array
import math
from typing import Any, Callable, Sequence

import numpy as np

from ..autograd import grad_mode
from ..dtypes import from_numpy_dtype, get_default_dtype
from ..tensor import Tensor
from .placement import CPU, array_device
from .pytree import describe_spec
from .sources import Source, reader

_PLAIN = (int, float, bool, str, type(None))
# Free-variable guard kinds: the reader's expression for each.
_READERS = {"tensor": "{0}", "array": "{0}", "number": "{0}", "value": "_value({0})", "identity": "id({0})",
            "length": "len({0})", "keys": "tuple({0})", "typed keys": "_typed_keys({0})",
            "environment": "_environment({0})"}
HEADER = 3   # grad mode, default dtype, the arguments' spec
# The largest numpy array guarded by value (its bytes are copied and hashed at every call); a function
# reading a larger one, or one of Python objects, runs eagerly (``array_contents``).
ARRAY_GUARD_BYTES = 1 << 20


def tensor_descriptor(t: Tensor) -> tuple:
    data = t._data
    device = CPU if type(data) is np.ndarray else array_device(data)
    contiguous = data.flags.c_contiguous if isinstance(data, np.ndarray) else data.is_c_contiguous()
    return (data.shape, data.dtype, t._requires_grad, t._grad is not None,
            bool(t._hooks) or bool(t._post_accumulate_grad_hooks),
            "inference" if t._is_inference else t._grad_fn is not None,   # the trace reads ``is_leaf`` and
            device, type(t),   # ``is_inference()`` eagerly, and a ``Parameter`` is one inside it too
            None if contiguous else tensor_layout(data))


def tensor_layout(data: Any) -> tuple[int, ...]:
    """The strides (in bytes) of an array that is not C-contiguous, 0 for a dimension of size 1 (whose
    stride no view reads); a C-contiguous one's layout is None. A trace decides from its inputs' strides
    whether ``reshape``, ``flatten`` or ``contiguous()`` of an input is a view of it or a copy, so writes
    through the result reach the input or not, and ``view`` whether it raises: a program traced for one
    layout served another one's call (until 2026-11-28 ``x.reshape(-1).add_(1)`` traced for a transpose
    left a contiguous ``x`` unchanged, and ``x.contiguous().add_(1)`` traced for a contiguous ``x`` wrote
    into a transposed one)."""
    return tuple(0 if n == 1 else s for n, s in zip(data.shape, data.strides))


def array_contents(array: np.ndarray) -> bytes | None:
    """The values of a numpy array as its guard compares them (exact bits, so a NaN equals itself), or
    None when it cannot be guarded by value: an array of Python objects (whose bytes are pointers) or
    one over ``ARRAY_GUARD_BYTES``."""
    if array.dtype.hasobject or array.nbytes > ARRAY_GUARD_BYTES:
        return None
    return array.tobytes()


def unguarded_array(array: np.ndarray, where: str) -> str:
    """Why a function reading ``array`` (found at ``where``) runs eagerly: ``array_contents`` is None."""
    described = f"it reads {where}, a numpy array ({array.dtype}{list(array.shape)}) that"
    if array.dtype.hasobject:
        return f"{described} holds Python objects, whose changes no guard sees; pass the values it needs as arguments"
    return (f"{described} has {array.nbytes / 2**20:.1f} MiB, more than the {ARRAY_GUARD_BYTES / 2**20:g} MiB "
            "guarded by value at each call; pass it as a tensor (jg.from_numpy shares its memory), whose values "
            "a compiled call reads afresh")


def typed_keys(keys: Any) -> tuple:
    """Dict keys or set items as a guard compares them: each plain value (or numpy scalar) by its type
    and ``repr`` (equal numbers of other types, ``0.0`` and ``-0.0``, are other keys to the code that
    reads them), tuples item by item, anything else by identity."""
    return tuple(_typed(k) for k in keys)


def _typed(key: Any) -> Any:
    kind = type(key)
    if kind is str:
        return key
    if kind is tuple:
        return (tuple, typed_keys(key))
    if kind in _PLAIN or kind is complex or kind is bytes or isinstance(key, np.generic):
        return (kind, repr(key))   # (a numpy scalar too: compared with a tuple, it broadcasts and raises)
    return ("object", id(key))   # compared with ``==``, a tensor or an array answers elementwise


def value_descriptor(value: Any) -> Any:
    """Descriptor of a non-tensor leaf or free value: type and value for plain values and hashable
    objects that define equality, shape, dtype and values for an array, identity for the rest."""
    kind = type(value)
    if kind in _PLAIN:
        if kind is float and value == 0.0 and math.copysign(1.0, value) < 0.0:
            return (kind, value, "negative")  # equal to 0.0, but 1 / -0.0 is -inf: baked in, it must not serve 0.0
        return (kind, value)
    if kind is np.ndarray:
        return ("array", value.shape, value.dtype, array_contents(value))
    if kind is complex or isinstance(value, (np.floating, np.complexfloating)):   # -0.0, as a float's above
        if any(p == 0 and math.copysign(1.0, p) < 0 for p in (value.real, value.imag)):
            return (kind, value, "negative")
        return (kind, value)
    if kind is bytearray or kind is memoryview:   # by their bytes: mutable, so an identity would miss a write
        return (kind, value.tobytes() if kind is memoryview else bytes(value))
    if kind is array.array:   # as a bytearray (until 2026-11-29 by identity: ``a[0] = 4.0`` ran the old program)
        return (kind, (value.typecode, value.tobytes()))
    if kind is set or kind is frozenset:
        # by its items (the walk guards only sets of plain values; an identity would miss an add), in the
        # order a loop visits them: equal sets can differ in it (``{1, 9}`` and ``{9, 1}``), and the
        # trace bakes it in (until 2026-11-28 one ran the other's program, silently); and by their types
        # (until 2026-11-29 ``{1.0, 2}`` ran the program traced for ``{1, 2}``)
        return (kind, typed_keys(value))
    if kind.__eq__ is not object.__eq__:
        try:
            hash(value)
            return (kind, value)
        except TypeError:
            pass
    return ("object", id(value))


def environment(variables: Any) -> tuple:
    """``os.environ`` as a guard compares it: every variable, in order. A function that reads one
    (``float(os.environ["SCALE"])``, ``os.getenv``) bakes its value into the graph, and the name it reads
    may be computed, so any change recompiles (until 2026-11-29 none did: a silently stale result)."""
    data = getattr(variables, "_data", None)   # CPython's own encoded copy: no decoding at every call
    return ("environment", tuple(data.items() if isinstance(data, dict) else variables.items()))


def _environment_change(label: str, old: tuple, new: tuple) -> str:
    before, after = dict(old[1]), dict(new[1])
    names = sorted({k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}) or ["(their order)"]
    shown = ", ".join(n.decode(errors="replace") if isinstance(n, bytes) else str(n) for n in names[:3])
    return f"{label}: environment variables changed: {shown}"


class FreeGuards:
    """The free variables a compiled function guards or reads, over all its traces (only ever
    growing), and one generated ``read(args, kwargs)`` returning their current values or descriptors."""

    def __init__(self) -> None:
        self.entries: list[tuple[Source, str]] = []
        self._index: dict[tuple[Source, str], int] = {}
        self._kept: list[Any] = []   # objects guarded by identity: their ids must stay theirs
        self._read: Callable[[tuple, dict], tuple | None] | None = None
        self._kinds: FreeKinds | None = None

    def add(self, source: Source, kind: str, value: Any = None) -> int:
        key = (source, kind)
        index = self._index.get(key)
        if index is None:
            index = self._index[key] = len(self.entries)
            self.entries.append(key)
            self._read = None
        if kind == "identity":
            self._kept.append(value)
        return index

    def __len__(self) -> int:
        return len(self.entries)

    def read(self, args: tuple, kwargs: dict) -> tuple | None:
        if not self.entries:
            return ()
        if self._read is None:
            self._read = reader([(s, _READERS[k]) for s, k in self.entries],
                                {"_value": value_descriptor, "_environment": environment,
                                 "_typed_keys": typed_keys})
        return self._read(args, kwargs)

    def kinds(self) -> FreeKinds:
        if self._kinds is None or len(self._kinds) != len(self.entries):
            self._kinds = FreeKinds([k for _, k in self.entries])
        return self._kinds

    def index(self, source: Source, kind: str) -> int:
        return self._index[(source, kind)]


def grad_mode_key() -> bool | str:
    """What a call's key holds of the autograd modes: whether grad mode is on, or ``"inference"``
    inside ``inference_mode``, where ops record nothing even under ``enable_grad`` and make inference
    tensors (a program traced under ``no_grad`` is not one traced there)."""
    state = grad_mode.state
    return "inference" if state.inference else state.grad_enabled


class FreeKinds(tuple):
    """The kinds of a ``FreeGuards``' entries, with the positions ``call_key`` describes itself (tensors,
    arrays, run-time numbers): every other kind is read as its guard already (an identity, a value,
    keys, a length), so a call's key takes those values as they are, without a test per entry."""

    def __new__(cls, kinds: Sequence[str]) -> "FreeKinds":
        self = super().__new__(cls, kinds)
        self.tensors = tuple(i for i, k in enumerate(kinds) if k == "tensor")
        self.arrays = tuple(i for i, k in enumerate(kinds) if k == "array")
        self.numbers = tuple(i for i, k in enumerate(kinds) if k == "number")
        return self


def call_key(spec: Any, leaves: list, free: Sequence, free_kinds: Sequence[str], dynamic: frozenset = frozenset()) -> tuple:
    """The key of a call (see the module docstring). ``dynamic`` holds the key positions of numbers
    that are run-time inputs: their values are left out. ``free`` may be shorter than ``free_kinds``
    (the values of an earlier, shorter set of guards)."""
    kinds = free_kinds if type(free_kinds) is FreeKinds else FreeKinds(free_kinds)
    parts: list[Any] = [grad_mode_key(), get_default_dtype(), spec]
    ids: list[int] = []
    for value in leaves:
        if isinstance(value, Tensor):
            parts.append(tensor_descriptor(value))
            ids.append(id(value))
        else:
            parts.append(value_descriptor(value))
    start, count = len(parts), len(free)
    parts += free
    if count > len(kinds):
        del parts[start + len(kinds):]
    for i in kinds.tensors:
        if i >= count:
            break
        value = free[i]
        parts[start + i] = tensor_descriptor(value) if isinstance(value, Tensor) else value_descriptor(value)
        ids.append(id(value))
    for i in kinds.arrays:
        if i >= count:
            break
        parts[start + i] = value_descriptor(free[i])
    for i in kinds.numbers:  # a run-time input: its type only
        if i >= count:
            break
        parts[start + i] = (type(free[i]),)
    for position in dynamic:
        part = parts[position]
        if part[0] is int or part[0] is float:  # a tensor or another value there now keeps its whole guard
            parts[position] = part[:1]  # (type, value) -> (type,)
    parts.append(True if len(set(ids)) == len(ids) else tuple(ids.index(i) for i in ids))
    return tuple(parts)


def labels(leaf_sources: Sequence[Source], free_entries: Sequence[tuple[Source, str]],
           parameter_names: Sequence[str]) -> list[str]:
    """What each position of a key guards, for the log."""
    return (["grad mode", "the default dtype", "the arguments' structure"]
            + [s.describe(parameter_names) for s in leaf_sources]
            + [s.describe(parameter_names) for s, _ in free_entries] + ["which inputs are the same tensor"])


class Miss:
    """Why a call's key matched no program: ``reason`` for the log, ``retrace`` when only sizes,
    ``.grad``s, hooks or aliasing changed (the same kernels serve), ``numbers`` the key positions of
    Python numbers that changed value and nothing else. (A plain class: a warm process imports this
    module, and making a dataclass costs about 3 M instructions.)"""

    def __init__(self, reason: str, retrace: bool, numbers: list[int]) -> None:
        self.reason, self.retrace, self.numbers = reason, retrace, numbers


def _dtype_name(dtype: Any) -> str:
    try:
        return from_numpy_dtype(np.dtype(dtype)).name if not isinstance(dtype, str) else dtype
    except (TypeError, ValueError):
        return str(dtype)


def _tensor_change(label: str, old: tuple, new: tuple) -> tuple[str, bool]:
    (s0, d0, r0, g0, h0, c0, v0, k0, l0), (s1, d1, r1, g1, h1, c1, v1, k1, l1) = old, new
    if v0 != v1:
        return f"{label}: device was {v0}, now {v1}", False
    if k0 is not k1:
        return f"{label}: was a {k0.__qualname__}, now a {k1.__qualname__}", False
    if len(s0) != len(s1):
        return f"{label}: rank was {len(s0)}, now {len(s1)}", False
    if d0 != d1:
        return f"{label}: dtype was {_dtype_name(d0)}, now {_dtype_name(d1)}", False
    ones0, ones1 = tuple(s == 1 for s in s0), tuple(s == 1 for s in s1)
    if ones0 != ones1:
        return f"{label}: dimensions of size 1 was {ones0}, now {ones1}", False
    if r0 != r1:
        return f"{label}: requires_grad was {r0}, now {r1}", False
    if s0 != s1:
        return f"{label}: shape was {s0}, now {s1}", True
    if g0 != g1:
        return f"{label}: .grad was {'set' if g0 else 'None'}, now {'set' if g1 else 'None'}", True
    if c0 != c1:
        return f"{label}: was {_KINDS[c0]}, now {_KINDS[c1]}", True
    if l0 != l1:
        return f"{label}: strides were {_strides(l0, d0)}, now {_strides(l1, d1)}", True
    return f"{label}: {'had' if h0 else 'had no'} tensor hooks, now {'has' if h1 else 'has none'}", True


_KINDS = {True: "computed", False: "a leaf", "inference": "an inference tensor"}   # a descriptor's sixth item


def _strides(layout: tuple[int, ...] | None, dtype: np.dtype) -> str:
    return "C-contiguous" if layout is None else str([s // dtype.itemsize for s in layout])


def _is_tensor_descriptor(value: Any) -> bool:
    return (isinstance(value, tuple) and len(value) == 9 and isinstance(value[0], tuple)
            and isinstance(value[1], np.dtype))


def _is_array_descriptor(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 4 and value[0] == "array"


def _is_environment(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and value[0] == "environment"


def _array_change(label: str, old: tuple, new: tuple) -> str:
    (_, s0, d0, _), (_, s1, d1, _) = old, new
    if s0 != s1 or d0 != d1:
        return f"{label}: a numpy array of {_dtype_name(d0)}{list(s0)}, now of {_dtype_name(d1)}{list(s1)}"
    return (f"{label}: the values of a numpy array ({_dtype_name(d1)}{list(s1)}) changed; a trace bakes what it "
            "computes from a numpy array into the program, so pass a tensor (jg.from_numpy shares the array's "
            "memory) to change values without recompiling")


def _spelled(key: Any) -> str:
    """A key of ``typed_keys`` as the code spells it."""
    if type(key) is tuple and len(key) == 2 and key[0] is tuple:
        return "(" + ", ".join(_spelled(k) for k in key[1]) + ("," if len(key[1]) == 1 else "") + ")"
    if type(key) is tuple and len(key) == 2 and isinstance(key[0], type) and type(key[1]) is str:
        return key[1]
    return repr(key)


def _are_typed_keys(keys: Any) -> bool:
    return isinstance(keys, tuple) and bool(keys) and all(
        type(k) is str or type(k) is tuple and len(k) == 2 and isinstance(k[0], type) for k in keys)


def _show(value: Any) -> str:
    if isinstance(value, tuple) and len(value) == 1 and isinstance(value[0], type):  # a run-time number
        return f"a run-time {value[0].__name__}"
    if isinstance(value, tuple) and len(value) == 2 and value[0] is array.array:
        return repr(array.array(*value[1]))
    if isinstance(value, tuple) and len(value) == 2 and value[0] in (set, frozenset):
        return "{" + ", ".join(_spelled(k) for k in value[1]) + "}"
    if _are_typed_keys(value):   # a dict's keys
        return "keys [" + ", ".join(_spelled(k) for k in value) + "]"
    if isinstance(value, tuple) and len(value) in (2, 3) and isinstance(value[0], type):   # (3: -0.0)
        return repr(value[1])
    if isinstance(value, tuple) and value and value[0] == "object":
        return f"another object (id {value[1]:#x})"
    return repr(value)


def describe_miss(old: tuple, new: tuple, key_labels: Sequence[str], ignore: frozenset[int] = frozenset()) -> Miss:
    """The first guard that differs between ``old`` (a key compiled before) and ``new``, the positions
    in ``ignore`` (numbers that are run-time inputs) aside."""
    if old[0] != new[0]:
        def mode(key: bool | str) -> str:
            return "inference_mode" if key == "inference" else f"is_grad_enabled() {key}"
        return Miss(f"grad mode changed: was {mode(old[0])}, now {mode(new[0])}", False, [])
    if old[1] != new[1]:
        return Miss(f"the default dtype changed: was {old[1]}, now {new[1]}", False, [])
    if old[2] != new[2] or len(old) != len(new):
        return Miss(f"the arguments' structure changed: was {describe_spec(old[2])}, now "
                    f"{describe_spec(new[2])}", False, [])
    reasons: list[tuple[str, bool]] = []
    numbers: list[int] = []
    for position in range(HEADER, len(new)):
        a, b = old[position], new[position]
        if a == b or position in ignore:
            continue
        label = key_labels[position] if position < len(key_labels) else f"guard {position}"
        if position == len(new) - 1:
            reasons.append(("which inputs are the same tensor changed", True))
        elif _is_tensor_descriptor(a) and _is_tensor_descriptor(b):
            reasons.append(_tensor_change(label, a, b))
        elif _is_array_descriptor(a) and _is_array_descriptor(b):
            reasons.append((_array_change(label, a, b), False))
        elif _is_environment(a) and _is_environment(b):
            reasons.append((_environment_change(label, a, b), False))
        else:
            if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) == 2 and a[0] is b[0] \
                    and a[0] in (int, float):
                numbers.append(position)
            if _is_tensor_descriptor(a) != _is_tensor_descriptor(b):
                reasons.append((f"{label}: was {'a tensor' if _is_tensor_descriptor(a) else 'not a tensor'}, now "
                                f"{'a tensor' if _is_tensor_descriptor(b) else 'not a tensor'}", False))
            else:
                reasons.append((f"{label}: value was {_show(a)}, now {_show(b)}", False))
    structural = [r for r, retrace in reasons if not retrace]
    if structural:
        only_numbers = len(numbers) == len(structural)
        return Miss(structural[0], False, numbers if only_numbers else [])
    return Miss(reasons[0][0] if reasons else "no difference", True, [])


def distance(old: tuple, new: tuple, ignore: frozenset[int] = frozenset()) -> int:
    """How many guards differ between two keys (keys of another structure are far apart)."""
    if len(old) != len(new) or old[:HEADER] != new[:HEADER]:
        return len(new) + 10 + sum(a != b for a, b in zip(old[:HEADER], new[:HEADER]))
    return sum(a != b for i, (a, b) in enumerate(zip(old, new)) if i not in ignore)


__all__ = ["ARRAY_GUARD_BYTES", "FreeGuards", "FreeKinds", "HEADER", "Miss", "array_contents", "call_key", "describe_miss",
           "distance", "environment", "grad_mode_key", "labels", "tensor_descriptor", "tensor_layout", "typed_keys",
           "unguarded_array", "value_descriptor"]
