"""``lower``: a captured graph through the pass pipeline and the backend, as a ``Lowered``.

It keeps what ``explain`` shows (the IR before and after, fusion groups, the memory plan, the
source) and turns any failure of the backend into ``Unsupported``, naming the op and the user's line.
The tracing half of ``jitgrad.compile`` calls it after a trace; a warm process, whose programs come
from the warm-start index, never imports it (nor ``jitgrad.fx``, which it needs).
"""
from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

from ..fx.graph import Graph, Listing
from ..fx.node import Node, Opcode
from ..fx.passes import PIPELINES, PassManager
from . import placement
from .backend import Backend
from .compiled_function import Lowered, logs
from .unsupported import Unsupported

# Structural keys of the graphs lowered so far: a backend that caches kernels by structure (numba's
# does, by generated source) reuses them for a graph equal up to sizes, so lowering it is cheap.
_SEEN_KEYS: set[Any] = set()


def _failing_node(graph: Graph, error: BaseException) -> Node | None:
    node = getattr(error, "node", None)
    if isinstance(node, Node):
        return node
    text = str(error)
    for candidate in graph.nodes:
        if candidate.op is Opcode.CALL_FUNCTION and (candidate.name in text or candidate.target_name in text):
            return candidate
    return None


def _structural_key(compiled: Any, graph: Graph, backend: Backend, options: dict[str, Any]) -> tuple | None:
    """What says whether this process lowered an equal graph up to sizes before: the compiled
    object's own key when it has one (generating the code again just to hash it costs a lowering)."""
    code = getattr(compiled, "key", None)
    if code is None and backend.structural_key is not None:
        code = backend.structural_key(graph)
    return None if code is None else (backend.name, code, options["fastmath"], options["parallel"])


def lower(graph: Graph, backend: Backend, options: dict[str, Any], label: str,
          sources: dict[str, str], disk: Any = None, example: list[np.ndarray] | None = None) -> Lowered:
    """Passes then the backend; an op without a lowering (or any backend failure) is ``Unsupported``,
    naming the op and the user's line where the trace saw it. The lowered code runs once on copies of
    ``example`` here, so that a backend compiling lazily (numba-cuda compiles at the first launch) fails
    now, while the call can still run eagerly, and never in the middle of a backward; a kernel run from
    loaded machine code (``loaded``: numba_cpu's object code) is not run."""
    placement.constants_on_host(graph)
    before = Listing(graph)  # printed if ``explain`` asks: a long trace's text costs more than its fields
    for node in graph.nodes:  # the lowered graph runs on arrays, where grad mode means nothing, so
        node.meta.pop("no_grad", None)  # a backward's recomputation may share the forward's node
    manager = PassManager(PIPELINES[backend.pipeline], lint=os.environ.get("JITGRAD_LINT_PASSES") == "1")
    graph = manager.run(graph)
    records = {r.name: r for r in graph.history}
    fusion = records.get("group_fusions")
    memory = records.get("plan_memory")
    out_dtypes = [np.dtype(n.meta["dtype"]) for n in graph.output_node.args[0]]
    try:
        compiled = backend.lower(graph, fastmath=options["fastmath"], parallel=options["parallel"], cache=disk)
        example_out = None
        if example is not None and not getattr(compiled, "loaded", False):  # loaded machine code has nothing
            # left to compile, so nothing that could fail later: the example call would cost a step
            example_out = list(compiled(*[placement.copy(a) if placement.is_array(a) else a for a in example]))
    except Exception as error:  # noqa: BLE001 - a backend's own traceback never reaches the user
        node = _failing_node(graph, error)
        op = node.target_name if node is not None else None
        where = sources.get(node.name) if node is not None else None
        kind = "no lowering" if isinstance(error, backend.lowering_errors) else \
            f"the {backend.name} backend failed ({type(error).__name__})"
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise Unsupported(f"{kind}: {first_line}", op, where) from None
    key = _structural_key(compiled, graph, backend, options)
    reused = key is not None and key in _SEEN_KEYS
    if key is not None:
        _SEEN_KEYS.add(key)
    source = getattr(compiled, "source", "")
    from_disk = bool(getattr(compiled, "from_disk", False))
    if logs("output_code") and not reused and not from_disk:
        print(f"--- jitgrad.compile: generated code for {label} ({backend.name}) ---\n{source}", file=sys.stderr)
    lowered = Lowered(label, compiled, source, before, str(graph), manager.report(),
                      list(fusion.changes) if fusion else [], dict(memory.stats) if memory else {}, out_dtypes,
                      reused, from_disk)
    lowered.example_out = example_out
    return lowered


__all__ = ["lower"]
