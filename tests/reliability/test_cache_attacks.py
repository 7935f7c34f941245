"""The disk cache as a security boundary (issue 12): a forged entry, an edited kernel, a folder others
can write to, a symlink, a FIFO, damaged numba files and a full cache must each end in a recompile or
a refusal with a warning, never in running what was planted; and writes leave nothing half-done.

Each test lowers one small graph with the numba backend into a cache of its own, then tampers with
what was written and lowers the same graph in a "new process" (the in-memory kernels forgotten).
"""
from __future__ import annotations

import json
import os
import stat
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import jitgrad as jg
from jitgrad import fx
from jitgrad.backends.numba_cpu import clear_cache, lower
from jitgrad.compile import cache as cache_module
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
    for name in [n for n in sys.modules if n.startswith("jitgrad_kernel_")]:
        del sys.modules[name]
    compiled = lower(_graph(), cache=DiskCache(directory))
    assert float(compiled(X, W)[0]) == pytest.approx(EXPECTED, rel=1e-12)
    return compiled


@pytest.fixture
def stored(tmp_path):
    """A cache holding one kernel's entry, and that entry's name."""
    directory = tmp_path / "cache"
    first = _lower(directory)
    assert not first.from_disk
    (entry,) = directory.glob("jitgrad_kernel_*.json")
    return directory, entry.name[:-len(".json")]


def _warned_and_rebuilt(directory: Path, reason: str) -> None:
    rejected_before = len(cache_module.stats.rejected)
    with pytest.warns(RuntimeWarning, match="not trusted and is rebuilt"):
        again = _lower(directory)
    assert not again.from_disk
    assert reason in cache_module.stats.rejected[rejected_before]
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
    import hashlib
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
