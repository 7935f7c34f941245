"""The numba CPU backend's lowering error, and its check that every op of a graph has a lowering here
(what a backend needs to know of an IR node is in ``backends/nodes.py``, shared with numba_cuda)."""
from __future__ import annotations

from ...fx.graph import Graph
from ..nodes import check_lowerings as check_backend_lowerings
from .statements import STATEMENTS


class LoweringError(RuntimeError):
    """An op, or a use of one, that the numba CPU backend cannot lower. Raised by ``lower()``, before any
    compiling, naming the op and the IR node."""


def check_lowerings(graph: Graph) -> None:
    """Raises ``LoweringError`` for the first node whose op has no lowering, or names an intrinsic
    this backend does not implement; a loop's body is checked node by node (``loops.py`` writes loops)."""
    check_backend_lowerings(graph, STATEMENTS, "numba CPU", LoweringError, loops=True)
