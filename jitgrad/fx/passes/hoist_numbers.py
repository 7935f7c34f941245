"""``hoist_numbers``: takes the arithmetic on Python numbers out of a graph, into a Python prelude.

A graph whose Python numbers are inputs (``fx.numbers``: a learning rate, a step count) holds the
arithmetic on them as ``NumberOp`` nodes (``lr * 0.5``, ``0.9 ** step``). No backend needs to lower
them: they are a few Python operations per call, and computing them in Python gives exactly the
numbers eager mode gives. So the pass moves them into a ``NumberPrelude``, a generated Python function
from the graph's number placeholders to the numbers its tensor ops read, and each of those becomes a
placeholder of its own, after the existing ones. What is left for a backend is tensor ops, with
Python numbers only as placeholders.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..codegen import ConstantPool, literal
from ..graph import Graph
from ..node import Node, Opcode
from ..numbers import is_number_op


@dataclass
class NumberPrelude:
    """``prelude(*numbers)`` takes the values of the number placeholders named ``inputs`` and returns
    those of the placeholders named ``outputs``; ``source`` is its Python source."""

    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    source: str = ""

    def __post_init__(self) -> None:
        self._fn: Callable[..., tuple] | None = None
        if self.outputs:
            namespace: dict[str, Any] = {}
            exec(compile(self.source, "<jitgrad.fx number prelude>", "exec"), namespace)  # noqa: S102
            self._fn = namespace["prelude"]

    def __call__(self, *numbers: Any) -> tuple:
        return self._fn(*numbers) if self._fn is not None else ()

    def __bool__(self) -> bool:
        return bool(self.outputs)


def _is_number_node(node: Node) -> bool:
    return node.op is Opcode.CALL_FUNCTION and is_number_op(node.target)


def hoist_numbers(graph: Graph) -> NumberPrelude:
    """Moves ``graph``'s number ops (edited in place) into the returned prelude."""
    record = graph.record_pass("hoist_numbers")
    hoisted = [n for n in graph.nodes if _is_number_node(n)]
    if not hoisted:
        return NumberPrelude()
    inputs = [p.name for p in graph.placeholders if p.meta.get("python_number")]
    pool = ConstantPool()
    body = [f"    {n.name} = {n.target.source([literal(a, pool, n.name) for a in n.args])}" for n in hoisted]
    outputs: list[str] = []
    results: list[str] = []
    for node in hoisted:
        readers = [u for u in node.users if not _is_number_node(u)]
        if not readers:
            continue
        meta = {k: node.meta[k] for k in ("shape", "dtype", "python_number")}  # an input, of no phase
        placeholder = graph.placeholder(node.name, meta)
        for user in readers:
            user.replace_input_with(node, placeholder)
        outputs.append(placeholder.name)
        results.append(node.name)
        record.changes.append(f"{node.name} computed in Python, read as {placeholder.name}")
    for node in reversed(hoisted):
        graph.erase_node(node)
    returned = "".join(f"{r}, " for r in results)
    source = (f"def prelude({', '.join(inputs)}):\n" + "\n".join(body) + f"\n    return ({returned})\n")
    return NumberPrelude(inputs, outputs, source)


__all__ = ["NumberPrelude", "hoist_numbers"]
