"""The CUDA tests run kernels on a GPU or under numba's simulator (``NUMBA_ENABLE_CUDASIM=1`` set before
numba is imported); anywhere else the directory is skipped."""
import pytest

cuda = pytest.importorskip("numba.cuda", reason='numba-cuda is not installed: pip install "numba-cuda[cu12]"')

if not cuda.is_available():
    pytest.skip("numba.cuda cannot run kernels here (no GPU; run with NUMBA_ENABLE_CUDASIM=1 for the simulator)",
                allow_module_level=True)
