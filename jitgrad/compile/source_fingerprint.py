"""A fingerprint of jitgrad's own source files, which every cache entry's key holds: a development
checkout changes code without changing ``__version__``, and machine code built by other code must not
be trusted."""
from __future__ import annotations

import functools
import hashlib
import os
import time

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


__all__ = ["RACY_SECONDS", "source_fingerprint", "tree_fingerprint"]
