"""What a compiled function can read besides its arguments, found by walking from its code.

jitgrad does not interpret bytecode, so it cannot see exactly which outside values a function reads.
It over-approximates, from the names the code uses: the cells of its closure, the globals its code
reads or writes, its default arguments, and from each of
those, the items of lists, tuples and dicts, the attributes of objects (and of their classes), and the
same again for every user function, method or class reached. Libraries (numpy, jitgrad's own
internals, the standard library...) are not entered.

Each value found is recorded with its ``Source``:

- tensors and numpy arrays, by identity: a tensor the trace reads becomes a graph input read afresh
  from its sources at every call (a numpy array, when the trace makes a tensor of it); every tensor is
  guarded by its descriptor (shape, dtype, requires_grad, ``.grad`` or not...: ``guards``), which Python
  code may read without the trace reading the tensor; a numpy array
  is also guarded by its values, since what the function computes from it in numpy is baked into the
  graph where no tracer sees it;
- a *run-time number*: an int or float (or a tuple of them) a dict subclass names in its class attribute
  ``runtime_numbers`` (an optimizer's ``lr``, ``jitgrad.optim.state.ParamGroup``), which becomes an
  input of the graph read at every call, guarded only by its type;
- a guard for everything else: a Python number, string, bool or None by value; a function, class or
  other object by identity (a rebinding changes what the code would run); a list or tuple by length
  and a dict by its keys (what a loop over it would visit);
- the mutable places (cells, globals, containers, objects' attributes), whose contents are
  snapshotted so that a change made while tracing (a Python side effect) is found, undone and reported.

The walk is bounded (``MAX_VALUES``); a function reaching more than that runs eagerly, with a warning
that says so, rather than with guards that would miss a change.
"""
from __future__ import annotations

import array
import collections
import collections.abc
import dis
import functools
import os
import random
import sys
import types
from typing import Any, Callable

import numpy as np

from ..tensor import Tensor
from .guards import array_contents, typed_keys, unguarded_array
from .sources import Source

MAX_VALUES = 5000
SCALAR_TYPES = (int, float, bool, complex, str, bytes, type(None))
_LIBRARIES = frozenset({"numpy", "numba", "scipy", "torch", "jax", "jaxlib", "llvmlite", "autograd", "jitgrad",
                        "_pytest", "pytest", "hypothesis"}) | frozenset(sys.stdlib_module_names)
# jitgrad's packages whose objects hold the user's data: a model's tensors, an optimizer's settings.
_USER_FACING_PACKAGES = ("jitgrad.nn", "jitgrad.optim")
# (and ``threading.local()``, whose attributes a call reads as its own thread's: until 2026-11-29 a value
# set there between calls ran the old program)
_RECORD_CLASSES = frozenset({("types", "SimpleNamespace"), ("argparse", "Namespace"), ("_thread", "_local")})


def _library(module_name: str | None) -> bool:
    return bool(module_name) and module_name.partition(".")[0] in _LIBRARIES


def _library_class(kind: type) -> bool:
    """Whether objects of ``kind`` are a library's, not entered. The user's model (``jitgrad.nn``), its
    optimizer (``jitgrad.optim``) and the standard library's plain records of values
    (``SimpleNamespace``, argparse's ``Namespace``) are entered: what the function reads from them is
    the user's data, which must be guarded. An optimizer's groups name their ``lr`` as a run-time
    number, and its ``state`` keeps its tensors in lists, so that each has a source (``jitgrad.optim.state``)."""
    module = kind.__module__ or ""
    if (module, kind.__qualname__) in _RECORD_CLASSES:
        return False
    return _library(module) and not any(module == p or module.startswith(p + ".") for p in _USER_FACING_PACKAGES)


def _plain(value: Any, numpy: bool = False) -> bool:
    """Whether ``value`` compares by value alone: a number, string, bytes or None (with ``numpy``, a numpy
    scalar too), or a tuple of them."""
    if type(value) is tuple:
        return all(_plain(v, numpy) for v in value)
    return type(value) in SCALAR_TYPES or numpy and isinstance(value, np.generic)


def _literal(key: Any) -> bool:
    """Whether a dict key can be written into a guard's source (a number, a string, a tuple of them)."""
    if type(key) is tuple:
        return all(_literal(k) for k in key)
    return type(key) in SCALAR_TYPES and key == key  # a NaN key reads back as another NaN


def code_names(code: types.CodeType) -> frozenset[str]:
    """Every global and attribute name ``code`` and the functions defined inside it use."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= code_names(const)
    return frozenset(names)


# Names whose use lets code read globals, or a module's attributes, that it does not name: the walk then
# takes every one (of the function's module, or of each user module it reaches).
_READ_ANY_GLOBAL = frozenset({"globals", "eval", "exec"})
# (``"{0.scale}".format(config)`` reads an attribute named in a string too.)
_READ_ANY_ATTRIBUTE = frozenset({"vars", "getattr", "__dict__", "__getattribute__", "eval", "exec", "format",
                                 "format_map"})
# Names whose use moves an iterator the walk reaches (``next(SCHEDULE)``, ``gen.send(v)``).
_ADVANCES_ITERATORS = frozenset({"next", "__next__", "send"})
_GLOBAL_OPS = frozenset({"LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME", "STORE_NAME", "DELETE_NAME"})


def global_names(code: types.CodeType) -> frozenset[str]:
    """The names ``code`` and the functions defined inside it read or write as globals: a name used
    only as an attribute (``opt.step()``) is not one, so a module-level ``for step in range(n):``
    is not guarded (and recompiled on) by a function that calls ``opt.step()``."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname in _GLOBAL_OPS}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= global_names(const)
    return frozenset(names)


class Snapshot:
    """A mutable place and what it held when the trace began: a cell's contents, a global's value, a
    list's items, a dict's items, an object's attributes. ``kind`` is "cell", "global", "list", "dict"
    or "object"; ``holder`` the cell, the globals dict, the list, the dict or the object; ``key`` the
    global's name, None otherwise. (Plain classes here: a warm process imports this module, and a
    dataclass costs about 3 M instructions to make; see ``compiled_function.py``.)"""

    def __init__(self, source: Source, kind: str, holder: Any, key: Any, before: Any) -> None:
        self.source, self.kind, self.holder, self.key, self.before = source, kind, holder, key, before


class FreeVariables:
    """What a function can reach: the tensors and arrays (by id, with every source each was found at),
    the guards ``(source, kind, value then)``, the snapshots of mutable places, why what it reads cannot
    be guarded (``unguardable``: too many values...), ``objects``, the tensors and arrays above by
    id, kept alive, and ``calls_type``, the name of a function reached whose code calls ``type()``,
    which names a symbolic number's own class (``fx.numbers``), not the number's: the compiled function
    and the helpers its globals, closure and defaults hold, which the numbers it is given reach, not the
    methods of the objects it reaches (a model's ``type(x) is tuple`` would keep every number constant)."""

    def __init__(self) -> None:
        self.tensors: dict[int, list[Source]] = {}
        self.arrays: dict[int, list[Source]] = {}
        self.guards: list[tuple[Source, str, Any]] = []
        self.snapshots: list[Snapshot] = []
        self.unguardable: str | None = None
        self.objects: dict[int, Any] = {}
        self.calls_type: str | None = None   # the first user function whose code calls the builtin ``type``

    def sources_of(self, value: Any) -> list[Source] | None:
        table = self.tensors if isinstance(value, Tensor) else self.arrays
        return table.get(id(value))

    def tensors_found(self) -> list[Tensor]:
        return [self.objects[i] for i in self.tensors]


MISSING = object()  # a global the code names that does not exist (yet): a side effect may create it
# What reads the process's environment variables: a function reaching one is guarded by the whole
# environment (``guards.environment``), which the trace bakes into the graph (``float(os.environ["S"])``).
_ENVIRONMENT_READERS = tuple(r for r in (os.environ, getattr(os, "environb", None), os.getenv,
                                         getattr(os, "getenvb", None)) if r is not None)
_ENVIRONMENT = Source("global", vars(os), "environ")


class _Walker:
    def __init__(self) -> None:
        self.found = FreeVariables()
        self.visited: set[int] = set()
        self.functions: set[int] = set()
        self.module_names: dict[int, set[str]] = {}   # a user module's id -> the attributes walked
        self.alive: list[Any] = []  # every object whose id is in the sets above: no id is reused mid-walk
        self.class_depth = 0   # inside a class's attributes: its functions are methods (``calls_type``)

    # ---- roots --------------------------------------------------------------------------------------
    def function(self, fn: Callable, method: bool = False) -> None:
        """A function's cells, the globals its code names and its defaults."""
        if id(fn) in self.functions:
            return
        self.functions.add(id(fn))
        self.alive.append(fn)
        code = fn.__code__
        names = code_names(code)
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            source = Source("cell", cell, name)
            try:
                value = cell.cell_contents
            except ValueError:  # a cell not yet filled (a recursive inner function)
                continue
            self.found.snapshots.append(Snapshot(source, "cell", cell, None, value))
            self.value(value, source, names)
        module_globals = fn.__globals__
        read = global_names(code)
        if "type" in read and "type" not in module_globals and not method and self.found.calls_type is None:
            self.found.calls_type = getattr(fn, "__qualname__", "a function")
        if read & _READ_ANY_GLOBAL:   # ``globals()["scale"]``, ``eval("scale")``: any global may be read
            read = read | {name for name in module_globals if name != "__builtins__"}
        for name in sorted(read):
            value = module_globals.get(name, MISSING)
            source = Source("global", module_globals, name)
            self.found.snapshots.append(Snapshot(source, "global", module_globals, name, value))
            if value is not MISSING:
                self.value(value, source, names)
        for i, value in enumerate(fn.__defaults__ or ()):
            self.value(value, Source("default", fn, i), names)
        for name, value in (fn.__kwdefaults__ or {}).items():
            self.value(value, Source("kwdefault", fn, name), names)

    # ---- values -------------------------------------------------------------------------------------
    def value(self, value: Any, source: Source, names: frozenset[str]) -> None:
        if isinstance(value, Tensor):
            self.found.tensors.setdefault(id(value), []).append(source)
            self.found.objects[id(value)] = value
            # guarded by its descriptor even when the trace never reads it as a tensor: the function may
            # read its shape, dtype, requires_grad or whether it has a .grad in Python (x * w.shape[0])
            self.found.guards.append((source, "tensor", value))
            return
        kind = type(value)
        if kind is np.ndarray:
            self.found.arrays.setdefault(id(value), []).append(source)
            self.found.objects[id(value)] = value
            self.found.guards.append((source, "array", value))
            if array_contents(value) is None and self.found.unguardable is None:
                self.found.unguardable = unguarded_array(value, source.describe())
            elif value.flags.writeable and id(value) not in self.visited:   # ``arr[0] += 1`` inside
                self.visited.add(id(value))
                self.found.snapshots.append(Snapshot(source, "array", value, None, value.copy()))
            return
        if kind in SCALAR_TYPES or isinstance(value, (np.generic, np.dtype, bytearray, memoryview, array.array)):
            self.found.guards.append((source, "value", value))
            return
        if self.found.unguardable is not None:
            return
        if id(value) in self.visited:  # reached again by another path: that path must still hold it
            if kind is types.ModuleType:
                self._module(value, source, names)
            elif isinstance(value, tuple) or _guarded_by_identity(value):
                self.found.guards.append((source, "identity", value))
            elif kind in (set, frozenset) and all(_plain(v, numpy=True) for v in value):
                self.found.guards.append((source, "value", frozenset(value)))
            return
        if len(self.visited) >= MAX_VALUES:
            self.found.unguardable = (f"it reaches more than {MAX_VALUES} Python objects from its closure, "
                                   f"globals and defaults (the last at {source.describe()}), too many to "
                                   "guard; pass the values it reads as arguments")
            return
        self.visited.add(id(value))
        self.alive.append(value)
        self._enter(value, kind, source, names)

    def _enter(self, value: Any, kind: type, source: Source, names: frozenset[str]) -> None:
        if kind is list or kind is collections.deque or isinstance(value, tuple):
            self.found.guards.append((source, "length", len(value)))
            if not isinstance(value, tuple):
                self.found.guards.append((source, "identity", value))
                self.found.snapshots.append(Snapshot(source, "list", value, None, list(value)))
            for i, item in enumerate(value):
                self.value(item, source.item(i), names)
        elif isinstance(value, dict):  # OrderedDict, defaultdict, Counter and the user's subclasses too
            self.found.guards.append((source, "identity", value))
            # keys equal to Python but not to the code (``1``, ``1.0``, ``True``; ``0.0``, ``-0.0``) by type
            # and spelling: until 2026-11-29 a dict keyed by ``1.0`` ran the program traced for ``1``
            keys = tuple(value)
            typed = not all(type(k) is str for k in keys)
            self.found.guards.append((source, "typed keys" if typed else "keys", typed_keys(keys) if typed else keys))
            self.found.snapshots.append(Snapshot(source, "dict", value, None, dict(value)))
            runtime = getattr(kind, "runtime_numbers", frozenset())
            for key, item in value.items():
                if key in runtime and type(item) in (int, float):
                    self.found.guards.append((source.entry(key), "number", item))
                    continue
                if key in runtime and type(item) is tuple and all(type(v) in (int, float) for v in item):
                    self.found.guards.append((source.entry(key), "length", len(item)))
                    self.found.guards.extend((source.entry(key).item(i), "number", v) for i, v in enumerate(item))
                    continue
                if not _literal(key):
                    self.found.unguardable = (f"it reads {source.describe()}, a {kind.__name__} keyed by "
                                              f"{type(key).__name__}, whose entries cannot be guarded; pass "
                                              "the values it reads as arguments")
                    return
                self.value(item, source.entry(key), names)
            if not _library_class(kind):
                self._object(value, kind, source, names)
        elif kind in (set, frozenset):
            # (tuples of them too: until 2026-11-28 ``pairs.add((3, 4))`` ran the old program; numpy scalars
            # too, and a set of anything else runs the function eagerly: until 2026-11-29 it had no guard)
            if all(_plain(v, numpy=True) for v in value):
                self.found.guards.append((source, "value", frozenset(value)))
            elif self.found.unguardable is None:
                other = next(type(v).__name__ for v in value if not _plain(v, numpy=True))
                self.found.unguardable = (f"it reads {source.describe()}, a set holding {other} objects, whose "
                                          "items no guard compares; pass the values it reads as arguments")
            if kind is set:   # ``seen.add(...)`` inside
                self.found.snapshots.append(Snapshot(source, "set", value, None, set(value)))
        elif kind is types.ModuleType:
            self._module(value, source, names)
        elif kind is types.FunctionType:
            if not _library(value.__module__):
                self.found.guards.append((source, "identity", value))
                self.found.guards.append((source.attr("__code__"), "identity", value.__code__))
                self.found.snapshots.append(Snapshot(source, "object", value, None, dict(vars(value))))
                self.function(value, method=self.class_depth > 0)
                self._attributes(value, vars(value), source, names)  # ``f.scale``, read through a global
                if "__globals__" in names:   # ``helper.__globals__["scale"]``: any global of its module
                    for name, item in list(value.__globals__.items()):
                        if name != "__builtins__":
                            self.value(item, source.attr("__globals__").entry(name), names)
            else:   # ``ACT = jg.tanh``, rebound to ``jg.sigmoid``: see ``_guarded_by_identity``
                self._library_value(value, source)
        elif kind is types.MethodType:
            self.value(value.__func__, source.attr("__func__"), names)
            self.value(value.__self__, source.attr("__self__"), names)
        elif kind is functools.partial:
            self.found.guards.append((source, "identity", value))
            self.value(value.func, source.attr("func"), names)
            self.value(value.args, source.attr("args"), names)
            self.value(value.keywords, source.attr("keywords"), names)
        elif isinstance(value, type):
            if not _library_class(value):
                self.found.guards.append((source, "identity", value))
                # ``Counter.calls += 1`` inside: a class's attributes are a place too
                self.found.snapshots.append(Snapshot(source, "object", value, None, dict(vars(value))))
                users = not _library(value.__module__)   # the user's class, not jitgrad's ``Linear``
                if users:
                    # which attributes it has (one set later may shadow a base's) and, through its user
                    # base classes, those it inherits: until 2026-11-28 ``Base.scale = 5.0`` or a new
                    # ``Base.f`` ran the old program for ``obj.scale`` of a ``Child(Base)``
                    self.found.guards.append((source.attr("__dict__"), "keys", tuple(vars(value))))
                self.class_depth += 1
                try:
                    self._attributes(value, vars(value), source, names, methods=users)
                finally:
                    self.class_depth -= 1
                for i, base in enumerate(value.__mro__[1:] if users else (), 1):
                    if not _library(base.__module__):
                        self.value(base, source.attr("__mro__").item(i), names)
            else:
                self.found.guards.append((source, "identity", value))
        elif isinstance(value, (types.BuiltinFunctionType, types.MethodWrapperType, types.WrapperDescriptorType,
                                types.MethodDescriptorType, staticmethod, classmethod, property)):
            self.found.guards.append((source, "identity", value))
            self._descriptor(value, source, names)
            owner = getattr(value, "__self__", None)   # ``take = iter(schedule).__next__``: the iterator's
            if getattr(value, "__name__", "") in _ADVANCES_ITERATORS and isinstance(owner, collections.abc.Iterator):
                self._iterator(owner, source)
        else:
            self._object(value, kind, source, names)

    def _module(self, module: types.ModuleType, source: Source, names: frozenset[str]) -> None:
        """A user module's attributes that the code reaching it names. A module reached again, from code
        naming other attributes, has those walked then: ``helper`` reading ``config.B`` reached
        ``config`` first, and ``config.A``, read by the function itself, went unguarded (a silently
        stale result, in-process and from the warm-start index, before 2026-11-28)."""
        if _library(module.__name__):
            self._library_module(module, source, names)
            return
        walked = self.module_names.get(id(module))
        if walked is None:
            walked = self.module_names[id(module)] = set()
            # ``config.steps += 1`` inside (its own globals are snapshotted by name, ``function``)
            self.found.snapshots.append(Snapshot(source, "object", module, None, dict(module.__dict__)))
        if names & _READ_ANY_ATTRIBUTE:   # ``vars(config)["scale"]``, ``getattr(config, name)``
            names = names | (set(module.__dict__) - {"__builtins__"})   # Python's own: not the user's values
        new = sorted(names - walked)
        walked.update(new)
        computed = module.__dict__.get("__getattr__")   # PEP 562: ``config.scale`` made on each read
        if computed is not None and "__getattr__" not in walked:
            walked.add("__getattr__")
            self.value(computed, source.attr("__getattr__"), names)
        for name in new:
            if name in module.__dict__:
                self.value(module.__dict__[name], source.attr(name), names)
            elif computed is not None:
                # read through the module's ``__getattr__`` at each call, as the code reads it: until
                # 2026-11-29 such an attribute had no guard, and a changed value ran the old program
                value = _attribute(module, name)
                if value is not MISSING:
                    self.value(value, source.attr(name), names)

    def _library_module(self, module: types.ModuleType, source: Source, names: frozenset[str]) -> None:
        """A library's module (``jitgrad.nn.functional``, ``numpy``, ``os``) is not entered, but the
        attributes the code names are guarded where they sit: a number or a string by value, a module
        walked the same way, anything else by identity. A patch between calls (``F.relu = mine``, a test's
        monkeypatch) ran the program traced with the old function, silently, until 2026-11-29."""
        walked = self.module_names.setdefault(id(module), set())
        new = sorted(names - walked)
        walked.update(new)
        for name in new:
            value = module.__dict__.get(name, MISSING)
            if value is MISSING:
                continue
            if type(value) is types.ModuleType or type(value) in SCALAR_TYPES:
                self.value(value, source.attr(name), names)
            else:
                self._library_value(value, source.attr(name))

    def _library_value(self, value: Any, source: Source) -> None:
        """A library's function, class or object, guarded by identity and not entered; one that reads
        the process's environment (``os.environ``, ``os.getenv``) also by the environment's contents."""
        self.found.guards.append((source, "identity", value))
        if any(value is reads for reads in _ENVIRONMENT_READERS):
            self.found.guards.append((_ENVIRONMENT, "environment", None))

    def _iterator(self, iterator: Any, source: Source) -> None:
        """``lr = next(SCHEDULE)``: a trace bakes the value in, and no guard sees the position move, so the
        function runs eagerly, untraced (until 2026-11-29 an iterator yielding the same value twice, as
        the two traces read it, ran that value at every call, silently: ``iter([0.1] * 5 + [0.01] * 95)``)."""
        if self.found.unguardable is None:
            self.found.unguardable = (f"it reads {source.describe()}, a {type(iterator).__name__} whose position "
                                      "no guard sees and a compiled call would not move; pass the values it "
                                      "yields as arguments")

    def _descriptor(self, value: Any, source: Source, names: frozenset[str]) -> None:
        inner = getattr(value, "__func__", None) or getattr(value, "fget", None)
        if isinstance(inner, types.FunctionType) and not _library(inner.__module__):
            self.function(inner, method=True)

    def _attributes(self, owner: Any, attributes: dict, source: Source, names: frozenset[str],
                    methods: bool = True) -> None:
        """The attributes of ``owner`` (its ``__dict__``): Python's own entries aside (``__module__``,
        ``__doc__``...), and special methods unless ``methods`` is False (jitgrad's classes): such as
        ``__mul__`` or ``__getattr__``, they run the user's code (``s * x``, ``cfg.anything``), and a
        global they read went unguarded until 2026-11-28."""
        for name, attribute in list(attributes.items()):
            if name.startswith("__") and name.endswith("__") and name not in ("__call__", "__wrapped__") and not (
                    methods and isinstance(attribute, (types.FunctionType, staticmethod, classmethod, property))):
                continue
            if isinstance(attribute, (staticmethod, classmethod, property)):
                # guarded as it sits in the dict: reading the attribute unwraps it (a classmethod into a
                # new bound method at every read), and a rebinding (``Act.fn = staticmethod(g)``) ran
                # the old function, silently, before 2026-11-28
                self.found.guards.append((source.attr("__dict__").entry(name), "identity", attribute))
                self._descriptor(attribute, source.attr(name), names)
                continue
            self.value(attribute, source.attr(name), names)

    def _object(self, value: Any, kind: type, source: Source, names: frozenset[str]) -> None:
        wrapped = _attribute(value, "__wrapped__")  # functools.wraps (a compiled function, a decorator)
        if _library_class(kind):   # not entered, but which object it is (``DT = jg.float32``, a ufunc)
            self._library_value(value, source)
            if names & _ADVANCES_ITERATORS and isinstance(value, collections.abc.Iterator):
                self._iterator(value, source)
            if isinstance(wrapped, types.FunctionType):
                self.value(wrapped, source.attr("__wrapped__"), names)
                # ``f.scale``, read inside where ``f`` is the compiled function (or a library decorator's
                # wrapper) holding it: until 2026-11-29 ``f.scale = 3.0`` between calls ran the old program
                for name, attribute in wrapper_attributes(value, names):
                    self.value(attribute, source.attr(name), names)
            return
        self.found.guards.append((source, "identity", value))
        self.value(kind, source.attr("__class__"), names)
        attributes = _attribute(value, "__dict__")
        if isinstance(attributes, dict):
            self.found.snapshots.append(Snapshot(source, "object", value, None, dict(attributes)))
            # which attributes the object has: one set later may shadow a class attribute read before
            self.found.guards.append((source.attr("__dict__"), "keys", tuple(attributes)))
            self._attributes(value, attributes, source, names)
        for slot in _slots(kind):
            item = _attribute(value, slot)
            if item is not MISSING:
                self.value(item, source.attr(slot), names)


def wrapper_attributes(wrapper: Any, names: frozenset[str]) -> list[tuple[str, Any]]:
    """The attributes of a wrapper object (``jitgrad.compile``'s, ``functools.lru_cache``'s) that code
    naming ``names`` may read, without the wrapper's own state (``own_attributes``)."""
    attributes = _attribute(wrapper, "__dict__")
    if not isinstance(attributes, dict):
        return []
    own = _attribute(wrapper, "own_attributes")
    own = own if isinstance(own, frozenset) else frozenset()
    return [(name, attributes[name]) for name in sorted(names & attributes.keys() - own)]


def _attribute(value: Any, name: str) -> Any:
    """``getattr(value, name)``, or ``MISSING`` when it has none: an object's ``__getattr__`` may raise
    anything for a name it does not know (``return CONFIG[name]`` raises ``KeyError``), which came out of
    the call until 2026-11-29 where eager mode never asks for the name."""
    try:
        return getattr(value, name)
    except Exception:  # noqa: BLE001 - the user's __getattr__: whatever it raises, the name is not there
        return MISSING


def _guarded_by_identity(value: Any) -> bool:
    """Whether the walk guards ``value``'s identity where it first meets it (containers, functions,
    classes and objects, a library's too): a second path to it gets the same guard, so that rebinding
    either path (``group["betas"] = (0.5, 0.9)`` when the tuple was shared with ``defaults``) is seen. A
    tuple, guarded by its items the first time, is guarded by identity on the other paths. A library's
    function, class or object is not entered but is guarded: ``ACT = jg.tanh`` rebound to
    ``jg.sigmoid``, or ``DT = np.float32`` to ``np.int32``, ran the old program until 2026-11-28."""
    return not isinstance(value, (types.ModuleType, types.MethodType, set, frozenset))


def _slots(kind: type) -> list[str]:
    slots: list[str] = []
    for klass in kind.__mro__:
        declared = klass.__dict__.get("__slots__", ())
        slots += [declared] if isinstance(declared, str) else [s for s in declared if s not in ("__dict__", "__weakref__")]
    return slots


def find_free_variables(fn: Callable, object_arguments: list[tuple[Source, Any]]) -> FreeVariables:
    """Walks from ``fn`` (a function, a bound method, a callable object) and from the arguments that are
    objects (not tensors, numbers or containers), given with their sources."""
    walker = _Walker()
    if isinstance(fn, types.FunctionType):
        walker.function(fn)
        # its code, which a reloader replaces in place (IPython's autoreload sets ``f.__code__``): the
        # same holds for every user function the walk reaches (``_enter``)
        walker.found.guards.append((Source("held", fn, None).attr("__code__"), "identity", fn.__code__))
        # its own attributes (``f.scale = 2``, read inside as ``f.scale``): held by the function itself
        walker._attributes(fn, vars(fn), Source("held", fn, None), code_names(fn.__code__))
        walker.found.snapshots.append(Snapshot(Source("held", fn, None), "object", fn, None, dict(vars(fn))))
    else:  # a bound method, a callable object, a functools.partial: walked from the object itself
        walker.value(fn, Source("held", fn, None), frozenset())
    names = code_names(fn.__code__) if isinstance(fn, types.FunctionType) else frozenset()
    for source, value in object_arguments:
        walker.value(value, source, names)
    walker.found.snapshots += random_state_snapshots()
    return walker.found


def random_state_snapshots() -> list[Snapshot]:
    """Snapshots of the global states of Python's ``random`` and of ``numpy.random``: a draw from them
    while tracing is a side effect (the trace's value would be baked in, or a branch taken on it), and
    undoing it leaves the caller's sequence of draws as eager mode has it. Kind "rng"; ``before`` is
    the state as ``random_state`` reads it."""
    return [Snapshot(Source("global", vars(module), name), "rng", module, None, random_state(module))
            for module, name in ((random, "random's state"), (np.random, "numpy.random's state"))]


def random_state(module: Any) -> tuple:
    """``module``'s global random state, comparable with ``==`` (numpy's key array as bytes), with
    what ``setstate`` takes last."""
    if module is random:
        state = random.getstate()
        return state, state
    name, keys, position, has_gauss, gauss = np.random.get_state()
    return (name, keys.tobytes(), position, has_gauss, gauss), (name, keys, position, has_gauss, gauss)


__all__ = ["FreeVariables", "MAX_VALUES", "MISSING", "SCALAR_TYPES", "Snapshot", "code_names", "find_free_variables",
           "random_state", "random_state_snapshots", "wrapper_attributes"]
