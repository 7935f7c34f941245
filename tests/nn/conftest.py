"""Lets these tests import ``tests/layer_pairs.py`` (a layer made in both libraries)."""
import sys
from pathlib import Path

TESTS = str(Path(__file__).resolve().parent.parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
