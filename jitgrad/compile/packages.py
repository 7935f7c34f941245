"""Installed packages' versions, read from their ``*.dist-info`` folder beside the package.

The disk cache keys machine code by numba's and llvmlite's versions, and a warm process must not pay
for them: importing numba to read ``numba.__version__`` costs 0.26 s, and ``importlib.metadata`` itself
~40 ms (it imports ``email``, ``csv``, ``zipfile``...). A package's ``METADATA`` file sits in a folder
named after the distribution beside the package's own folder; ``importlib.util.find_spec`` finds the
package without importing it. Anything else (an egg, a zip, a package that is not there) goes through
``importlib.metadata``.
"""
from __future__ import annotations

import functools
import importlib.util
import os


def _from_dist_info(package: str) -> str | None:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.submodule_search_locations:
        return None
    site = os.path.dirname(os.path.dirname(spec.origin))
    prefix = package.replace("-", "_").lower() + "-"
    try:
        folders = [name for name in os.listdir(site) if name.lower().startswith(prefix) and name.endswith(".dist-info")]
    except OSError:
        return None
    if len(folders) != 1:  # none, or two versions' folders left behind: metadata decides
        return None
    try:
        with open(os.path.join(site, folders[0], "METADATA"), encoding="utf-8") as metadata:
            for line in metadata:
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
                if not line.strip():  # the headers end at the first blank line
                    break
    except OSError:
        return None
    return None


@functools.lru_cache(maxsize=None)
def installed_version(package: str) -> str:
    """``package``'s installed version (a distribution name: ``numba``, ``numba-cuda``), "none" when it
    is not installed."""
    found = _from_dist_info(package) if "-" not in package else None
    if found is not None:
        return found
    import importlib.metadata

    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "none"


__all__ = ["installed_version"]
