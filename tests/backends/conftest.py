"""Lets the graph-mode tests reuse ``tests/op_samples.py``, the one list of samples of every op."""
import sys
from pathlib import Path

TESTS = str(Path(__file__).resolve().parent.parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
