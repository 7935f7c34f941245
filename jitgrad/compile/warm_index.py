"""The warm-start index: from what a call's trace depends on to the program it produced, on disk, so
that a later process runs that program without tracing (issue 18).

A trace of a call depends on the function's code and on what it reads (guards, in one process) and
on the call's arguments (shapes, dtypes, Python numbers, structure). The index is keyed by:

- the function's fingerprint (``fingerprint.py``): its code and everything it reaches, described by
  value, never by identity; a function reading what has no such description is not indexed;
- the call's description: grad mode, the default dtype, the arguments' structure and each leaf's
  descriptor (a tensor's shape, dtype, requires_grad, ``.grad``, hooks and device; a number's type and
  value; a numpy array's shape, dtype and a SHA-256 of its values, which its trace may have baked
  in), and which leaves are the same tensor;
- the backend, its version and options, the ``JITGRAD_*`` settings, and the versions the disk cache
  keys everything by (jitgrad's source files, numba, llvmlite, Python) and numpy's.

An entry's data file holds, as JSON text followed by raw arrays, what ``StepProgram`` needs: the output
template, where each input comes from, the lowered kernel's description (the backend's
``warm_state``, whose machine code is the object code the cache keeps, loaded and verified as usual)
and what ``explain`` shows. Only whole-step programs whose every input is an argument are indexed; a
loss program, one that reads tensors or run-time numbers from outside its arguments, one with a
prelude of Python numbers, a function run with ``check=True``, and any call after a number became
dynamic are traced as before. A stale entry is never found: any change to what the key holds is
another key. Every decision is said with ``JITGRAD_LOG=cache``.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Callable

import numpy as np

from ..dtypes import get_default_dtype
from ..tensor import Tensor
from . import guards
from .backend import Backend
from .cache import DiskCache, versions
from .compiled_function import InputLayout, Lowered, StepProgram, no_numbers
from .fingerprint import NotStable, fingerprint
from .result_template import GradAlias, InputAlias, Slot, TupleOf

INDEX_FORMAT = "jitgrad-warm-index-4"
# What ``explain`` shows as the IR before the passes of a program from the index. The traced graph is
# not kept: printing it cost a first call of W4 over 500 steps 27-44 ms (the passes edit the graph,
# so only a text or a copy can keep it), and a warm process would read and hash its text (about 1 MB
# there) before its first result. The graph after the passes is kept.
NOT_INDEXED_IR = ("(not kept in the warm-start index: this program was loaded without tracing; "
                  "jitgrad.compile(fn, cache=False).explain(...) traces it and shows this IR)")
_UNKEYED_SETTINGS = frozenset({"JITGRAD_LOG", "JITGRAD_CACHE_DIR", "JITGRAD_CACHE_MAX_BYTES", "JITGRAD_LINT_PASSES"})
_PLAIN = (int, float, bool, str, type(None))


class NotIndexed(Exception):
    """Why a call or a program has no place in the index (said in the log; the call is traced)."""


# ---- the key ---------------------------------------------------------------------------------------------
def _spec(spec: Any) -> Any:
    """A ``pytree`` spec as JSON, part by part as ``flatten_into`` builds it; a named tuple (a class of
    the user's) is not described."""
    if spec is None or isinstance(spec, int):   # a leaf; a call of plain arguments
        return spec
    if spec[0] == "call":
        return ["call", _spec(spec[1]), _spec(spec[2])]
    kind = spec[0]
    if kind is dict:
        if not all(type(k) in _PLAIN for k in spec[1]):
            raise NotIndexed("an argument is a dict with keys other than numbers and strings")
        return ["dict", [[type(k).__name__, repr(k)] for k in spec[1]], [_spec(s) for s in spec[2]]]
    if kind is list or kind is tuple:
        return [kind.__name__, [_spec(s) for s in spec[1]]]
    raise NotIndexed(f"an argument is a {getattr(kind, '__qualname__', kind)} (a named tuple)")


def _leaf(value: Any) -> list:
    if isinstance(value, Tensor):
        shape, dtype, requires_grad, has_grad, hooks, computed, device, kind, layout = guards.tensor_descriptor(value)
        if not kind.__module__.startswith("jitgrad."):
            raise NotIndexed(f"an argument is a {kind.__qualname__}, a tensor class of the user's")
        return ["tensor", list(shape), dtype.str, requires_grad, has_grad, hooks, str(device), computed,
                f"{kind.__module__}.{kind.__qualname__}", None if layout is None else list(layout)]
    if type(value) in _PLAIN:
        return [type(value).__name__, repr(value)]
    if type(value) is np.ndarray:  # its values too, as its in-process guard has them (guards.array_contents)
        contents = guards.array_contents(value)
        if contents is None:
            raise NotIndexed("an argument is a numpy array that is not guarded by value")
        return ["array", list(value.shape), value.dtype.str, hashlib.sha256(contents).hexdigest()]
    raise NotIndexed(f"an argument is a {type(value).__qualname__}, described in a process only by identity")


def call_description(spec: Any, leaves: list) -> dict[str, Any]:
    """What a call's trace depends on among its arguments and the global modes (see the module
    docstring), as JSON data; raises ``NotIndexed`` for an argument with no such description."""
    aliasing = guards.call_key(spec, leaves, (), ())[-1]
    return {"grad_mode": guards.grad_mode_key(), "default_dtype": get_default_dtype().name,
            "spec": _spec(spec), "leaves": [_leaf(v) for v in leaves],
            "aliasing": aliasing if aliasing is True else list(aliasing)}


def index_key(fn: Callable, spec: Any, leaves: list, backend: Backend, options: dict[str, Any]) -> dict[str, Any]:
    """The key of a call's entry; raises ``NotIndexed`` saying why the call has none."""
    try:
        function = fingerprint(fn)
    except NotStable as reason:
        raise NotIndexed(str(reason)) from None
    settings = sorted((k, v) for k, v in os.environ.items() if k.startswith("JITGRAD_") and k not in _UNKEYED_SETTINGS)
    key = {"format": INDEX_FORMAT, "function": function, "call": call_description(spec, leaves),
           "backend": [backend.name, backend.version], "options": sorted(options.items()), "settings": settings,
           "numpy": np.__version__, **versions()}  # numpy's functions are described by name
    return json.loads(json.dumps(key))  # as the entry gives it back: lists, not tuples


# ---- programs as data ------------------------------------------------------------------------------------
def _template(part: Any) -> Any:
    kind = type(part)
    if kind is Slot:
        return {"slot": part.index}
    if kind is tuple or kind is list:
        return {kind.__name__: [_template(p) for p in part]}
    if kind is dict:
        if not all(type(k) is str for k in part):
            raise NotIndexed("the result is a dict with keys other than strings")
        return {"dict": [[k, _template(v)] for k, v in part.items()]}
    if kind is TupleOf:
        raise NotIndexed(f"the result holds a {part.kind.__qualname__}")
    if kind in _PLAIN:
        return {"value": part}
    if kind is InputAlias or kind is GradAlias:
        raise NotIndexed("a result is an input, an input's .grad or a view of one (made from the input at each call)")
    raise NotIndexed(f"the result holds a {kind.__qualname__}")


def _from_template(data: Any) -> Any:
    (kind, value), = data.items()
    if kind == "slot":
        return Slot(int(value))
    if kind == "tuple":
        return tuple(_from_template(p) for p in value)
    if kind == "list":
        return [_from_template(p) for p in value]
    if kind == "dict":
        return {k: _from_template(v) for k, v in value}
    if kind == "value" and type(value) in _PLAIN:
        return value
    raise ValueError(f"unknown template part {kind!r}")


def _slots(table: dict) -> list:
    return [[int(i), None if slot is None else slot.index] for i, slot in table.items()]


def _arrays(arrays: list[np.ndarray]) -> tuple[list, bytes]:
    """Arrays of numbers as one block of bytes and a table of (dtype, shape, offset)."""
    table, chunks, offset = [], [], 0
    for array in arrays:
        if array.dtype.kind not in "biufc" or array.dtype.hasobject:
            raise NotIndexed(f"a constant of the kernel is of dtype {array.dtype}")
        data = np.ascontiguousarray(array).tobytes()
        table.append([array.dtype.str, list(array.shape), offset])
        chunks.append(data)
        offset += len(data)
    return table, b"".join(chunks)


def _read_arrays(table: list, data: bytes) -> list[np.ndarray]:
    arrays = []
    for dtype, shape, offset in table:
        dtype = np.dtype(dtype)
        if dtype.kind not in "biufc":
            raise ValueError(f"an array of dtype {dtype}")
        count = int(np.prod(shape, dtype=np.int64))
        end = offset + count * dtype.itemsize
        if not 0 <= offset <= end <= len(data):
            raise ValueError("an array outside the data")
        arrays.append(np.frombuffer(bytearray(data[offset:end]), dtype=dtype).reshape(shape))
    return arrays


def describe(program: Any, leaf_count: int, backend: Backend) -> tuple[dict[str, Any], bytes]:
    """A program as an entry's data; raises ``NotIndexed`` for one the index does not hold."""
    if not isinstance(program, StepProgram):
        raise NotIndexed("only whole-step programs are indexed (this is a loss program)")
    if program.numbers.prelude or program.numbers.checked:
        raise NotIndexed("the program computes or compares Python numbers before its kernel (a prelude)")
    layout = program.layout
    if any(p is not None and p >= leaf_count for p in layout.positions):
        raise NotIndexed("the program reads inputs from outside its arguments")
    if backend.warm_state is None:
        raise NotIndexed(f"the {backend.name} backend keeps no warm state")
    lowered = program.lowered
    kernel = backend.warm_state(lowered.call)
    if kernel is None:
        raise NotIndexed("the kernel runs as Python (NUMBA_DISABLE_JIT)")
    state, constants = kernel
    table, arrays = _arrays(constants)
    result, grads, writes = program.template
    text = json.dumps({"template": _template(result), "grads": _slots(grads), "writes": _slots(writes),
            "added_into": sorted(program.added_into), "rebound": sorted(program.rebound),
            "layout": {"positions": layout.positions, "grad_of": layout.grad_of, "random": layout.random,
                       "draws": layout.draws},
            "lowered": {"label": lowered.label, "source": lowered.source, "ir_after": lowered.ir_after,
                        "pass_report": lowered.pass_report, "fusion_groups": lowered.fusion_groups,
                        "memory": lowered.memory,
                        "out_dtypes": [d.str for d in lowered.out_dtypes]},
            "kernel": state, "constants": table}).encode()
    return {"text_bytes": len(text)}, text + arrays  # the text can be long (W1's IR): in the hashed data file


def restore(sizes: dict[str, Any], data: bytes, backend: Backend, cache: DiskCache) -> StepProgram | None:
    """The program an entry describes (``sizes`` and ``data``, as ``describe`` made them), its kernel
    loaded from the object code in ``cache``; None when that object code is not there or not loadable
    (the caller traces)."""
    split = int(sizes["text_bytes"])
    entry, data = json.loads(data[:split]), data[split:]
    call = backend.from_warm_state(entry["kernel"], _read_arrays(entry["constants"], data), cache)
    if call is None:
        return None
    text = entry["lowered"]
    lowered = Lowered(text["label"], call, text["source"], NOT_INDEXED_IR, text["ir_after"], text["pass_report"],
                      list(text["fusion_groups"]), dict(text["memory"]), [np.dtype(d) for d in text["out_dtypes"]],
                      from_disk=True)
    grads = {int(i): None if s is None else Slot(int(s)) for i, s in entry["grads"]}
    writes = {int(i): Slot(int(s)) for i, s in entry["writes"]}
    layout = entry["layout"]
    return StepProgram(lowered, (_from_template(entry["template"]), grads, writes),
                       InputLayout(list(layout["positions"]), list(layout["grad_of"]), layout["random"],
                                   int(layout["draws"])),
                       no_numbers(), backend, frozenset(int(i) for i in entry["added_into"]),
                       frozenset(int(i) for i in entry["rebound"]))


__all__ = ["INDEX_FORMAT", "NOT_INDEXED_IR", "NotIndexed", "call_description", "describe", "index_key", "restore"]
