"""A function's fingerprint: a hash of everything its trace can depend on that a guard cannot check in
another process, or the reason there is none.

In one process a compiled function finds its programs by guards (``guards.py``), some of which hold
identities: the function a closure cell holds, a list, an object. Identities mean nothing in another
process, so the warm-start index (``warm_index.py``) finds a program by this fingerprint instead. It
walks from the function as the free-variable walk does (``free_variables.py``: the cells of its
closure, the globals its code names, its defaults, and from those, containers and the user's
functions) but describes each value by what it *is*, never by where it lives:

- a user function by its code (bytecode, constants, names, recursively through nested code) and,
  walked again, its own cells, globals and defaults; a user module by the attributes the code of
  every function that reaches it names;
- a number, string, bool, None, numpy scalar or dtype by type and value; a list, tuple, dict or set
  by its items, in their order (a set's is the order a loop visits it, which the hash seed sets);
  an object met twice by "the same as the n-th value" (aliasing is part of it);
- jitgrad, numpy and ``math`` functions, classes and modules by name (their code is fixed by the
  versions the cache keys hold, jitgrad's by a hash of its source files), and Python's builtins that
  compute from their arguments alone (``len``, ``range``, ``zip``...) by name.

Everything else is refused, so that the function is traced as usual: a tensor or an array read from
outside the arguments, an object of the user's classes, another library (its state is not keyed: a
file read, the time, an environment variable would be baked into the graph), and the names of
jitgrad and numpy that read process state (files, the generator's seed, the distributed rank, the
GPU). Refusing is always safe; a fingerprint that missed something the trace read would not be. What
the fingerprint cannot see is a library patched at run time (``jitgrad.nn.functional.relu =
...`` *before* the function first reads it is seen; a patch of a function jitgrad calls internally
is not).
"""
from __future__ import annotations

import builtins
import collections
import dis
import functools
import hashlib
import sys
import types
import warnings
from typing import Any, Callable

import numpy as np

from ..tensor import Tensor
from .free_variables import MISSING, code_names, global_names, wrapper_attributes

MAX_VALUES = 2000
STABLE_LIBRARIES = frozenset({"jitgrad", "numpy", "math"})
# Names of jitgrad and numpy whose results depend on the process, not on the arguments.
PROCESS_STATE = frozenset({
    "load", "save", "loadtxt", "genfromtxt", "fromfile", "fromregex", "memmap", "DataSource", "tofile",
    "distributed", "cuda", "accelerator", "get_rng_state", "set_rng_state", "initial_seed", "seed",
    "get_num_threads", "set_num_threads", "get_num_interop_threads", "serialization", "utils", "testing",
    "ctypeslib", "show_config", "show_runtime"})
PURE_BUILTINS = frozenset({
    "abs", "all", "any", "bool", "callable", "complex", "dict", "divmod", "enumerate", "filter", "float",
    "frozenset", "hasattr", "int", "isinstance", "issubclass", "len", "list", "map", "max", "min",
    "pow", "range", "reversed", "round", "set", "slice", "sorted", "str", "sum", "super", "tuple", "type",
    "zip", "repr", "format", "iter", "next", "print", "NotImplemented", "Ellipsis", "None", "True", "False"})
_SCALARS = (int, float, bool, complex, str, bytes, type(None))
# Attributes through which code reads a module's or a function's globals by a string
# (``config.__dict__["scale"]``, ``helper.__globals__["scale"]``): their values were not described, and
# a changed one found the entry stored before, until 2026-11-28.
READS_BY_NAME = frozenset({"__dict__", "__globals__", "__builtins__", "__getattribute__"})
FORMATS = frozenset({"format", "format_map"})   # a format string reads attributes it names: "{0.scale}"
# jitgrad's objects that their name says all of: a dtype, an op (``OpDef``). (Any jitgrad object with a
# ``name`` was described by it before 2026-11-28, a compiled function by its function's name among them.)
_NAMED_OBJECTS = frozenset({("jitgrad.dtypes", "dtype"), ("jitgrad.ops.registry", "OpDef")})


class NotStable(Exception):
    """What the function reads that has no description valid in another process."""


def _builtin_exception(name: str) -> bool:
    """Whether ``name`` is a builtin exception class (``raise ValueError(...)`` in the function)."""
    value = getattr(builtins, name, None)
    return isinstance(value, type) and issubclass(value, BaseException)


def _library(module: str | None) -> bool:
    return bool(module) and module.partition(".")[0] in STABLE_LIBRARIES


def _named(value: Any) -> tuple:
    """A library function or class by its module and qualified name; refused if the name reads
    process state."""
    module = getattr(value, "__module__", None) or ""
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", "")
    if name.rpartition(".")[2] in PROCESS_STATE or any(p in PROCESS_STATE for p in module.split(".")[1:]):
        raise NotStable(f"it calls {module}.{name}, whose result depends on the process")
    return (type(value).__name__, module, name)


def _constant(value: Any) -> Any:
    """A code object's constant: literals, tuples and frozensets of them, nested code."""
    if isinstance(value, types.CodeType):
        return code_fingerprint(value)
    if type(value) is tuple:
        return ("tuple", *(_constant(v) for v in value))
    if type(value) is frozenset:   # in its order, as a loop over it visits it (see ``_Walk._enter``)
        return ("frozenset", *(_constant(v) for v in value))
    return (type(value).__name__, repr(value))


def imported_modules(code: types.CodeType) -> frozenset[str]:
    """The modules ``code`` and the functions defined inside it import (``import os`` in a body)."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname == "IMPORT_NAME"}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= imported_modules(const)
    return frozenset(names)


def code_fingerprint(code: types.CodeType) -> tuple:
    """What a code object computes: its bytecode, its exception table (which instructions each
    ``except`` covers: the same bytecode, a statement moved from a ``try`` body to its ``else``, catches
    less; keyed since 2026-11-28), constants (nested code included), names and signature (line numbers
    and the file name aside)."""
    return (code.co_qualname, code.co_code, code.co_exceptiontable, tuple(_constant(c) for c in code.co_consts),
            code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars, code.co_argcount,
            code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags)


class _Walk:
    def __init__(self) -> None:
        self.parts: list[Any] = []
        self.seen: dict[int, int] = {}
        self.alive: list[Any] = []   # every object whose id is in ``seen``: no id is reused mid-walk
        self.module_names: dict[int, set[str]] = {}   # a module's id -> the attributes described

    def add(self, *part: Any) -> None:
        self.parts.append(part)

    def again(self, value: Any) -> bool:
        """Whether ``value`` was described already (then says which one it is); marks it otherwise."""
        index = self.seen.get(id(value))
        if index is not None:
            self.add("again", index)
            return True
        if len(self.seen) >= MAX_VALUES:
            raise NotStable(f"it reaches more than {MAX_VALUES} values")
        self.seen[id(value)] = len(self.seen)
        self.alive.append(value)
        return False

    # ---- functions ----------------------------------------------------------------------------------
    def function(self, fn: types.FunctionType) -> None:
        code = fn.__code__
        names = code_names(code)
        if names & READS_BY_NAME:   # what it reads there is named by a string: no name says which
            raise NotStable(f"it reads {', '.join(sorted(names & READS_BY_NAME))}, by names the code does not hold")
        self.add("function", code_fingerprint(code))
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            self.add("cell", name)
            try:
                self.value(cell.cell_contents, names)
            except ValueError:  # a cell not yet filled (a recursive inner function)
                self.add("empty")
        for module in sorted(imported_modules(code)):
            if not _library(module):
                raise NotStable(f"it imports {module}, a module outside jitgrad and numpy")
            if names & PROCESS_STATE:
                raise NotStable(f"it imports {module} and names {', '.join(sorted(names & PROCESS_STATE))}")
            self.add("import", module)
        module_globals = fn.__globals__
        for name in sorted(global_names(code)):
            value = module_globals.get(name, MISSING)
            self.add("global", name)
            if value is not MISSING:
                self.value(value, names)
            elif name in PURE_BUILTINS and hasattr(builtins, name) or _builtin_exception(name):
                self.add("builtin", name, type(getattr(builtins, name)).__name__)
            elif hasattr(builtins, name):
                raise NotStable(f"it calls the builtin {name}(), whose result may depend on the process")
            else:
                self.add("missing")
        self.add("defaults")
        for value in fn.__defaults__ or ():
            self.value(value, names)
        self.add("kwdefaults")
        for name, value in sorted((fn.__kwdefaults__ or {}).items()):
            self.add("kwdefault", name)
            self.value(value, names)
        for name, value in sorted(vars(fn).items()):  # ``f.scale = 2`` read as ``f.scale``
            if name not in ("__wrapped__", "__doc__"):
                self.add("function attribute", name)
                self.value(value, names)

    # ---- values -------------------------------------------------------------------------------------
    def value(self, value: Any, names: frozenset[str]) -> None:
        kind = type(value)
        if kind in _SCALARS:
            self.add(kind.__name__, repr(value))
        elif isinstance(value, np.generic):
            self.add("numpy", value.dtype.str, repr(value.item()))
        elif kind is np.dtype or isinstance(value, np.dtype):
            self.add("dtype", repr(value))
        elif isinstance(value, Tensor) or kind is np.ndarray:
            raise NotStable(f"it reads a {'tensor' if isinstance(value, Tensor) else 'numpy array'} from outside "
                            "its arguments")
        elif not self.again(value):
            self._enter(value, kind, names)
        elif kind is types.ModuleType:   # met again from code naming other attributes: those too
            self._attributes(value, names)

    def _enter(self, value: Any, kind: type, names: frozenset[str]) -> None:
        if kind is list or kind is tuple or kind is collections.deque:
            self.add(kind.__name__, len(value))
            for item in value:
                self.value(item, names)
        elif kind is dict:
            self.add("dict", len(value))
            for key, item in value.items():
                if type(key) not in _SCALARS:
                    raise NotStable(f"it reads a dict keyed by {type(key).__name__}")
                self.add("key", type(key).__name__, repr(key))
                self.value(item, names)
        elif kind is set or kind is frozenset:
            if not all(type(v) in _SCALARS for v in value):
                raise NotStable("it reads a set of values other than numbers and strings")
            # in its order, not sorted: a loop over a set of strings visits them in an order that the
            # hash seed sets, another in each process (``PYTHONHASHSEED``), and the trace bakes it in;
            # sorted, a process ran the stored program's order, silently, until 2026-11-28
            self.add(kind.__name__, *(f"{type(v).__name__}:{v!r}" for v in value))
        elif kind is types.ModuleType:
            self._module(value, names)
        elif kind is types.FunctionType:
            if _library(value.__module__):
                self.add(*_named(value))
                for cell in value.__closure__ or ():  # a library's function made by a factory
                    self.value(cell.cell_contents, names)
            else:
                self.function(value)
        elif kind is types.MethodType:
            self.add("method")
            self.value(value.__func__, names)
            self.value(value.__self__, names)
        elif kind is functools.partial:
            self.add("partial")
            self.value(value.func, names)
            self.value(value.args, names)
            self.value(value.keywords, names)
        elif isinstance(value, (types.BuiltinFunctionType, np.ufunc)):
            owner = getattr(value, "__self__", None)
            module = getattr(value, "__module__", None) or getattr(owner, "__name__", None)
            if not (owner is None or isinstance(owner, types.ModuleType)) or not _library(module):
                raise NotStable(f"it calls {getattr(value, '__qualname__', value)!s}, outside jitgrad and numpy")
            self.add("builtin", module, *_named(value))
        elif isinstance(value, type):
            if not _library(value.__module__):
                raise NotStable(f"it reads the class {value.__qualname__}, which is not jitgrad's or numpy's")
            self.add("class", *_named(value))
        elif _library(kind.__module__) and isinstance(getattr(value, "__qualname__", None), str) \
                and _library(getattr(value, "__module__", None)):  # numpy's array-function dispatchers
            self.add("callable", *_named(value))
        elif _library(kind.__module__) and isinstance(getattr(value, "__wrapped__", None), types.FunctionType):
            # a compiled function (``jg.compile``), a library's decorator: it runs the function it wraps,
            # described as the user's (by its name alone, an edit of it, or of a global it read, found
            # the entry of the code before, until 2026-11-28)
            self.add("wraps", kind.__module__, kind.__qualname__)
            self.value(value.__wrapped__, names)
            for name, attribute in wrapper_attributes(value, names):   # ``f.scale`` set on the compiled ``f``
                self.add("attr", name)
                self.value(attribute, names)
        elif (kind.__module__, kind.__qualname__) in _NAMED_OBJECTS and isinstance(getattr(value, "name", None), str):
            self.add("jitgrad object", kind.__qualname__, value.name)
        else:
            raise NotStable(f"it reads a {kind.__module__}.{kind.__qualname__} object, whose state is not "
                            "described across processes")

    def _module(self, module: types.ModuleType, names: frozenset[str]) -> None:
        """A module by name, and the attributes the code names by value (a library's too: a patch of
        ``jitgrad.nn.functional.relu`` made before the call is then seen). Other libraries' modules,
        the standard library's included, are refused: their state is not described."""
        name = module.__name__
        if not _library(name) and _installed_library(module):
            raise NotStable(f"it reads the module {name}, a library outside jitgrad and numpy")
        self.add("module", name)
        self._attributes(module, names)

    def _attributes(self, module: types.ModuleType, names: frozenset[str]) -> None:
        """The attributes of ``module`` that ``names`` holds and no code met before named: a module
        is met again from each function naming it (``helper`` reads ``config.B``, the function
        ``config.A``), and each names its own (``config.A`` went undescribed, its entry silently
        stale, before 2026-11-28)."""
        name = module.__name__
        library = _library(name)
        described = self.module_names.setdefault(id(module), set())
        if not library and names & FORMATS:   # ``"{0.scale}".format(config)``: any attribute of it
            names = names | {n for n in module.__dict__ if not (n.startswith("__") and n.endswith("__"))}
        new = sorted(names - described)
        described.update(new)
        lazy = "__getattr__" in module.__dict__   # numpy makes ``np.random`` on first use
        for attribute in new:
            if attribute in module.__dict__:
                value = module.__dict__[attribute]
            elif not lazy:
                continue
            elif not library:
                raise NotStable(f"it reads the module {name}, whose __getattr__ makes attributes on use")
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        value = getattr(module, attribute)
                    except Exception:  # noqa: BLE001 - no such attribute: the name is another object's
                        continue
            if library and attribute in PROCESS_STATE:
                raise NotStable(f"it reads {name}.{attribute}, which depends on the process")
            self.add("attr", attribute)
            self.value(value, names)


def _installed_library(module: types.ModuleType) -> bool:
    """Whether ``module`` belongs to the standard library or an installed package, not to the user."""
    if module.__name__.partition(".")[0] in sys.stdlib_module_names:
        return True
    path = getattr(module, "__file__", None)
    return path is None or "site-packages" in path or "dist-packages" in path


def fingerprint(fn: Callable) -> str:
    """A hash of what ``fn``'s trace depends on beyond its arguments (see the module docstring);
    raises ``NotStable`` saying what it reads that has no such description."""
    walk = _Walk()
    if isinstance(fn, types.FunctionType):
        walk.function(fn)
    else:
        walk.value(fn, frozenset())
    return hashlib.sha256(repr(walk.parts).encode()).hexdigest()


__all__ = ["FORMATS", "MAX_VALUES", "NotStable", "PROCESS_STATE", "PURE_BUILTINS", "READS_BY_NAME", "STABLE_LIBRARIES",
           "code_fingerprint", "fingerprint"]
