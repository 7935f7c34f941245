"""The files the disk cache trusts (``cache.py``): how it reads, checks and writes them, whatever they
hold. A file is read only if it is a regular file of bounded size, opened without following a symlink
and without blocking; a folder holds the cache only if it is the user's and nobody else may write to
it; a file is written through a temporary file renamed into place, readable by the user alone."""
from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path


class Rejected(Exception):
    """An entry, or a file of it, that fails a check."""


class Vanished(Rejected):
    """A file of an entry that is not there: another process sharing the cache removed it between
    two reads (rewriting the entry, or evicting it). A miss, not a failed check: nothing is removed
    and no warning is given (until 2026-11-28 it was one, and removed what that process had just written)."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes, opened without
    following a symlink and without blocking (a FIFO would wait for a writer forever)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        raise Vanished(f"{path.name} is not there") from None
    except OSError as error:
        raise Rejected(f"{path.name} cannot be opened as a regular file ({error.strerror})") from None
    with os.fdopen(descriptor, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Rejected(f"{path.name} is not a regular file")
        if info.st_size > limit:
            raise Rejected(f"{path.name} is {info.st_size} bytes, over the limit of {limit}")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise Rejected(f"{path.name} grew past the limit of {limit} bytes while read")
    return data


def unsafe_folder(path: Path, own: bool) -> str | None:
    """Why ``path`` may not hold (``own``: or lead to) the cache, or None."""
    try:
        info = os.lstat(path)
    except OSError as error:
        return f"{path} cannot be read ({error.strerror})"
    if not stat.S_ISDIR(info.st_mode):
        return f"{path} is not a directory" + (" (a symlink)" if stat.S_ISLNK(info.st_mode) else "")
    uid = os.getuid() if hasattr(os, "getuid") else info.st_uid
    if own:
        if info.st_uid != uid:
            return f"{path} is not owned by you"
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"{path} is writable by other users"
        return None
    if info.st_uid not in (uid, 0):
        return f"{path} (above the cache) is owned by another user"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
        return f"{path} (above the cache) is writable by other users"
    return None


def write_atomically(path: Path, data: bytes) -> None:
    """``data`` into ``path`` through a temporary file renamed into place; the temporary file is
    removed if anything fails, so a failed write leaves nothing behind."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".jitgrad-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
