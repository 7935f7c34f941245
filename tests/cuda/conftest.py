"""The CUDA tests: they run where ``jitgrad.cuda.is_available()``, on a GPU or under numba's simulator
(``NUMBA_ENABLE_CUDASIM=1``, set before numba is imported), and are skipped elsewhere."""
import pytest

import jitgrad

REASON = ("CUDA is not available: run them under numba's simulator with "
          "`NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda`")


def pytest_collection_modifyitems(config, items):
    if jitgrad.cuda.is_available():
        return
    skip = pytest.mark.skip(reason=REASON)
    for item in items:
        if "tests/cuda/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
