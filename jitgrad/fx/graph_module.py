"""``GraphModule``: a graph made callable through the Python source it prints as.

Calling the module runs ``.code`` (compiled once, and again after ``recompile()``), so what a user reads
is exactly what runs. When the traced function wrote gradients into ``.grad`` of its inputs, the
source returns them beside the result (``return (result, {"x": grad_x})``) and keeps the function
pure; the module then does the writing, adding to a ``.grad`` that is already there as eager
``backward()`` would.
"""
from __future__ import annotations

import itertools
import linecache
from typing import Any

from ..tensor import Tensor
from .codegen import python_source
from .graph import Graph

# The output node's meta flag saying its value is ``(result, {placeholder name: gradient})``.
WRITES_GRAD = "writes_grad"

_module_ids = itertools.count()


class GraphModule:
    """A callable over a ``Graph``; ``.code`` is its Python source, ``.constants`` what that source
    reads from its ``constants`` argument."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.recompile()

    def recompile(self) -> None:
        """Regenerates ``.code`` after the graph changed. The source is put in ``linecache`` so that
        tracebacks through ``forward`` show the generated line."""
        self.code, self.constants = python_source(self.graph)
        filename = f"<jitgrad.fx generated {next(_module_ids)}>"
        linecache.cache[filename] = (len(self.code), None, self.code.splitlines(True), filename)
        namespace: dict[str, Any] = {}
        exec(compile(self.code, filename, "exec"), namespace)
        self.forward = namespace["forward"]

    def __call__(self, *args: Any) -> Any:
        out = self.forward(*args, constants=self.constants)
        if not self.graph.output_node.meta.get(WRITES_GRAD):
            return out
        result, grads = out
        names = [p.name for p in self.graph.placeholders]
        for name, grad in grads.items():
            target = args[names.index(name)]
            if isinstance(target, Tensor):
                old = target._grad
                target.grad = grad if old is None else Tensor._make(old._data + grad._data)
        return result

    def __str__(self) -> str:
        return self.code

    def __repr__(self) -> str:
        return f"GraphModule({len(self.graph)} nodes)"
