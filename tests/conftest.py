"""Options of the whole suite, and the one place that makes the shared helpers importable. Here, at the
top of ``tests``, so that pytest knows them however it is started (``python -m pytest``, or on one file
or folder)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

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


INSTALL = {"torch": "torch==2.13.0", "jax": "jax", "autograd": "autograd"}


def pytest_terminal_summary(terminalreporter):
    """Tests skipped for an optional dependency that is not installed say so once, with the command
    that installs it (their skip reasons read "... not installed: pip install ...")."""
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        missing = re.match(r"could not import '(\w+)'", reason)  # pytest.importorskip's reason
        if missing:
            name = missing.group(1)
            reason = f"needs {name}, which is not installed: pip install {INSTALL.get(name, name)}"
        if "not installed" in reason:
            reasons[reason] = reasons.get(reason, 0) + 1
    for reason, count in sorted(reasons.items()):
        terminalreporter.write_line(f"{count} tests skipped: {reason}")

