"""The warm-start index and output reuse under the default CPU lowering (the LLVM generator, numba
behind it), not only under numba_cpu: the same tests as test_warm_index.py and test_output_reuse.py,
collected again here, where every kernel comes from llvm_cpu."""
from test_output_reuse import *  # noqa: F401,F403 - the tests and their fixtures, under this BACKEND
from test_warm_index import *  # noqa: F401,F403

BACKEND = ""  # read by conftest.compile_backend: JITGRAD_COMPILE_BACKEND unset, the default lowering
