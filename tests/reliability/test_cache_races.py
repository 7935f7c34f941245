"""Processes sharing one disk cache: another process may rewrite or evict an entry between any two of
this one's reads of it. Each test makes that happen between two reads (the file reads patched) and
checks that what was verified is used, or that the entry is a quiet miss: never an exception out of
the caller's call, never a "not trusted" warning, never the removal of what the other process wrote.
"""
from __future__ import annotations

import os
import warnings

from jitgrad.compile import cache as cache_module
from jitgrad.compile.cache import DiskCache

KEY = {"function": "f", "call": [1, 2]}
PROGRAM = {"text_bytes": 5}
DATA = b"hello, world"


def _index(tmp_path):
    index = DiskCache(tmp_path / "cache").of_kind("index")
    assert index.store_index(KEY, PROGRAM, DATA)
    entry = index.directory / f"{index.name(KEY)}.json"
    return index, entry, index.directory / "index" / f"{entry.stem}.bin"


def _after_reading(monkeypatch, suffix, then):
    """``read_regular`` calls ``then()`` once it has read a file ending in ``suffix``."""
    real = cache_module.read_regular

    def read(path, limit):
        data = real(path, limit)
        if path.name.endswith(suffix):
            then()
        return data
    monkeypatch.setattr(cache_module, "read_regular", read)


def test_an_entry_removed_after_it_was_verified_is_still_used(tmp_path, monkeypatch):
    """Removed between the data's read and the entry's "recently used" mark: ``os.utime`` raised
    FileNotFoundError out of the compiled call."""
    index, entry, data = _index(tmp_path)
    _after_reading(monkeypatch, ".bin", lambda: (os.unlink(entry), os.unlink(data)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert index.load_index(KEY) == (PROGRAM, DATA)


def test_a_data_file_removed_while_its_entry_is_read_is_a_quiet_miss(tmp_path, monkeypatch):
    """The other process rewrote the entry (its store removes the old files first): this one's read of
    the data finds nothing. That was a "not trusted" warning and a removal of the entry the other
    process was writing."""
    index, entry, data = _index(tmp_path)
    rejected = len(cache_module.stats.rejected)
    _after_reading(monkeypatch, ".json", lambda: os.unlink(data))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert index.load_index(KEY) is None
    assert len(cache_module.stats.rejected) == rejected and entry.exists()
    monkeypatch.undo()
    assert index.store_index(KEY, PROGRAM, DATA) and index.load_index(KEY) == (PROGRAM, DATA)
