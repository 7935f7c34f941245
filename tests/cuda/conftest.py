"""The CUDA tests run where ``numba.cuda`` can run kernels: on a GPU, or under numba's simulator, which CI
starts with ``NUMBA_ENABLE_CUDASIM=1`` set before numba is imported
(``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda``). Anywhere else they skip."""
import pytest


def _available() -> bool:
    try:
        from numba import cuda
    except ImportError:
        return False
    return cuda.is_available()


if not _available():
    pytest.skip("numba.cuda cannot run kernels here (no GPU; run with NUMBA_ENABLE_CUDASIM=1 for the "
                "simulator)", allow_module_level=True)
