"""Writes a graph as the Python source of ``def forward(...)``: one line per node, each calling its
registry op through ``REGISTRY["name"]``, with the node's IR line (``fx.printing``) as a comment. Nodes that ran with
grad mode off (a backward without ``create_graph``) run inside ``with jitgrad.no_grad():``, so the
module records exactly the autograd graph eager mode would.

Constants: a tensor of at most ``LITERAL_ELEMENTS`` elements is written into the source as a literal,
so that small programs read (and run) on their own; a larger one is read from the ``constants`` dict
the ``GraphModule`` holds and passes in, which keeps the source short. Attribute values numpy cannot
write back as Python text (large index arrays) go into the same dict. Non-finite floats are written
as ``float("inf")``/``float("nan")`` so that the source always parses.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .graph import Graph
from .loop import Loop
from .node import Node, Opcode, tuple_item
from .numbers import is_number_op
from .printing import format_node

LITERAL_ELEMENTS = 16

HEADER = "import numpy as np\nimport jitgrad\nfrom jitgrad.ops.registry import REGISTRY\n"


class ConstantPool:
    """The values the source refers to by name instead of spelling out."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def add(self, name: str, value: Any) -> str:
        key = name
        while key in self.values:
            key += "_"
        self.values[key] = value
        return f'constants["{key}"]'


def _scalar_literal(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return repr(bool(value))
    if isinstance(value, (int, np.integer)):
        return repr(int(value))
    value = float(value)
    if math.isnan(value):
        return 'float("nan")'
    if math.isinf(value):
        return 'float("inf")' if value > 0 else '-float("inf")'
    return repr(value)


def _array_literal(array: np.ndarray) -> str:
    elements = ", ".join(_scalar_literal(v) for v in array.reshape(-1).tolist())
    return f"np.array([{elements}], dtype=np.{array.dtype.name}).reshape({array.shape!r})"


def literal(value: Any, pool: ConstantPool, hint: str) -> str:
    """Python source that evaluates to ``value``; what has no short spelling goes into ``pool``."""
    if isinstance(value, Node):
        return value.name
    if isinstance(value, np.ndarray):
        return _array_literal(value) if value.size <= LITERAL_ELEMENTS else pool.add(hint, value)
    if isinstance(value, np.dtype):
        return f"np.dtype({value.name!r})"
    if isinstance(value, (bool, int, float, np.generic)) and not isinstance(value, np.ndarray):
        text = _scalar_literal(value)
        return f"np.{value.dtype.name}({text})" if isinstance(value, np.generic) else text
    if isinstance(value, tuple):
        items = [literal(v, pool, hint) for v in value]
        return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v, pool, hint) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {literal(v, pool, hint)}" for k, v in value.items()) + "}"
    if value is None or value is Ellipsis or isinstance(value, (str, slice)):
        return repr(value)
    return pool.add(hint, value)


def _statement(node: Node, graph: Graph, pool: ConstantPool) -> str:
    if node.op is Opcode.GET_ATTR:
        value = graph.constants[node.target]._data
        if value.size <= LITERAL_ELEMENTS:
            return f"{node.name} = jitgrad.from_numpy({_array_literal(value)})"
        return f"{node.name} = {pool.add(node.name, graph.constants[node.target])}"
    if node.target is tuple_item:
        source, index = node.args
        return f"{node.name} = {source.name}[{index}]"
    if is_number_op(node.target):
        return f"{node.name} = {node.target.source([literal(a, pool, node.name) for a in node.args])}"
    args = [literal(a, pool, f"{node.name}_arg") for a in node.args]
    args += [f"{k}={literal(v, pool, f'{node.name}_{k}')}" for k, v in node.kwargs.items()]
    return f'{node.name} = REGISTRY["{node.target.name}"]({", ".join(args)})'


def _body(graph: Graph, pool: ConstantPool, indent: str) -> list[str]:
    """The statements of a function computing ``graph`` from its placeholders, ``indent`` deep."""
    body: list[str] = []
    in_no_grad = False
    for node in graph.nodes:
        if node.op is Opcode.PLACEHOLDER:
            continue
        if node.meta.get("no_grad", False) != in_no_grad and node.op is not Opcode.OUTPUT:
            in_no_grad = not in_no_grad
            if in_no_grad:
                body.append(f"{indent}with jitgrad.no_grad():")
        inner = indent + "    " if in_no_grad else indent
        if node.op is Opcode.OUTPUT:
            body.append(f"{indent}return {literal(node.args[0], pool, 'output')}")
            continue
        body.append(f"{inner}# {format_node(node)}")
        if isinstance(node.target, Loop):
            body += _loop_statements(node, pool, inner)
        else:
            body.append(inner + _statement(node, graph, pool))
    return body


def _loop_statements(node: Node, pool: ConstantPool, indent: str) -> list[str]:
    """A loop (``fx.loop``): its body as a nested function, run by ``run_loop``."""
    loop: Loop = node.target
    name = f"{node.name}_body"
    params = ", ".join(p.name for p in loop.body.placeholders)
    carries, sliced, invariants = (literal(a, pool, node.name) for a in node.args)
    return [f"{indent}def {name}({params}):", *_body(loop.body, pool, indent + "    "),
            f"{indent}{node.name} = run_loop({name}, {pool.add(node.name, loop)}, {carries}, {sliced}, {invariants})"]


def python_source(graph: Graph) -> tuple[str, dict[str, Any]]:
    """The module source defining ``forward`` and the ``constants`` dict it must be given."""
    pool = ConstantPool()
    params = [p.name for p in graph.placeholders] + ["constants=None"]
    body = _body(graph, pool, "    ")
    header = HEADER + ("from jitgrad.fx.loop import run_loop\n" if any(isinstance(n.target, Loop) for n in graph.nodes)
                       else "")
    return f"{header}\n\ndef forward({', '.join(params)}):\n" + "\n".join(body) + "\n", pool.values
