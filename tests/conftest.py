"""Options of the whole suite, and the one place that makes the shared helpers importable. Here, at the
top of ``tests``, so that pytest knows them however it is started (``python -m pytest``, or on one file
or folder)."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

# Compiles in the suite check the graph after every pass (jitgrad.compile checks it once, at the end),
# so that a pass that breaks a graph is the one named.
os.environ.setdefault("JITGRAD_LINT_PASSES", "1")

# Every test folder imports the shared modules of ``tests/`` (helpers, op_samples, plain_python_kernels)
# and the benchmarks' workloads by their plain names.
ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT / "tests", ROOT / "benchmarks"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


def pytest_addoption(parser):
    parser.addoption("--many", nargs="?", const=10_000, type=int, default=None, metavar="N",
                     help="run N random programs (10,000 without N) per random-program test, instead of "
                          "the few hundred of a CI run (tests/compile/test_random_programs.py)")


from cuda_support import CUDA_FILES_NOT_RUN, GPU, MISSING, SIMULATOR, SIMULATOR_COMMAND, cuda_mode  # noqa: E402

INSTALL = {"torch": "torch==2.13.0", "jax": "jax", "autograd": "autograd", "numba.cuda": "'numba-cuda[cu12]'",
           "sklearn": "-e '.[examples]'", "matplotlib": "-e '.[examples]'"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` run only on a real device; the simulator is not one (it is far too slow for
    their sizes, and it has no timings worth taking). numba.cuda is imported only if such a test exists."""
    gpu_tests = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_tests or cuda_mode() == GPU:
        return
    why = {SIMULATOR: "the CUDA simulator is on", MISSING: "numba-cuda is not installed"}.get(
        cuda_mode(), "numba.cuda.is_available() is False")
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU ({why}): run on a machine with one, without "
                                   "NUMBA_ENABLE_CUDASIM")
    for item in gpu_tests:
        item.add_marker(skip)


def pytest_terminal_summary(terminalreporter):
    """Tests skipped for an optional dependency that is not installed say so once, with the command
    that installs it (their skip reasons read "... not installed: pip install ..."); so do the tests
    that need a GPU, and the CUDA test files a run without the simulator leaves out, with the command
    that runs them."""
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        missing = re.match(r"could not import '([\w.]+)'", reason)  # pytest.importorskip's reason
        if missing:
            name = missing.group(1)
            reason = f"needs {name}, which is not installed: pip install {INSTALL.get(name, name)}"
        if "not installed" in reason or reason.startswith("needs a CUDA GPU"):
            reasons[reason] = reasons.get(reason, 0) + 1
    for reason, count in sorted(reasons.items()):
        terminalreporter.write_line(f"{count} tests skipped: {reason}")
    not_run = terminalreporter.config.stash.get(CUDA_FILES_NOT_RUN, [])
    if not_run:
        how = ("install numba-cuda (pip install 'numba-cuda[cu12]'), then " if cuda_mode() == MISSING else "")
        terminalreporter.write_line(
            f"{len(not_run)} CUDA test files not run (no GPU, simulator off): {how}run them on the simulator "
            f"with `{SIMULATOR_COMMAND}`; tests marked gpu run on a machine with a GPU")

