"""The disk cache: numba machine code for generated kernels, kept across processes. It is a security
boundary: nothing read from it runs, or is unpickled, before it is verified.

What a process spends on a kernel is numba's compile; generating the kernel's source from a graph is
cheap and deterministic. So the cache keeps, per kernel (its source and numba options):

- ``<kind>/<name>.py``: the source, without its comments (they repeat IR lines, sizes included, so
  kernels that differ only there are one);
- ``<kind>/__pycache__/<name>.*``: numba's cache of the compiled overloads (numba's own format, which
  numba unpickles when it loads it);
- ``<name>.json``: the entry, data only: the key (the kernel's code key, the options, the versions of
  jitgrad, its source files, numba, llvmlite and Python) and the SHA-256 of each file above.

Beside them, kind ``objects`` keeps what a process needs to run a CPU kernel without numba (the backend's
``object_loader.py``): ``objects/<name>.o``, numba's object code for one kernel and argument types, and
``<name>.json``, data only: the key (the kernel's code key and options, the versions, and ``machine()``:
the CPU (``backends/host_cpu.py``), numpy's version, the ``NUMBA_*`` settings), the object's SHA-256 and what
the loader needs (the entry point's symbol, the kernel's exception table). ``load_object`` hands out the
object only once the entry and the object file pass the checks below; an object the backend then
cannot load (``object_failed``) is removed like a rejected entry, and the kernel compiled. No version is
read by importing numba: package metadata says it.

Kind ``index`` keeps the warm-start index (``warm_index.py``): ``<name>.json`` holds the key (a function's
fingerprint and a call's description, the versions) and the SHA-256 of ``index/<name>.bin``, the
program it describes as JSON text followed by raw numeric arrays; ``load_index`` hands out both only
once they pass the checks below, and nothing in them is executed or unpickled.

The kind is ``kernels`` for the CPU backend's ``numba.njit`` kernels (entries ``jitgrad_kernel_*``) and
``cuda`` for the CUDA backend's generated modules (entries ``jitgrad_cuda_*``), whose ``@cuda.jit``
kernels numba-cuda compiles at their first launch and keeps in the same ``__pycache__``
(``<name>.<kernel>-<line>.pyXY.nbi``, an index per kernel holding an entry per signature and compute
capability, and ``.nbc`` files): ``write_module`` stores the source before anything is compiled, and
``record`` writes the entry, with the hashes of numba's files, after a launch compiled (again). The
kinds share one directory, its checks and its size limit.

A later process generates the same source and, before anything of the entry is used, checks that:
the entry is a regular file (opened without following symlinks, never blocking on a FIFO) of bounded
size and valid JSON holding exactly this key; the kernel file is a regular file whose bytes are the
source just generated; and every numba file has the recorded hash. Only then is the source executed
(from the verified bytes) and numba asked for the kernel, which it loads from its cache. An entry that
fails any check is reported (one warning per process), removed with its files, and the kernel is
compiled and stored again. Nothing jitgrad writes is pickled. (numba-cuda reads a kernel's files at its
first launch, after the checks: between the two only the folders' owner, who could run anything
anyway, can write to them.)

The directory is ``$JITGRAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/jitgrad`` (``~/.cache/jitgrad``), made
with mode 0o700. It, and the folders of its kinds, must be real directories owned by the user and not
writable by others, and every folder above must be owned by the user or root and, if others may
write to it, sticky (as ``/tmp``); otherwise the cache is not used, with one warning. Writes are
atomic (a temporary file renamed into place, removed if anything fails). The cache holds at most
``$JITGRAD_CACHE_MAX_BYTES`` (default 512 MiB): beyond it the least recently used entries go. With
``NUMBA_CACHE_DIR`` set numba would keep (and load) machine code in that folder, outside every check
here, so the cache is not used then (one warning).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import time
import types
import warnings
from pathlib import Path
from typing import Any

from .cache_files import Rejected, Vanished, read_regular, sha256_hex, unsafe_folder, write_atomically
from ..backends.host_cpu import host_cpu
from .packages import installed_version

ENTRY_FORMAT = "jitgrad-kernel-cache-2"
OBJECT_FORMAT = "jitgrad-object-cache-1"
ENTRY_LIMIT = 1 << 16          # bytes: an entry is a few hundred
SOURCE_LIMIT = 1 << 22
MACHINE_CODE_LIMIT = 1 << 26
DEFAULT_MAX_BYTES = 512 << 20
KINDS = {"kernels": "jitgrad_kernel_", "cuda": "jitgrad_cuda_",  # folder -> prefix of its entries' names
         "objects": "jitgrad_object_", "index": "jitgrad_index_"}
DATA_FILES = {"jitgrad_object_": ("objects", ".o"), "jitgrad_index_": ("index", ".bin")}  # one file an entry


def default_directory() -> Path:
    configured = os.environ.get("JITGRAD_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jitgrad"


RACY_SECONDS = 3   # a file changed this recently may change again within its timestamps' granularity


@functools.lru_cache(maxsize=None)
def source_fingerprint() -> str:
    """A fingerprint of jitgrad's own source files: a development checkout changes code without
    changing ``__version__``, and machine code built by other code must not be trusted."""
    return tree_fingerprint(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), time.time())


def tree_fingerprint(folder: str, now: float) -> str:
    """A hash of the ``.py`` files under ``folder`` by their status (inode, size, modification and
    change times): every write to a file moves its change time, which no user can set back, and
    renaming a new file into place gives another inode, so a changed file is a changed fingerprint.
    Reading the files instead cost every warm process 6-20 ms (350 files). A file whose times are within
    ``RACY_SECONDS`` of ``now`` could still be rewritten within the same timestamp (as git's "racily
    clean" files), so its bytes are hashed too."""
    digest = hashlib.sha256()
    recent = int((now - RACY_SECONDS) * 1e9)
    for path, status in sorted(_python_files(folder)):
        digest.update(f"{path}\0{status.st_ino}\0{status.st_size}\0{status.st_mtime_ns}\0"
                      f"{status.st_ctime_ns}\n".encode())
        if max(status.st_mtime_ns, status.st_ctime_ns) >= recent:
            with open(path, "rb") as file:
                digest.update(file.read())
    return digest.hexdigest()[:16]


def _python_files(folder: str) -> list[tuple[str, os.stat_result]]:
    """Each ``.py`` file under ``folder`` with its status (``os.scandir``: every warm process pays for
    this walk)."""
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                found += _python_files(entry.path)
            elif entry.name.endswith(".py") and entry.is_file():
                found.append((entry.path, entry.stat()))
    return found


def versions() -> dict[str, str]:
    from .. import __version__
    return {"jitgrad": __version__, "jitgrad_source": source_fingerprint(), "numba": installed_version("numba"),
            "llvmlite": installed_version("llvmlite"), "python": sys.version.split()[0]}


@functools.lru_cache(maxsize=None)
def machine() -> dict[str, Any]:
    """What object code is built for and depends on beyond the versions: the CPU it targets
    (``backends/host_cpu.py``: a digest of what CPUID reports on x86-64, else LLVM's name and features),
    numpy's version (the array layout numba's helpers read) and every ``NUMBA_*`` setting (one may
    change the code numba emits, ``NUMBA_OPT`` or ``NUMBA_CPU_NAME``)."""
    import numpy

    return {**host_cpu(), "numpy": numpy.__version__,
            "numba_settings": sorted((k, v) for k, v in os.environ.items() if k.startswith("NUMBA_"))}


def shared_cache(kind: str = "kernels", directory: Path | None = None) -> "DiskCache":
    """The process's one ``DiskCache`` of ``kind`` in ``directory`` (the default one when None, read
    now): eager CUDA ops and compiled functions share it, so its checks and its warnings happen once."""
    directory = Path(directory if directory is not None else default_directory()).absolute()
    cache = _SHARED.get((kind, directory))
    if cache is None:
        cache = _SHARED[kind, directory] = DiskCache(directory, kind)
    return cache


class CacheStats:
    """This process's counts of cache hits, misses, writes and evictions; ``rejected`` says why each
    existing entry that was not trusted was not (a plain class: a warm process imports this module)."""

    def __init__(self) -> None:
        self.hits = self.misses = self.writes = self.evictions = 0
        self.rejected: list[str] = []


stats = CacheStats()
_SHARED: dict[tuple[str, Path], "DiskCache"] = {}
_REFUSED: set[str] = set()   # why a cache folder was not used, as said in this process


def _touch(entry_path: Path) -> None:
    """Marks an entry recently used (the last to be evicted). Another process sharing the cache may
    have removed it since it was read and verified (rewriting it, or evicting): what was read stands,
    and the mark is lost (until 2026-11-28 the ``FileNotFoundError`` came out of the caller's call)."""
    try:
        os.utime(entry_path)
    except OSError:
        pass


def _size(path: Path) -> int:
    """A file's size, 0 if it is not there (any more: another process may remove it at any time)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _log(line: str) -> None:
    """One line on stderr with ``JITGRAD_LOG=cache``: how the warm start went, kernel by kernel."""
    if "cache" in os.environ.get("JITGRAD_LOG", "").split(","):
        print(f"jitgrad.compile: cache: {line}", file=sys.stderr)


def _max_bytes() -> int:
    return int(os.environ.get("JITGRAD_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES))


def _numba_cache_elsewhere() -> str | None:
    """Why numba would not keep machine code beside the verified sources (``NUMBA_CACHE_DIR``), or None.
    numba's setting where numba is imported, else the variable it reads it from (numba is not imported
    for this)."""
    numba = sys.modules.get("numba")
    configured = os.environ.get("NUMBA_CACHE_DIR") or (numba.config.CACHE_DIR if numba is not None else "")
    return f"NUMBA_CACHE_DIR is set ({configured}): numba would keep machine code there, unverified" \
        if configured else None


class DiskCache:
    """Numba machine code for kernels, on disk (see the module docstring)."""

    def __init__(self, directory: Path | None = None, kind: str = "kernels") -> None:
        if kind not in KINDS:
            raise ValueError(f"DiskCache: unknown kind {kind!r} (one of {', '.join(KINDS)})")
        self.directory = Path(directory if directory is not None else default_directory()).absolute()
        self.kind = kind
        self.kernels = self.directory / kind
        self.machine_code = self.kernels / "__pycache__"
        self._usable: bool | None = None
        self._warned = False
        self._total: int | None = None   # bytes held, as this process last counted and since wrote

    def of_kind(self, kind: str) -> "DiskCache":
        """The cache of ``kind`` in this one's directory (the CUDA backend takes ``jitgrad.compile``'s)."""
        return self if kind == self.kind else shared_cache(kind, self.directory)

    # ---- the folders ------------------------------------------------------------------------------------
    def _ready(self) -> bool:
        """Creates the folders (0o700) on first use and checks them and every folder above."""
        if self._usable is None:
            reason = None
            try:
                self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                self.kernels.mkdir(mode=0o700, exist_ok=True)
            except OSError as error:
                reason = f"{self.directory} cannot be made ({error.strerror})"
            if reason is None:
                reason = self.folder_problem() or (None if self.kind in ("objects", "index") else _numba_cache_elsewhere())
            self._usable = reason is None
            if reason is not None and reason not in _REFUSED:  # the kinds share the folder: said once
                _REFUSED.add(reason)
                warnings.warn(f"jitgrad.compile: not using the disk cache: {reason}; kernels are compiled "
                              "in each process", RuntimeWarning, stacklevel=4)
        return self._usable

    def folder_problem(self) -> str | None:
        directory = self.directory.absolute()
        for folder, own in ((directory, True), (self.kernels.absolute(), True),
                            *((parent, False) for parent in directory.parents)):
            reason = unsafe_folder(folder, own)
            if reason is not None:
                return reason
        return unsafe_folder(self.machine_code, True) if os.path.lexists(self.machine_code) else None

    # ---- names and keys ---------------------------------------------------------------------------------
    @staticmethod
    def key(code_key: str, options: dict[str, Any]) -> dict[str, Any]:
        """What an entry must have been written for, as JSON gives it back (lists, not tuples)."""
        key = {"format": ENTRY_FORMAT, "code": code_key, "options": sorted(options.items()), **versions()}
        return json.loads(json.dumps(key))

    def name(self, key: dict[str, Any]) -> str:
        return KINDS[self.kind] + sha256_hex(json.dumps(key, sort_keys=True).encode())[:24]

    def _folder_of(self, name: str) -> Path:
        """The kind's folder of an entry (eviction removes entries of every kind)."""
        return self.directory / next(kind for kind, prefix in KINDS.items() if name.startswith(prefix))

    def _machine_code_files(self, name: str) -> list[Path]:
        folder = self._folder_of(name) / "__pycache__"
        if not folder.is_dir():
            return []
        return sorted(p for p in folder.iterdir() if p.name.startswith(name + "."))

    def numba_cache_path_is_ours(self, dispatcher: Any) -> bool:
        """Whether numba keeps ``dispatcher``'s machine code (``cache=True``) in this cache's verified
        folder: numba picks another where that one is not writable."""
        return os.path.abspath(dispatcher.stats.cache_path) == os.path.abspath(self.machine_code)

    # ---- loading ----------------------------------------------------------------------------------------
    def load_kernel(self, source: str, code_key: str, options: dict[str, Any]) -> Any | None:
        """A numba dispatcher for ``source`` (a kernel's code without comments) whose machine code numba
        loads from the cache, or None (nothing stored, or an entry that failed a check: removed, and
        said once)."""
        module = self.load_module(source, code_key, options)
        if module is None:
            return None
        import numba
        kernel = numba.njit(cache=True, **dict(options))(module.kernel)
        if not self.numba_cache_path_is_ours(kernel):
            return numba.njit(**dict(options))(module.kernel)
        return kernel

    def load_module(self, source: str, code_key: str, options: dict[str, Any]) -> types.ModuleType | None:
        """The module of ``source`` executed from its verified entry, or None (nothing stored, or an
        entry that failed a check: removed, and said once). numba's files beside it were verified too:
        a dispatcher made with ``cache=True`` of one of its functions loads its machine code."""
        if not self._ready():
            return None
        key = self.key(code_key, options)
        name = self.name(key)
        entry_path = self.directory / f"{name}.json"
        if not os.path.lexists(entry_path):
            stats.misses += 1
            return None
        try:
            module = self._verified_module(entry_path, name, key, source)
        except Vanished as vanished:   # another process is rewriting or evicting it: a miss
            stats.misses += 1
            _log(f"kernel cache entry {name} changed while read ({vanished}): compiling")
            return None
        except Rejected as rejected:
            self._reject(name, str(rejected))
            return None
        _touch(entry_path)
        stats.hits += 1
        return module

    def _verified_module(self, entry_path: Path, name: str, key: dict[str, Any], source: str) -> types.ModuleType:
        try:
            entry = json.loads(read_regular(entry_path, ENTRY_LIMIT))
        except ValueError:
            raise Rejected(f"{entry_path.name} is not a cache entry (not JSON)") from None
        if not isinstance(entry, dict) or entry.get("key") != key:
            raise Rejected(f"{entry_path.name} was written for another kernel or version")
        expected = source.encode()
        kernel_path = self.kernels / f"{name}.py"
        if read_regular(kernel_path, SOURCE_LIMIT) != expected or entry.get("source") != sha256_hex(expected):
            raise Rejected(f"{kernel_path.name} is not the source generated for this kernel")
        recorded = entry.get("machine_code")
        present = {p.name for p in self._machine_code_files(name)}
        if not isinstance(recorded, dict) or set(recorded) != present:
            raise Rejected(f"numba's files for {name} are not those recorded")
        for file_name, digest in recorded.items():
            if sha256_hex(read_regular(self.machine_code / file_name, MACHINE_CODE_LIMIT)) != digest:
                raise Rejected(f"{file_name} (numba's machine code) does not match its recorded hash")
        return self._module(name, kernel_path, expected)

    @staticmethod
    def _module(name: str, path: Path, source: bytes) -> types.ModuleType:
        """The kernel's module, executed from ``source`` (the verified bytes, not the file read again);
        named after the file and registered, so that numba's cache finds the function's file and can
        rebuild its globals."""
        module = sys.modules.get(name)
        if module is None:
            module = types.ModuleType(name)
            module.__file__ = str(path)
            exec(compile(source, str(path), "exec"), module.__dict__)
            sys.modules[name] = module
        return module

    def _reject(self, name: str, why: str) -> None:
        stats.misses += 1
        stats.rejected.append(f"{name}: {why}")
        if not self._warned:
            self._warned = True
            warnings.warn(f"jitgrad.compile: a disk cache entry was not trusted and is rebuilt: {why}",
                          RuntimeWarning, stacklevel=4)
        self._remove(name)

    def _entry_files(self, name: str) -> list[Path]:
        """Every file of the entry ``name``, of any kind: its entry, and its object code or its source
        and numba's files."""
        for prefix, (folder, suffix) in DATA_FILES.items():
            if name.startswith(prefix):
                return [self.directory / f"{name}.json", self.directory / folder / f"{name}{suffix}"]
        return [self.directory / f"{name}.json", self._folder_of(name) / f"{name}.py", *self._machine_code_files(name)]

    def _remove(self, name: str) -> None:
        for path in self._entry_files(name):
            try:
                os.unlink(path)
            except OSError:
                pass
        sys.modules.pop(name, None)

    # ---- storing ----------------------------------------------------------------------------------------
    def store_kernel(self, source: str, code_key: str, options: dict[str, Any], kernel: Any) -> bool:
        """Writes ``kernel``'s compiled overloads (a numba dispatcher of ``source``) as an entry."""
        if not self._ready() or not getattr(kernel, "overloads", None):
            return False
        key = self.key(code_key, options)
        name = self.name(key)
        try:
            self._remove(name)
            data = source.encode()
            kernel_path = self.kernels / f"{name}.py"
            write_atomically(kernel_path, data)
            import numba
            file_kernel = numba.njit(cache=True, **dict(options))(self._module(name, kernel_path, data).kernel)
            if not self.numba_cache_path_is_ours(file_kernel):
                raise Rejected("numba keeps this kernel's machine code elsewhere")
            # numba's cached machine code finds its globals by importing the function's module: the
            # compiled kernel's must be the name this entry's module is registered under when loaded
            kernel.py_func.__globals__["__name__"] = name
            for signature, result in kernel.overloads.items():
                file_kernel._cache.save_overload(signature, result)
            self._write_entry(name, key, data)
        except Exception:  # noqa: BLE001 - machine code is an optimisation: without it numba compiles
            self._remove(name)
            return False
        return True

    def write_module(self, source: str, code_key: str, options: dict[str, Any]) -> types.ModuleType | None:
        """Stores ``source`` (a module's code without comments) as a new entry's file, replacing any
        entry of its key, and returns the module executed from it, or None where the cache is not
        used or the write failed. The entry itself is written by ``record``, once numba compiled what
        it keeps beside the file (the CUDA backend's kernels compile at their first launch); until then
        a later process finds no entry."""
        if not self._ready():
            return None
        name = self.name(self.key(code_key, options))
        try:
            self._remove(name)
            data = source.encode()
            kernel_path = self.kernels / f"{name}.py"
            write_atomically(kernel_path, data)
            return self._module(name, kernel_path, data)
        except Exception:  # noqa: BLE001 - the cache is an optimisation: without it the module is made in memory
            self._remove(name)
            return None

    def record(self, source: str, code_key: str, options: dict[str, Any]) -> bool:
        """Writes (again) the entry of a module stored by ``write_module``: its source's hash and the
        hashes of numba's files beside it now, those a later process will check before numba loads them."""
        if not self._ready():
            return False
        key = self.key(code_key, options)
        name = self.name(key)
        try:
            self._write_entry(name, key, source.encode())
        except Exception:  # noqa: BLE001 - an entry that cannot be written is a miss in the next process
            self._remove(name)
            return False
        return True

    def _write_entry(self, name: str, key: dict[str, Any], source: bytes) -> None:
        machine_code = {p.name: sha256_hex(read_regular(p, MACHINE_CODE_LIMIT)) for p in self._machine_code_files(name)}
        entry = {"key": key, "source": sha256_hex(source), "machine_code": machine_code}
        data = json.dumps(entry, sort_keys=True).encode()
        write_atomically(self.directory / f"{name}.json", data)
        stats.writes += 1
        if self._total is None:
            self.evict()
            return
        self._total += len(data) + len(source) + sum(
            (self.machine_code / file_name).stat().st_size for file_name in machine_code)
        if self._total > _max_bytes():
            self.evict()

    # ---- object code (kind "objects") --------------------------------------------------------------------
    def object_key(self, code_key: str, options: dict[str, Any]) -> dict[str, Any]:
        """What an object entry must have been written for: the kernel and its options, the versions
        and the machine (``machine()``)."""
        key = {"format": OBJECT_FORMAT, "code": code_key, "options": sorted(options.items()), **versions(), **machine()}
        return json.loads(json.dumps(key))

    def load_object(self, code_key: str, options: dict[str, Any]) -> tuple[str, bytes | None, dict[str, Any]] | None:
        """The entry's name, the kernel's object code and what its loader needs (``loader``, data
        only), verified; None when nothing is stored; the name, None and {} for an entry that failed a
        check (removed, and said): the kernel is then compiled afresh, which stores it again."""
        if not self._ready():
            return None
        key = self.object_key(code_key, options)
        name = self.name(key)
        if not os.path.lexists(self.directory / f"{name}.json"):
            stats.misses += 1
            _log(f"no object code for kernel {code_key[:12]} (a first compile here, or another version or CPU)")
            return None
        try:
            entry, code = self._verified_data(name, key, "object", ".o", "loader")
        except Vanished as vanished:   # another process is rewriting or evicting it: a miss
            stats.misses += 1
            _log(f"object code {name} changed while read ({vanished}): compiling")
            return None
        except Rejected as rejected:
            self._reject(name, str(rejected))
            _log(f"object code for kernel {code_key[:12]} not trusted: {rejected}; compiling")
            return name, None, {}
        return name, code, entry["loader"]

    def _verified_data(self, name: str, key: dict[str, Any], what: str, suffix: str,
                       field: str) -> tuple[dict[str, Any], bytes]:
        """An entry of kind ``objects`` or ``index`` and its data file, checked: the entry a bounded
        regular file of JSON holding exactly ``key`` and a dict under ``field``, the data file's
        SHA-256 the one recorded under ``what``. Marks the entry recently used."""
        entry_path = self.directory / f"{name}.json"
        try:
            entry = json.loads(read_regular(entry_path, ENTRY_LIMIT))
        except ValueError:
            raise Rejected(f"{entry_path.name} is not a cache entry (not JSON)") from None
        if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get(field), dict):
            raise Rejected(f"{entry_path.name} was written for another kernel, version or CPU")
        data = read_regular(self.kernels / f"{name}{suffix}", MACHINE_CODE_LIMIT)
        if sha256_hex(data) != entry.get(what):
            raise Rejected(f"{name}{suffix} does not match its recorded hash")
        _touch(entry_path)
        stats.hits += 1
        return entry, data

    def store_object(self, code_key: str, options: dict[str, Any], code: bytes, loader: dict[str, Any]) -> bool:
        """Writes a kernel's object code and its entry (the key, the object's hash, ``loader``)."""
        if not self._ready():
            return False
        try:
            self._store_data(self.object_key(code_key, options), "object", ".o", code, {"loader": loader})
        except Exception as error:  # noqa: BLE001 - an entry that cannot be written is a compile in the next process
            _log(f"object code for kernel {code_key[:12]} not stored: {error}")
            return False
        return True

    def _store_data(self, key: dict[str, Any], what: str, suffix: str, data: bytes, fields: dict[str, Any]) -> None:
        """Writes ``data`` and the entry holding ``key``, its hash under ``what`` and ``fields``; on any
        failure removes both and raises."""
        name = self.name(key)
        try:
            self._remove(name)
            write_atomically(self.kernels / f"{name}{suffix}", data)
            entry = json.dumps({"key": key, what: sha256_hex(data), **fields}, sort_keys=True).encode()
            if len(entry) > ENTRY_LIMIT:
                raise Rejected("the entry would be over its size limit")
            write_atomically(self.directory / f"{name}.json", entry)
        except BaseException:
            self._remove(name)
            raise
        stats.writes += 1
        if self._total is None:
            self.evict()
        else:
            self._total += len(entry) + len(data)
            if self._total > _max_bytes():
                self.evict()

    # ---- the warm-start index (kind "index") --------------------------------------------------------------
    def load_index(self, key: dict[str, Any]) -> tuple[dict[str, Any], bytes] | None:
        """An index entry's ``program`` (sizes, data only) and its data file's bytes (what it
        describes: JSON text and raw arrays), verified; None when there is none or it failed a check
        (removed, and said in the log)."""
        if not self._ready():
            return None
        name = self.name(key)
        if not os.path.lexists(self.directory / f"{name}.json"):
            stats.misses += 1
            return None
        try:
            entry, data = self._verified_data(name, key, "arrays", ".bin", "program")
        except Vanished as vanished:   # another process is rewriting or evicting it: a miss
            stats.misses += 1
            _log(f"warm-start index entry {name} changed while read ({vanished}): tracing")
            return None
        except Rejected as rejected:
            self._reject(name, str(rejected))
            _log(f"warm-start index entry {name} not trusted: {rejected}; tracing")
            return None
        return entry["program"], data

    def store_index(self, key: dict[str, Any], program: dict[str, Any], data: bytes) -> bool:
        """Writes an index entry: ``key``, ``program`` (small JSON data) and the hash of ``data``."""
        if not self._ready():
            return False
        try:
            self._store_data(key, "arrays", ".bin", data, {"program": program})
        except Exception as error:  # noqa: BLE001 - without the entry the next process traces
            _log(f"warm-start index entry not stored: {error}")
            return False
        return True

    @staticmethod
    def log(line: str) -> None:
        """A line for ``JITGRAD_LOG=cache`` (the backends say here which kernels they keep, and why not)."""
        _log(line)

    def object_failed(self, name: str, why: str) -> None:
        """A verified entry whose object could not be loaded here (a symbol this process lacks...):
        said in the log and removed, so that the kernel compiled now is stored in its place."""
        stats.misses += 1
        stats.rejected.append(f"{name}: {why}")
        _log(f"object code {name} could not be loaded: {why}; compiling")
        self._remove(name)

    def evict(self, max_bytes: int | None = None) -> None:
        """Removes the least recently used entries until the cache holds at most ``max_bytes``."""
        if max_bytes is None:
            max_bytes = _max_bytes()
        entries = []
        total = 0
        for entry in (e for prefix in KINDS.values() for e in self.directory.glob(f"{prefix}*.json")):
            name = entry.name[:-len(".json")]
            try:
                used = entry.stat().st_mtime
            except OSError:   # removed by another process since the listing
                continue
            size = sum(_size(p) for p in self._entry_files(name))
            entries.append((used, name, size))
            total += size
        for _, name, size in sorted(entries):
            if total <= max_bytes:
                break
            self._remove(name)
            total -= size
            stats.evictions += 1
        # counted once per process, then kept up to date by this process's writes (a full count at
        # every write would make storing n kernels cost n^2 file reads)
        self._total = total


__all__ = [
    "KINDS", "OBJECT_FORMAT", "CacheStats", "DiskCache", "Rejected", "default_directory", "read_regular",
    "shared_cache", "machine", "stats", "versions", "write_atomically"]
