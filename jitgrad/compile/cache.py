"""The disk cache: lowered graphs that outlive the process.

An entry is keyed by a hash of the optimized graph (its IR listing, which holds every op, attribute,
shape and dtype, plus the bytes of its constants), the backend and its options, the jitgrad and numba
versions and a hash of jitgrad's source files. The file holds a header (magic, format) and a SHA-256 of the pickled payload; the
payload repeats the full key. A file that is truncated, fails its checksum, does not unpickle or was
written for another key or version is a miss: the graph is lowered again and the entry rewritten.
Nothing is read from a directory that other users could write to.

The directory is ``$JITGRAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/jitgrad`` (``~/.cache/jitgrad``), made
with mode 0o700. A backend whose compiled objects do not pickle simply gets no disk entries.

Machine code: a pickled numba dispatcher unpickles without its compiled code, and numba's own cache
only serves functions defined in a file. So for a compiled object holding a numba ``kernel`` made from
its ``source``, the source is also written to ``kernels/jitgrad_kernel_<hash>.py`` and the kernel's compiled
overloads are saved into numba's cache for that file (``kernels/__pycache__``); a process that loads
the entry imports the file and gets its kernel from numba's cache instead of compiling it.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import pickle
import stat
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..fx.graph import Graph

MAGIC = b"JGCACHE1"


def default_directory() -> Path:
    configured = os.environ.get("JITGRAD_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jitgrad"


def graph_hash(graph: Graph) -> str:
    digest = hashlib.sha256(str(graph).encode())
    for key, value in sorted(graph.constants.items()):
        data = np.ascontiguousarray(value._data)
        digest.update(f"{key}:{data.dtype}:{data.shape}".encode())
        digest.update(data.tobytes())
    return digest.hexdigest()


@functools.lru_cache(maxsize=None)
def source_fingerprint() -> str:
    """A hash of jitgrad's own source files: a development checkout changes code without changing
    ``__version__``, and an entry lowered by other code must not be trusted."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).resolve().parent.parent.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def versions() -> dict[str, str]:
    from .. import __version__
    try:
        import numba
        numba_version = numba.__version__
    except ImportError:  # pragma: no cover - numba is a dependency
        numba_version = "none"
    return {"jitgrad": __version__, "jitgrad_source": source_fingerprint(), "numba": numba_version,
            "numba_disable_jit": os.environ.get("NUMBA_DISABLE_JIT", "0")}


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    writes: int = 0
    rejected: list[str] = field(default_factory=list)  # why an existing entry was not trusted


stats = CacheStats()


class DiskCache:
    def __init__(self, directory: Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_directory()
        self._usable: bool | None = None

    def _ready(self) -> bool:
        """Creates the directory (0o700) on first use; refuses one that others can write to."""
        if self._usable is None:
            try:
                self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                info = self.directory.stat()
                if (hasattr(os, "getuid") and info.st_uid != os.getuid()) or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                    warnings.warn(f"jitgrad.compile: not using the cache directory {self.directory}: it is "
                                  "writable by other users or not owned by you", RuntimeWarning, stacklevel=3)
                    self._usable = False
                else:
                    self._usable = True
            except OSError:
                self._usable = False
        return self._usable

    def key(self, graph: Graph, backend: str, options: dict[str, Any]) -> dict[str, Any]:
        return {"graph": graph_hash(graph), "backend": backend,
                "options": sorted(options.items()), **versions()}

    def _path(self, key: dict[str, Any]) -> Path:
        name = hashlib.sha256(repr(sorted(key.items())).encode()).hexdigest()
        return self.directory / f"{name}.jgc"

    # ---- numba machine code ----------------------------------------------------------------------------
    def _kernel_module(self, compiled: Any, fastmath: bool, write: bool) -> Any | None:
        """The module of ``kernels/jitgrad_kernel_<hash>.py`` holding ``compiled.source`` (written when
        asked). Sources equal up to comments share one file, so the machine code numba cached for one
        serves all."""
        source = getattr(compiled, "source", None)
        if not isinstance(source, str) or "def kernel" not in source:
            return None
        flags = f"fastmath={fastmath}"
        code = getattr(compiled, "key", None) or source  # the backend's key ignores comments (sizes)
        name = "jitgrad_kernel_" + hashlib.sha256((code + flags).encode()).hexdigest()[:24]
        path = self.directory / "kernels" / f"{name}.py"
        if not path.exists():
            if not write:
                return None
            path.parent.mkdir(mode=0o700, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(handle, "w") as file:
                file.write(source)
            os.replace(temporary, path)
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules[name] = module
        return module

    def _file_kernel(self, compiled: Any, module: Any) -> Any:
        import numba
        return numba.njit(cache=True, **compiled.numba_options)(module.kernel)

    def save_machine_code(self, compiled: Any, fastmath: bool) -> bool:
        """Puts the compiled overloads of ``compiled.kernel`` into numba's cache for the kernel file."""
        kernel = getattr(compiled, "kernel", None)
        if not self._ready() or kernel is None or not getattr(kernel, "overloads", None):
            return False
        try:
            module = self._kernel_module(compiled, fastmath, write=True)
            if module is None:
                return False
            # numba rebuilds a cached function's globals by importing its module: name it after the file
            kernel.py_func.__globals__.setdefault("__name__", module.__name__)
            file_kernel = self._file_kernel(compiled, module)
            for signature, result in kernel.overloads.items():
                file_kernel._cache.save_overload(signature, result)
            return True
        except Exception:  # noqa: BLE001 - machine code is an optimisation: without it numba compiles
            return False

    def restore_machine_code(self, compiled: Any, fastmath: bool) -> None:
        """Swaps a loaded entry's kernel for the file-defined one that numba's cache serves."""
        if getattr(compiled, "kernel", None) is None or not hasattr(compiled.kernel, "py_func"):
            return
        try:
            module = self._kernel_module(compiled, fastmath, write=False)
            if module is not None:
                compiled.kernel = self._file_kernel(compiled, module)
        except Exception:  # noqa: BLE001 - keep the unpickled kernel: numba compiles it on first call
            pass

    def load(self, key: dict[str, Any]) -> Any | None:
        if not self._ready():
            return None
        path = self._path(key)
        try:
            blob = path.read_bytes()
        except OSError:
            stats.misses += 1
            return None
        why = None
        if len(blob) < len(MAGIC) + 32 or not blob.startswith(MAGIC):
            why = "bad header"
        else:
            checksum, payload = blob[len(MAGIC):len(MAGIC) + 32], blob[len(MAGIC) + 32:]
            if hashlib.sha256(payload).digest() != checksum:
                why = "checksum mismatch"
            else:
                try:
                    entry = pickle.loads(payload)
                except Exception:  # noqa: BLE001 - any unpickling failure is a corrupt entry
                    why = "does not unpickle"
                else:
                    if not isinstance(entry, dict) or entry.get("key") != key:
                        why = "written for another key or version"
                    else:
                        stats.hits += 1
                        return entry["compiled"]
        stats.misses += 1
        stats.rejected.append(f"{path.name}: {why}")
        return None

    def store(self, key: dict[str, Any], compiled: Any) -> bool:
        if not self._ready():
            return False
        try:
            payload = pickle.dumps({"key": key, "compiled": compiled}, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - a backend whose objects do not pickle gets no disk entries
            return False
        path = self._path(key)
        try:
            handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(handle, "wb") as file:
                file.write(MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(temporary, path)
        except OSError:
            return False
        stats.writes += 1
        return True


__all__ = ["CacheStats", "DiskCache", "default_directory", "graph_hash", "stats", "versions"]
