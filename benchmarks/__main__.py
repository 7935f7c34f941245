"""``python -m benchmarks``: the whole comparison, the same as ``python benchmarks/run.py``."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the modules import each other by plain name

import run  # noqa: E402

sys.exit(run.main())
