"""What a later process needs to run a kernel numba just compiled without numba (``object_loader.py``):
its object code, its entry point's symbol and its exception table; or why it cannot have it.

The object is numba's own (``serialize_using_object_code``, what numba's cache writes), built for
this machine's CPU. A kernel is kept this way only when nothing in it needs numba at run time:

- its environments hold no constants (the loader gives each an empty one);
- it has no re-initialisation hooks (``reload_init``) and is not object-mode code;
- every symbol it leaves undefined is one a fresh process binds without numba (``bindable``):
  parallel kernels name numba's threading layer, and are not kept;
- every exception it can raise is pickled data the loader can describe as plain data: a built-in
  exception class, arguments that are numbers, strings, None or tuples of them (or run-time values,
  numba's dynamic exceptions), and a location. The data is unpickled here, in the process that just
  made it, never in the loading one.
"""
from __future__ import annotations

import builtins
import pickle
import re
from typing import Any

from .object_loader import ENVIRONMENT_PREFIX, KernelObject, bindable, elf_symbols

_PICKLED = re.compile(r'^@"?(\.const\.pickledata\.[0-9a-f]+(?:\.\d+)?)"? = .*?c"((?:[^"\\]|\\[0-9A-Fa-f]{2}|\\\\)*)"',
                      re.MULTILINE)
_PLAIN = (str, int, float, bool, type(None))


class NotStorable(Exception):
    """The kernel needs numba at run time: its object code is not kept (numba's cache still is)."""


def _bytes_of(literal: str) -> bytes:
    """The bytes of an LLVM ``c"..."`` string literal's contents."""
    out = bytearray()
    i = 0
    while i < len(literal):
        if literal[i] == "\\":
            if literal[i + 1] == "\\":
                out.append(0x5C)
                i += 2
            else:
                out.append(int(literal[i + 1:i + 3], 16))
                i += 3
        else:
            out.extend(literal[i].encode("latin-1"))
            i += 1
    return bytes(out)


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, _PLAIN) and not (isinstance(value, float) and value != value):
        return value
    raise NotStorable(f"an exception argument is not plain data ({type(value).__name__})")


def describe_exception(data: bytes) -> dict[str, Any]:
    """``data`` (numba's pickled ``(class, args, location)``) as plain data, for ``object_loader``."""
    from llvmlite import ir

    try:
        kind, args, location = pickle.loads(data)  # noqa: S301 - made by numba in this process, a moment ago
    except Exception as error:  # noqa: BLE001 - anything else is a kernel to leave to numba
        raise NotStorable(f"an exception's data is not (class, args, location): {error}") from None
    if not (isinstance(kind, type) and issubclass(kind, BaseException) and getattr(builtins, kind.__name__, None) is kind):
        raise NotStorable(f"the kernel can raise {kind!r}, not a built-in exception")
    if not isinstance(args, tuple):
        raise NotStorable("an exception's arguments are not a tuple")
    described = [{"runtime": True} if isinstance(a, ir.Value) else {"value": _plain(a)} for a in args]
    return {"data": data.hex(), "class": kind.__name__, "args": described,
            "location": None if location is None else _plain(location)}


def kernel_object(dispatcher: Any, signature: tuple) -> KernelObject:
    """The object code of ``dispatcher``'s overload for ``signature`` and what loading it needs
    (``NotStorable`` where a process without numba could not run it)."""
    import numba.core.environment

    result = dispatcher.overloads.get(signature)
    if result is None:
        raise NotStorable("no overload was compiled for the kernel's argument types")
    if result.objectmode or result.reload_init or list(result.environment.consts):
        raise NotStorable("the kernel is object-mode code, has re-initialisation hooks or environment constants")
    library = result.library
    _, kind, (code, _) = library.serialize_using_object_code()
    undefined, defined = elf_symbols(code)
    missing = sorted(s for s in undefined if not bindable(s))
    if missing:
        raise NotStorable(f"it needs symbols only numba binds: {', '.join(missing[:4])}")
    for name in (s for s in defined if s.startswith(ENVIRONMENT_PREFIX)):
        environment = numba.core.environment.lookup_environment(name)
        if environment is not None and list(environment.consts):
            raise NotStorable("a function of the kernel has environment constants")
    text = library.get_llvm_str()
    exceptions = [describe_exception(_bytes_of(m.group(2))) for m in _PICKLED.finditer(text)]
    return KernelObject(code, result.fndesc.llvm_cpython_wrapper_name, exceptions)


__all__ = ["NotStorable", "describe_exception", "kernel_object"]
