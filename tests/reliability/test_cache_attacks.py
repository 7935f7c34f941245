"""The disk cache as a security boundary (issue 12): a forged entry, an edited kernel, a folder others
can write to, a symlink, a FIFO, damaged numba files and a full cache must each end in a recompile or
a refusal with a warning, never in running what was planted; and writes leave nothing half-done.

Each test lowers one small graph with the numba backend into a cache of its own, then tampers with
what was written and lowers the same graph in a "new process" (the in-memory kernels forgotten).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import jitgrad as jg
from jitgrad import fx
from jitgrad.backends.numba_cpu import clear_cache, lower, object_loader
from jitgrad.compile import cache as cache_module
from jitgrad.compile import source_fingerprint
from jitgrad.compile.cache import DiskCache
from jitgrad.fx import passes

X = np.array([0.5, -1.0, 2.0])
W = np.array([1.0, 2.0, 3.0])
EXPECTED = float(np.sum(np.tanh(X * W) * 3.0))


def _graph():
    def loss(x, w):
        return ((x * w).tanh() * 3.0).sum()
    return passes.PassManager().run(fx.trace(loss, jg.tensor(X), jg.tensor(W)).graph)


def _lower(directory: Path):
    """A lowering as a new process makes it: no kernel in memory, the cache read from disk."""
    clear_cache()
    cache_module._SHARED.clear()   # the object cache of the directory, checked afresh
    cache_module._REFUSED.clear()
    for name in [n for n in sys.modules if n.startswith("jitgrad_kernel_")]:
        del sys.modules[name]
    compiled = lower(_graph(), cache=DiskCache(directory))
    assert float(compiled(X, W)[0]) == pytest.approx(EXPECTED, rel=1e-12)
    return compiled


def _object_entry(directory: Path) -> tuple[Path, Path]:
    (entry,) = directory.glob("jitgrad_object_*.json")
    return entry, directory / "objects" / (entry.name[:-len(".json")] + ".o")


def _without_object_code(directory: Path) -> None:
    """Leaves numba's cache alone in ``directory``: a lowering tries the object code first."""
    for path in (*_object_entry(directory),):
        path.unlink()


@pytest.fixture(scope="module")
def kernel_template(tmp_path_factory):
    """A cache holding one kernel's numba entry (its object code removed), compiled once for the module."""
    directory = tmp_path_factory.mktemp("kernel_template") / "cache"
    assert not _lower(directory).from_disk
    _without_object_code(directory)
    return directory


@pytest.fixture
def stored(kernel_template, tmp_path):
    """A copy of the template cache, and its numba entry's name."""
    directory = tmp_path / "cache"
    shutil.copytree(kernel_template, directory)
    (entry,) = directory.glob("jitgrad_kernel_*.json")
    return directory, entry.name[:-len(".json")]


def _warned_and_rebuilt(directory: Path, reason: str) -> None:
    rejected_before = len(cache_module.stats.rejected)
    with pytest.warns(RuntimeWarning, match="not trusted and is rebuilt"):
        again = _lower(directory)
    assert not again.from_disk
    assert reason in cache_module.stats.rejected[rejected_before]
    _without_object_code(directory)
    assert _lower(directory).from_disk  # repaired: the next process uses it


def test_a_second_process_uses_the_verified_machine_code(stored):
    directory, name = stored
    assert _lower(directory).from_disk
    entry = json.loads((directory / f"{name}.json").read_text())
    assert set(entry) == {"key", "source", "machine_code"} and entry["machine_code"]
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert not list(directory.rglob("*.tmp"))


def test_an_edited_kernel_is_not_run(stored, tmp_path):
    directory, name = stored
    planted = tmp_path / "planted"
    kernel = directory / "kernels" / f"{name}.py"
    kernel.write_text(kernel.read_text() + f"\nopen({str(planted)!r}, 'w').close()\n")
    _warned_and_rebuilt(directory, "is not the source generated for this kernel")
    assert not planted.exists()


def test_a_forged_entry_naming_planted_code_is_not_run(stored, tmp_path):
    """An entry is data: whatever its hashes say, the kernel file must be the source this process
    generated, byte for byte, before anything of it runs."""
    directory, name = stored
    planted = tmp_path / "planted"
    kernel = directory / "kernels" / f"{name}.py"
    forged = f"import os\nopen({str(planted)!r}, 'w').close()\n" + kernel.read_text()
    kernel.write_text(forged)
    entry_path = directory / f"{name}.json"
    entry = json.loads(entry_path.read_text())
    entry["source"] = hashlib.sha256(forged.encode()).hexdigest()
    entry_path.write_text(json.dumps(entry))
    _warned_and_rebuilt(directory, "is not the source generated for this kernel")
    assert not planted.exists()


def test_a_damaged_numba_file_is_rebuilt_not_loaded(stored):
    directory, name = stored
    machine_code = sorted((directory / "kernels" / "__pycache__").glob(f"{name}.*.nbc"))[0]
    machine_code.write_bytes(machine_code.read_bytes()[:-64] + b"\0" * 64)
    _warned_and_rebuilt(directory, "does not match its recorded hash")


def test_an_entry_that_is_not_json_is_rebuilt(stored):
    directory, name = stored
    (directory / f"{name}.json").write_bytes(b"\x80\x04garbage")
    _warned_and_rebuilt(directory, "not JSON")


def test_an_entry_that_is_a_symlink_to_dev_zero_is_rejected(stored):
    directory, name = stored
    entry = directory / f"{name}.json"
    entry.unlink()
    entry.symlink_to("/dev/zero")
    _warned_and_rebuilt(directory, "cannot be opened as a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_an_entry_that_is_a_fifo_does_not_hang(stored):
    directory, name = stored
    entry = directory / f"{name}.json"
    entry.unlink()
    os.mkfifo(entry)
    done = []
    worker = threading.Thread(target=lambda: done.append(_warned_and_rebuilt(directory, "not a regular file")),
                              daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert done, "reading a FIFO entry hung"


def test_a_folder_others_can_write_to_is_refused_with_one_warning(stored):
    directory, name = stored
    (directory / "kernels").chmod(0o777)
    with pytest.warns(RuntimeWarning, match="not using the disk cache: .*kernels is writable by other users"):
        compiled = _lower(directory)
    assert not compiled.from_disk


def test_a_cache_path_that_is_a_file_is_refused_with_a_warning(tmp_path):
    path = tmp_path / "cache"
    path.write_text("not a folder")
    with pytest.warns(RuntimeWarning, match="not using the disk cache"):
        assert not _lower(path).from_disk


def test_a_failed_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    directory = tmp_path / "cache"

    def failing_replace(source, target):
        raise OSError("disk full")
    monkeypatch.setattr(cache_module.os, "replace", failing_replace)
    assert not _lower(directory).from_disk
    assert not list(directory.rglob("*.tmp")) and not list(directory.glob("*.json"))


def test_a_full_cache_evicts_the_least_recently_used_entries(stored, monkeypatch):
    directory, name = stored
    disk = DiskCache(directory)
    sizes = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
    disk.evict(max_bytes=sizes)
    assert (directory / f"{name}.json").exists()
    evictions = cache_module.stats.evictions
    disk.evict(max_bytes=sizes - 1)
    assert not (directory / f"{name}.json").exists() and not (directory / "kernels" / f"{name}.py").exists()
    assert cache_module.stats.evictions == evictions + 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an evicted entry is a plain miss, not a damaged one
        assert not _lower(directory).from_disk


# ---- numba's object code, run without numba (issue 18) ------------------------------------------------
@pytest.fixture(scope="module")
def object_template(tmp_path_factory):
    """A cache one lowering filled (numba's entry and the object code), compiled once for the module."""
    directory = tmp_path_factory.mktemp("template") / "cache"
    assert not _lower(directory).from_disk
    return directory


@pytest.fixture
def stored_object(object_template, tmp_path):
    """A copy of the template cache: its folder, its object entry and object file."""
    directory = tmp_path / "cache"
    shutil.copytree(object_template, directory)
    return (directory, *_object_entry(directory))


def _object_rejected(directory: Path, reason: str) -> None:
    """The object is not run, the kernel comes from numba's verified cache instead, and the object is
    written again for the next process."""
    rejected_before = len(cache_module.stats.rejected)
    with pytest.warns(RuntimeWarning, match="not trusted and is rebuilt"):
        again = _lower(directory)
    assert not again.loaded
    assert reason in cache_module.stats.rejected[rejected_before]
    assert _lower(directory).loaded  # repaired


def test_a_second_process_runs_the_verified_object_code(stored_object):
    directory, entry_path, object_path = stored_object
    compiled = _lower(directory)
    assert compiled.from_disk and compiled.loaded
    entry = json.loads(entry_path.read_text())
    assert set(entry) == {"key", "object", "loader"} and set(entry["loader"]) == {"entry", "exceptions"}
    assert {"cpu", "features", "numba", "llvmlite", "numpy"} <= set(entry["key"])
    assert stat.S_IMODE(object_path.stat().st_mode) == 0o600
    assert stat.S_IMODE((directory / "objects").stat().st_mode) == 0o700


def test_damaged_object_code_is_not_loaded(stored_object):
    directory, _, object_path = stored_object
    code = bytearray(object_path.read_bytes())
    code[len(code) // 2] ^= 0xFF
    object_path.write_bytes(bytes(code))
    _object_rejected(directory, "does not match its recorded hash")


def test_an_object_entry_with_another_checksum_is_not_loaded(stored_object):
    directory, entry_path, _ = stored_object
    entry = json.loads(entry_path.read_text())
    entry["object"] = "0" * 64
    entry_path.write_text(json.dumps(entry))
    _object_rejected(directory, "does not match its recorded hash")


def test_an_object_file_that_is_a_symlink_is_not_loaded(stored_object, tmp_path):
    directory, _, object_path = stored_object
    elsewhere = tmp_path / "elsewhere.o"
    elsewhere.write_bytes(object_path.read_bytes())
    object_path.unlink()
    object_path.symlink_to(elsewhere)
    _object_rejected(directory, "cannot be opened as a regular file")


def test_an_objects_folder_others_can_write_to_is_refused(stored_object):
    directory, _, _ = stored_object
    (directory / "objects").chmod(0o777)
    with pytest.warns(RuntimeWarning, match="not using the disk cache: .*objects is writable by other users"):
        assert not _lower(directory).loaded


def test_a_symlinked_objects_folder_is_refused(stored_object, tmp_path):
    directory, _, _ = stored_object
    moved = tmp_path / "moved"
    (directory / "objects").rename(moved)
    (directory / "objects").symlink_to(moved, target_is_directory=True)
    with pytest.warns(RuntimeWarning, match="not using the disk cache: .*objects is not a directory \\(a symlink\\)"):
        assert not _lower(directory).loaded


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="giving a folder away needs root")
def test_an_objects_folder_owned_by_another_user_is_refused(stored_object):
    directory, _, _ = stored_object
    os.chown(directory / "objects", 4321, -1)
    with pytest.warns(RuntimeWarning, match="not using the disk cache: .*objects is not owned by you"):
        assert not _lower(directory).loaded


def _falls_back_with_a_log_line(directory: Path, capfd, monkeypatch, said: str) -> None:
    monkeypatch.setenv("JITGRAD_LOG", "cache")
    capfd.readouterr()
    compiled = _lower(directory)   # numba's verified entry, then the object code stored again
    assert not compiled.loaded and said in capfd.readouterr().err


def test_object_code_that_is_not_an_object_falls_back(stored_object, capfd, monkeypatch):
    """An entry consistent with its file (written by the user, say by another tool) whose bytes are not
    an ELF object: the loader refuses it before LLVM sees it."""
    directory, entry_path, object_path = stored_object
    object_path.write_bytes(b"not an object")
    entry = json.loads(entry_path.read_text())
    entry["object"] = hashlib.sha256(b"not an object").hexdigest()
    entry_path.write_text(json.dumps(entry))
    _falls_back_with_a_log_line(directory, capfd, monkeypatch, "not a 64-bit little-endian ELF file; compiling")
    assert _lower(directory).loaded


def test_a_symbol_this_process_lacks_falls_back(stored_object, capfd, monkeypatch):
    directory, _, _ = stored_object
    resolve = object_loader.Runtime.resolve
    monkeypatch.setattr(object_loader.Runtime, "resolve", lambda self, name: name != "Py_IncRef" and resolve(self, name))
    _falls_back_with_a_log_line(directory, capfd, monkeypatch, "symbols this process does not have: Py_IncRef")


@pytest.mark.parametrize("changed", ["cpu", "numba"])
def test_another_cpu_or_numba_version_is_a_miss(stored_object, capfd, monkeypatch, changed):
    directory, _, _ = stored_object
    if changed == "cpu":
        real = cache_module.machine()
        monkeypatch.setattr(cache_module, "machine", lambda: {**real, "cpu": "other"})
    else:
        monkeypatch.setattr(cache_module, "installed_version", lambda package: "0.0" if package == "numba" else "1.0")
    _falls_back_with_a_log_line(directory, capfd, monkeypatch, "no object code for kernel")


def test_a_truncated_symbol_table_is_a_load_failure(stored_object):
    _, _, object_path = stored_object
    code = object_path.read_bytes()
    undefined, defined = object_loader.elf_symbols(code)
    assert "NRT_adapt_ndarray_from_python" in undefined and any(s.startswith("_ZN7cpython") for s in defined)
    with pytest.raises(object_loader.LoadFailure):
        object_loader.elf_symbols(code[:len(code) // 3])


def test_an_exception_raised_by_loaded_object_code_is_numbas(tmp_path):
    """A kernel loaded from object code raises what numba's would, from its exception table (nothing
    is unpickled): an integer division by zero."""
    def divide(a, b):
        return a // b
    a, b = np.array([7, -7, 3]), np.array([2, 2, 0])
    graph = passes.PassManager().run(fx.trace(divide, jg.tensor(a), jg.tensor(b + 1)).graph)
    directory = tmp_path / "cache"
    for loaded in (False, True):
        clear_cache()
        compiled = lower(graph, cache=DiskCache(directory))
        assert compiled.loaded == loaded
        assert list(compiled(a, np.array([2, 2, 1]))[0]) == [3, -4, 3]
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            compiled(a, b)


def _source_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "package"
    (tree / "inner").mkdir(parents=True)
    (tree / "top.py").write_text("A = 1\n")
    (tree / "inner" / "ops.py").write_text("B = 2\n")
    return tree


def test_a_source_file_rewritten_with_its_size_and_modification_time_changes_the_fingerprint(tmp_path):
    """Entries are keyed by jitgrad's source, read by the files' status: an edit that keeps the size
    and sets the modification time back still moves the change time."""
    tree = _source_tree(tmp_path)
    edited = tree / "inner" / "ops.py"
    later = edited.stat().st_ctime + 60   # as a later process sees it: no file recent
    before = source_fingerprint.tree_fingerprint(str(tree), later)
    times = edited.stat()
    edited.write_text("B = 3\n")
    os.utime(edited, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert edited.stat().st_size == times.st_size and edited.stat().st_mtime_ns == times.st_mtime_ns
    assert source_fingerprint.tree_fingerprint(str(tree), later) != before


def test_a_source_file_changed_within_its_timestamps_granularity_is_read(tmp_path):
    """A file whose times are recent is hashed by its bytes too (it might be rewritten within the same
    timestamp); later the same tree fingerprints by status alone."""
    tree = _source_tree(tmp_path)
    written = max(os.stat(p).st_ctime for p in (tree / "top.py", tree / "inner" / "ops.py"))
    recent = source_fingerprint.tree_fingerprint(str(tree), written)
    later = source_fingerprint.tree_fingerprint(str(tree), written + source_fingerprint.RACY_SECONDS + 1)
    assert recent != later
    assert source_fingerprint.tree_fingerprint(str(tree), written) == recent
