"""The numba CPU backend's check that every op of a graph has a lowering here, raising its
``LoweringError`` (``errors.py``); what a backend needs to know of an IR node is in
``backends/nodes.py``, shared with numba_cuda."""
from __future__ import annotations

from ...fx.graph import Graph
from ..nodes import check_lowerings as check_backend_lowerings
from .errors import LoweringError
from .statements import STATEMENTS


def check_lowerings(graph: Graph) -> None:
    """Raises ``LoweringError`` for the first node whose op has no lowering, or names an intrinsic
    this backend does not implement; a loop's body is checked node by node (``loops.py`` writes loops)."""
    check_backend_lowerings(graph, STATEMENTS, "numba CPU", LoweringError, loops=True)
