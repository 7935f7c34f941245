"""Runs numba's object code for a kernel without numba: a process whose kernels all come from the disk
cache never imports numba (0.26 s) nor initialises numba's target (0.34 s), and on x86-64 Linux, where
``backends/elf_loader.py`` links the object, never loads llvmlite either (elsewhere, or for an object
that loader refuses, LLVM's JIT links it, as for llvm_cpu's objects).

What numba compiled for a kernel is an ELF object whose code names symbols it does not define:

- numba's runtime helpers (``NRT_*``, ``numba_*``), defined in numba's small C extension modules
  (``numba/_helperlib``, ``numba/_dynfunc``, ``numba/core/runtime/_nrt_python``), which are loaded by
  file path without running the ``numba`` package, and bound under the names numba gives them;
- ``numba_unpickle`` and ``numba_runtime_build_excinfo_struct``, which build the exception a kernel
  raises from pickled data in the object: numba's versions import numba and unpickle. Here they look
  the data up in the kernel's exception table (``KernelObject.exceptions``, plain data written when
  the kernel was compiled, see ``object_code.py``), so nothing is unpickled; bytes the table does not
  hold belong to a kernel numba compiled in this process, and go to numba's own helper;
- the BLAS routines the backend registers (``numpy_blas.py``), the Python C API, libc and libm, from
  this process.

Every symbol the object leaves undefined (read from the object's own symbol table) must resolve before
the object is linked (LLVM's JIT aborts the process on a symbol it cannot find). Any problem
raises ``LoadFailure`` and the caller compiles instead. The callable made is numba's own CPython wrapper
around the kernel (``_dynfunc.make_function``, as numba's dispatcher holds it), called with exactly the
arrays the kernel was compiled for: ``CompiledGraph`` checks each argument's shape and dtype.
"""
from __future__ import annotations

import builtins
import ctypes
import functools
import importlib.machinery
import importlib.util
import os
import struct
import sys
import threading
import types
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import elf_loader

ENVIRONMENT_PREFIX = "_ZN08NumbaEnv"   # numba's name for the global holding a function's environment
_EXTENSIONS = {"helperlib": ("numba", "_helperlib"), "dynfunc": ("numba", "_dynfunc"),
               "nrt": ("numba", "core", "runtime", "_nrt_python")}
_SHN_UNDEF, _SHT_SYMTAB = 0, 2


class LoadFailure(Exception):
    """The object cannot be run here: the caller compiles the kernel instead (and says why)."""


@dataclass
class KernelObject:
    """What loading a kernel's object code needs: the object, the symbol of numba's CPython wrapper
    (the entry point: ``PyObject *(PyObject *closure, PyObject *args, PyObject *kwargs)``), and the
    exceptions its pickled data stands for (``object_code.describe_exception``'s dicts)."""

    code: bytes
    entry: str
    exceptions: list[dict[str, Any]] = field(default_factory=list)


# ---- the object's symbols -----------------------------------------------------------------------------
def elf_symbols(code: bytes) -> tuple[set[str], set[str]]:
    """The names ``code`` (a 64-bit little-endian ELF object) leaves undefined and those it defines,
    read from its symbol table; anything that is not such an object is a ``LoadFailure``."""
    if code[:4] != b"\x7fELF" or code[4:6] != b"\x02\x01":
        raise LoadFailure("the object is not a 64-bit little-endian ELF file")
    try:
        section_offset, = struct.unpack_from("<Q", code, 0x28)
        entry_size, count = struct.unpack_from("<HH", code, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", code, section_offset + i * entry_size) for i in range(count)]
        undefined: set[str] = set()
        defined: set[str] = set()
        for _, kind, _, _, offset, size, link, _, _, symbol_size in sections:
            if kind != _SHT_SYMTAB:
                continue
            names_offset, names_size = sections[link][4], sections[link][5]
            names = code[names_offset:names_offset + names_size]
            for position in range(offset + symbol_size, offset + size, symbol_size):  # 0: the null symbol
                name_at, info, _, index = struct.unpack_from("<IBBH", code, position)
                if not name_at or info & 0xF == 4:  # unnamed, or a file symbol
                    continue
                name = names[name_at:names.index(b"\0", name_at)].decode()
                (undefined if index == _SHN_UNDEF else defined).add(name)
    except (struct.error, ValueError, IndexError, UnicodeDecodeError) as error:
        raise LoadFailure(f"the object's symbol table cannot be read ({error})") from None
    return undefined, defined


# ---- numba's runtime, without numba --------------------------------------------------------------------
def _extension(parts: tuple[str, ...]) -> types.ModuleType:
    """numba's extension module ``parts``, the one numba uses if it is imported, else loaded from its
    file without importing the ``numba`` package (its module init needs only numpy)."""
    name = ".".join(parts)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec("numba")   # finds, does not import
    if spec is None or not spec.submodule_search_locations:
        raise LoadFailure("numba is not installed")
    folder = os.path.join(list(spec.submodule_search_locations)[0], *parts[1:-1])
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(folder, parts[-1] + suffix)
        if os.path.isfile(path):
            loader = importlib.machinery.ExtensionFileLoader(name, path)
            module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path, loader=loader))
            loader.exec_module(module)
            return module
    raise LoadFailure(f"numba's extension module {name} was not found in {folder}")


class _Exceptions:
    """The exception tables of the loaded kernels, behind the two symbols numba's code calls to build
    the exception a kernel raises."""

    def __init__(self, helperlib: types.ModuleType) -> None:
        self.table: dict[bytes, dict[str, Any]] = {}
        self.lock = threading.Lock()
        unpickle_type = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
        build_type = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object, ctypes.py_object)
        self._numba_unpickle = unpickle_type(helperlib.c_helpers["unpickle"])
        self._numba_build = build_type(helperlib.c_helpers["runtime_build_excinfo_struct"])
        self.unpickle = unpickle_type(self._unpickle)   # kept alive: LLVM holds their addresses
        self.build = build_type(self._build)

    def add(self, exceptions: list[dict[str, Any]]) -> None:
        with self.lock:
            for described in exceptions:
                self.table[bytes.fromhex(described["data"])] = described

    def _known(self, data: bytes) -> dict[str, Any] | None:
        described = self.table.get(data)
        if described is None and "numba" not in sys.modules:
            return {"class": "SystemError", "args": [{"value": "a kernel loaded from jitgrad's disk cache raised "
                                                               "an exception it has no description of"}],
                    "location": None}
        return described

    def _unpickle(self, data: int, size: int, hashed: int) -> Any:
        raw = ctypes.string_at(data, size)
        described = self._known(raw)
        if described is None:   # a kernel numba compiled in this process
            return self._numba_unpickle(data, size, hashed)
        return exception_info(described, ())

    def _build(self, static: bytes, runtime_args: tuple) -> Any:
        described = self._known(bytes(static))
        if described is None:
            return self._numba_build(static, runtime_args)
        return exception_info(described, tuple(runtime_args))


def _plain(value: Any) -> Any:
    return tuple(_plain(v) for v in value) if isinstance(value, list) else value


def exception_info(described: dict[str, Any], runtime_args: tuple) -> tuple:
    """The ``(class, args, location)`` numba's ``numba_do_raise`` takes, from its description: each
    argument a plain value, or one of ``runtime_args`` in order (numba's dynamic exceptions)."""
    kind = getattr(builtins, described["class"], None)
    if not (isinstance(kind, type) and issubclass(kind, BaseException)):
        kind = SystemError
    given = iter(runtime_args)
    args = tuple(next(given, None) if "runtime" in a else _plain(a["value"]) for a in described["args"])
    location = described.get("location")
    return kind, args, None if location is None else _plain(location)


@functools.lru_cache(maxsize=None)
def _process() -> ctypes.PyDLL | None:
    """The interpreter's process as a library (the Python C API, libc and libm it links), where the
    platform has one (not Windows)."""
    try:
        return ctypes.PyDLL(None)
    except (OSError, TypeError):
        return None


def process_symbol(name: str) -> int | None:
    """The address of ``name`` among the symbols the interpreter's process exports, or None."""
    process = _process()
    try:
        return None if process is None else ctypes.cast(getattr(process, name), ctypes.c_void_p).value
    except AttributeError:
        return None


_HELPERS: dict[str, int] | None = None


def helper_symbols() -> dict[str, int]:
    """numba's runtime helpers and the backend's BLAS routines, by the names numba's code gives them
    (as numba binds them: ``numba/core/base.py``, ``numba/core/runtime/nrt.py``), each with its address;
    the two exception helpers are the loader's own (bound by ``Runtime``)."""
    global _HELPERS
    if _HELPERS is None:
        from . import numpy_blas

        symbols: dict[str, int] = {}
        helperlib, dynfunc, nrt = (_extension(_EXTENSIONS[k]) for k in ("helperlib", "dynfunc", "nrt"))
        for name, address in nrt.c_helpers.items():
            symbols[name if name.startswith("_") else "NRT_" + name] = address
        for helpers in (helperlib.c_helpers, dynfunc.c_helpers):
            for name, address in helpers.items():
                symbols["numba_" + name] = address
        for name, address in helperlib.c_helpers.items():  # the C math functions numba binds by their own
            symbols.setdefault(name, address)                # names (numba/core/externals.py)
        symbols["_Py_NoneStruct"] = id(None)
        for value in vars(builtins).values():
            if isinstance(value, type) and issubclass(value, BaseException):
                symbols[f"PyExc_{value.__name__}"] = id(value)
        symbols.update(numpy_blas.BLAS.addresses if numpy_blas.BLAS is not None else {})
        _HELPERS = symbols
    return _HELPERS


def bindable(name: str) -> bool:
    """Whether a process that never imports numba can bind ``name`` (what ``Runtime.resolve`` does)."""
    return name in helper_symbols() or name in ("numba_unpickle", "numba_runtime_build_excinfo_struct") \
        or process_symbol(name) is not None


class Runtime:
    """The process's loader: numba's helpers found once; each object linked by ``elf_loader`` where it
    links it (x86-64 Linux: llvmlite is never loaded), else by an MCJIT engine of its own."""

    def __init__(self) -> None:
        helperlib, self.dynfunc, nrt = (_extension(_EXTENSIONS[k]) for k in ("helperlib", "dynfunc", "nrt"))
        nrt.memsys_use_cpython_allocator()   # what numba's runtime sets, before any kernel allocates
        self.symbols = dict(helper_symbols())
        self.exceptions = _Exceptions(helperlib)
        self.symbols["numba_unpickle"] = ctypes.cast(self.exceptions.unpickle, ctypes.c_void_p).value
        self.symbols["numba_runtime_build_excinfo_struct"] = ctypes.cast(self.exceptions.build, ctypes.c_void_p).value
        self.lock = threading.Lock()
        self._llvm: tuple[Any, Any] | None = None   # llvmlite's binding and the host target, once MCJIT is used

    def resolve(self, name: str) -> bool:
        """Whether ``name`` has an address here, binding it from the process if need be."""
        if name in self.symbols:
            return True
        address = process_symbol(name)
        if address is None:
            return False
        self.symbols[name] = address
        if self._llvm is not None:
            self._llvm[0].add_symbol(name, address)
        return True

    def _mcjit(self) -> tuple[Any, Any]:
        if self._llvm is None:
            import llvmlite.binding as llvm

            for name, address in self.symbols.items():
                llvm.add_symbol(name, address)
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            self._llvm = llvm, llvm.Target.from_triple(llvm.get_process_triple())
        return self._llvm

    def _link(self, code: bytes, say: Callable[[str], None] | None) -> tuple[Any, Callable[[str], int]]:
        """What holds ``code`` once linked, and the address of each symbol it defines."""
        if elf_loader.supported():
            try:
                mapped = elf_loader.link(code, self.symbols.get)
                return mapped, lambda symbol: mapped.symbols.get(symbol, 0)
            except elf_loader.ElfLoadError as error:
                if say is not None:
                    say(f"object code linked by LLVM's JIT, not by jitgrad's loader: {error}")
        llvm, target = self._mcjit()
        for symbol in ("numba_unpickle", "numba_runtime_build_excinfo_struct"):  # ours, even where numba
            llvm.add_symbol(symbol, self.symbols[symbol])                        # bound its own since
        # an engine per object: objects numba compiled in different processes may define the same names
        # (numba numbers functions per process), and a shared engine would bind one's calls to the other's code
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target.create_target_machine())
        engine.add_object_file(llvm.ObjectFileRef.from_data(code))
        engine.finalize_object()
        return engine, engine.get_global_value_address

    def load(self, kernel: KernelObject, name: str, say: Callable[[str], None] | None = None) -> Callable[..., Any]:
        """A Python callable running ``kernel``'s entry point (``LoadFailure`` where it cannot run);
        ``say`` gets a line when the object is linked by MCJIT because ``elf_loader`` refused it."""
        undefined, defined = elf_symbols(kernel.code)
        if kernel.entry not in defined:
            raise LoadFailure(f"the object does not define its entry point {kernel.entry[:60]}...")
        missing = sorted(s for s in undefined - {"_GLOBAL_OFFSET_TABLE_"} if not self.resolve(s))
        if missing:
            raise LoadFailure(f"symbols this process does not have: {', '.join(missing[:5])}")
        with self.lock:
            self.exceptions.add(kernel.exceptions)
            holder, address_of = self._link(kernel.code, say)
            environment = self.dynfunc.Environment(globals={"__name__": name})
            addresses = [address_of(s) for s in defined if s.startswith(ENVIRONMENT_PREFIX)]
            if not all(addresses):
                raise LoadFailure("an environment of the object has no address after loading")
            for address in addresses:
                ctypes.c_void_p.from_address(address).value = id(environment)
            entry = address_of(kernel.entry)
        if not entry:
            raise LoadFailure("the entry point has no address after loading")
        module = types.ModuleType(name)
        # what numba's dispatcher does with a compiled overload: keep the environment alive with the function
        return self.dynfunc.make_function(module, "kernel", f"jitgrad kernel {name} (cached object code)", entry,
                                          environment, (holder, environment))


_RUNTIME: Runtime | None = None
_RUNTIME_LOCK = threading.Lock()


def runtime() -> Runtime:
    """The process's one ``Runtime`` (``LoadFailure`` where numba's extension modules are missing)."""
    global _RUNTIME
    with _RUNTIME_LOCK:
        if _RUNTIME is None:
            _RUNTIME = Runtime()
        return _RUNTIME


def load(kernel: KernelObject, name: str, say: Callable[[str], None] | None = None) -> Callable[..., Any]:
    """``kernel``'s entry point as a Python callable (see the module docstring)."""
    return runtime().load(kernel, name, say)


__all__ = ["ENVIRONMENT_PREFIX", "KernelObject", "LoadFailure", "Runtime", "bindable", "elf_symbols", "exception_info",
           "helper_symbols", "load", "process_symbol", "runtime"]
