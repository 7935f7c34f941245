"""Object code -> a Python callable, with ctypes alone where ``elf_loader`` links it (x86-64 Linux), else
with llvmlite's JIT (numba is never imported).

Every symbol the object leaves undefined (read from its ELF symbol table) is bound before the code is
linked (an unresolved symbol would abort LLVM's JIT): numpy's CBLAS routines under the names
``numba_cpu/numpy_blas.py`` gives them, and the C library, libm and Python C API functions of this
process. An object ``elf_loader`` refuses is loaded through llvmlite; ``LoadedKernel.note`` says why
(the backend puts it in the ``JITGRAD_LOG=cache`` log). The entry point, ``PyObject *jitgrad_kernel(PyObject *self, PyObject *args)``, becomes a
builtin function through ``PyCFunction_NewEx`` with a ``PyMethodDef`` this module keeps alive with
the engine holding the code. The kernel reads its arguments' data pointers at fixed offsets
(``TUPLE_ITEMS``, ``ARRAY_DATA``, which ``codegen.py`` writes into the IR); ``check_layout`` confirms
them in this interpreter, and where they do not hold the backend is not used. A warm process imports
this module and not the code generator.
"""
from __future__ import annotations

import ctypes
import functools
import threading
from typing import Any, Callable

import numpy as np

from ..numba_cpu import numpy_blas
from ..numba_cpu.object_loader import elf_symbols, process_symbol
from .. import elf_loader

TUPLE_ITEMS = tuple.__basicsize__   # where a tuple's items start (CPython)
ARRAY_DATA = 16                     # where a numpy array's data pointer is (PyArrayObject_fields.data)
ENTRY = "jitgrad_kernel"            # the kernel's entry point
METH_VARARGS = 1


class LoadFailure(Exception):
    """The object cannot run here: the graph is compiled again (or by numba), and the log says why."""


class _MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("function", ctypes.c_void_p), ("flags", ctypes.c_int),
                ("doc", ctypes.c_char_p)]


@functools.lru_cache(maxsize=None)
def check_layout() -> str | None:
    """None where a tuple's items and an array's data pointer are where the kernels read them; else
    why not (another interpreter build)."""
    probe = np.arange(3.0)
    items = (probe,)
    if ctypes.c_void_p.from_address(id(items) + TUPLE_ITEMS).value != id(probe):
        return "a tuple's items are not where the kernels read them"
    if ctypes.c_void_p.from_address(id(probe) + ARRAY_DATA).value != probe.ctypes.data:
        return "a numpy array's data pointer is not where the kernels read it"
    return None


_BOUND: set[str] = set()
_LOCK = threading.Lock()


def resolve(name: str) -> int | None:
    """The address a kernel's undefined symbol ``name`` is bound to in this process, or None."""
    blas = numpy_blas.BLAS
    if blas is not None and name in blas.addresses:
        return blas.addresses[name]
    return process_symbol(name)


def _bind(names: set[str]) -> None:
    """Binds each of ``names`` for LLVM's JIT (LoadFailure for one this process lacks)."""
    import llvmlite.binding as llvm

    missing = []
    for name in sorted(names - _BOUND - {"_GLOBAL_OFFSET_TABLE_"}):   # the JIT's linker provides that one
        address = resolve(name)
        if address is None:
            missing.append(name)
            continue
        llvm.add_symbol(name, address)
        _BOUND.add(name)
    if missing:
        raise LoadFailure(f"symbols this process does not have: {', '.join(missing[:5])}")


class LoadedKernel:
    """What holds a kernel's code (an ``elf_loader.MappedCode`` or llvmlite's engine) and the builtin
    function that calls it."""

    def __init__(self, engine: Any, method: _MethodDef, function: Callable[..., Any], note: str | None = None) -> None:
        self.engine = engine
        self.method = method
        self.function = function
        self.note = note   # why ``elf_loader`` did not link it, where it was tried and refused


def _link_with_llvm(code: bytes, undefined: set[str]) -> tuple[Any, int]:
    import llvmlite.binding as llvm

    from .machine_code import new_target_machine

    with _LOCK:
        _bind(undefined)
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), new_target_machine())
        engine.add_object_file(llvm.ObjectFileRef.from_data(code))
        engine.finalize_object()
        return engine, engine.get_function_address(ENTRY)


def load(code: bytes, linker: str = "auto") -> LoadedKernel:
    """Loads ``code`` (an object ``machine_code.compile_ir`` made, here or in an earlier process).
    ``linker``: ``"auto"`` (``elf_loader`` where it is supported, else, or where it refuses the object,
    llvmlite's JIT), ``"elf"`` or ``"llvm"`` (one of them only: tests compare the two)."""
    why = check_layout()
    if why is not None:
        raise LoadFailure(why)
    undefined, defined = elf_symbols(code)
    if ENTRY not in defined:
        raise LoadFailure(f"the object does not define {ENTRY}")
    engine, note = None, None
    if linker == "elf" or (linker == "auto" and elf_loader.supported()):
        try:
            engine = elf_loader.link(code, resolve)
            address = engine.symbols.get(ENTRY, 0)
        except elf_loader.ElfLoadError as error:
            if linker == "elf":
                raise LoadFailure(str(error)) from None
            note = f"object code linked by LLVM's JIT, not by jitgrad's loader: {error}"
    if engine is None:
        engine, address = _link_with_llvm(code, undefined)
    if not address:
        raise LoadFailure("the entry point has no address after loading")
    method = _MethodDef(b"jitgrad_kernel", address, METH_VARARGS, None)
    new = ctypes.pythonapi.PyCFunction_NewEx
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    function = new(ctypes.addressof(method), None, None)
    return LoadedKernel(engine, method, function, note)


__all__ = ["ARRAY_DATA", "ENTRY", "TUPLE_ITEMS", "LoadFailure", "LoadedKernel", "check_layout", "load", "resolve"]
