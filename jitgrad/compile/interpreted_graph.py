"""The interpreter backend's "compiled" graph: the graph's generated Python run on the eager ops.

``backend.INTERPRETER`` lowers with it when numba is not there, or when ``JITGRAD_COMPILE_BACKEND``
says so (see ``backend.py``). Its own module because it needs ``jitgrad.fx`` (``GraphModule``), which
choosing a backend must not import: a warm process picks one and never lowers a graph.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import grad_mode
from ..fx.graph import Graph
from ..fx.graph_module import GraphModule
from ..fx.node import iter_leaves
from ..tensor import Tensor


class InterpretedGraph:
    """The fallback "compiled" graph: the graph's generated Python source (``GraphModule.code``) run on
    the eager ops."""

    def __init__(self, source: str, constants: dict[str, Any]) -> None:
        self.source = source
        self.constants = constants
        namespace: dict[str, Any] = {}
        exec(compile(source, "<jitgrad.compile interpreted graph>", "exec"), namespace)
        self._forward = namespace["forward"]

    @classmethod
    def from_graph(cls, graph: Graph) -> "InterpretedGraph":
        module = GraphModule(graph)
        return cls(module.code, module.constants)

    def __call__(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """The outputs, each its own memory: the graph may return an argument itself (``x * 1.0``
        simplified to ``x``), a constant, a view of either or one output twice, and the caller writes
        into what it gets (``.grad`` accumulates in place), as the numba backend's outputs allow."""
        with grad_mode.no_grad():  # a Python number (fx.numbers) is passed as it is, as eager would get it
            out = self._forward(*(Tensor._make(a) if type(a) is np.ndarray else a for a in arrays),
                                constants=self.constants)
        owned = [*(a for a in arrays if type(a) is np.ndarray),
                 *(c._data for c in self.constants.values() if isinstance(c, Tensor))]
        results = []
        for value in iter_leaves(out):
            value = value._data if isinstance(value, Tensor) else value
            if isinstance(value, np.ndarray):
                if any(np.shares_memory(value, other) for other in owned):
                    value = value.copy()
                owned.append(value)
            results.append(value)
        return tuple(results)


__all__ = ["InterpretedGraph"]
