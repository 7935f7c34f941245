"""Runs a script of ``examples/`` (or a test's own script) in a fresh interpreter, as a user would.

A subprocess, not ``runpy``: each example parses ``sys.argv``, may call ``sys.exit``, and its compile
caches and random state must not leak into the rest of the suite. The repository comes first on
``PYTHONPATH``, so the checkout is what runs, whatever jitgrad is installed.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
INSTALL = 'pip install -e ".[examples]"'


def need(module: str) -> None:
    """Skips the calling test, with the install command, when the examples extra is not installed."""
    pytest.importorskip(module, reason=f"{module} is not installed: {INSTALL}")


def run(script: Path | str, *args: str, timeout: float = 120) -> str:
    """The script's stdout; a non-zero exit fails the test with its stderr."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=ROOT)
    assert done.returncode == 0, f"{script} {' '.join(args)} failed:\n{done.stderr[-4000:]}"
    return done.stdout


def numbers(pattern: str, text: str) -> list[tuple[float, ...]]:
    """Every match of ``pattern`` in ``text``, its groups as floats."""
    return [tuple(map(float, match)) if isinstance(match, tuple) else (float(match),)
            for match in re.findall(pattern, text)]
