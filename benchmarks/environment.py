"""What the numbers were measured on. Timings mean little without the machine, thread counts and
library versions next to them, so the report carries them."""
from __future__ import annotations

import datetime
import os
import platform
import sys

import libraries


def cpu_model() -> str:
    """The CPU's model name as ``lscpu`` shows it (read from /proc/cpuinfo, so lscpu need not exist)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def usable_cores() -> int:
    """Cores this process may run on, which is what ``nproc`` reports (not the host's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def describe(available: list[str]) -> list[tuple[str, str]]:
    """(name, value) pairs describing this run's machine and software."""
    rows = [("date", datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")),
            ("cpu", f"{cpu_model()}, {usable_cores()} usable cores (nproc)"),
            ("python", platform.python_version())]
    for dist in dict.fromkeys(libraries.BY_KEY[key].dist for key in available):  # torch.compile is torch
        lib = next(lib for lib in libraries.BY_KEY.values() if lib.dist == dist)
        rows.append((dist, libraries.version(lib)))
    if "torch" in available:
        import torch
        rows.append(("torch threads", str(torch.get_num_threads())))
    # Some machines need OPENBLAS_CORETYPE set for OpenBLAS to pick a working kernel; the benchmark
    # leaves it as found and only records it, since it changes matmul speed.
    rows.append(("OPENBLAS_CORETYPE", os.environ.get("OPENBLAS_CORETYPE", "(not set)")))
    return rows


def announce(candidates: tuple[libraries.Library, ...]) -> tuple[list[str], dict[str, str], list[tuple[str, str]]]:
    """Probe ``candidates``, exit if jitgrad or numpy is missing, print what is skipped and the run's
    description; returns the available keys, the skipped ones with reasons, and the description."""
    available, skipped = libraries.probe(candidates)
    for key in ("jitgrad", "numpy"):
        if key not in available:
            sys.exit(f"error: {key} is required but cannot be imported: {skipped[key]}")
    for key, reason in skipped.items():
        print(f"note: skipping {libraries.label(key)} (not importable: {reason})")
    rows = describe(available)
    for name, value in rows:
        print(f"{name}: {value}")
    return available, skipped, rows
