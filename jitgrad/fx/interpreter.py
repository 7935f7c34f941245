"""``Interpreter``: runs a graph node by node with the eager ops, one method per opcode.

It is the reference semantics of the IR (a backend must agree with it) and the place to hook in when a
transformation wants to see values as they are computed: subclass it and override a method.
"""
from __future__ import annotations

from typing import Any

from .graph import Graph
from .node import Node, Opcode, iter_nodes, map_nodes


class Interpreter:
    """``Interpreter(graph).run(*args)`` returns what the graph's output node holds. Each value is
    dropped after its last reader, so memory behaves as the program's would."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def run(self, *args: Any) -> Any:
        placeholders = self.graph.placeholders
        if len(args) != len(placeholders):
            raise TypeError(f"the graph takes {len(placeholders)} arguments "
                            f"({', '.join(p.name for p in placeholders)}) but {len(args)} were given")
        self._args = iter(args)
        last_use: dict[Node, Node] = {}
        for node in self.graph.nodes:
            for used in iter_nodes((node.args, node.kwargs)):
                last_use[used] = node
        env: dict[Node, Any] = {}
        for node in self.graph.nodes:
            value = self.run_node(node, env)
            if node.op is Opcode.OUTPUT:
                return value
            env[node] = value
            for used in node.all_input_nodes:
                if last_use.get(used) is node:
                    del env[used]
        raise AssertionError("unreachable: lint guarantees an output node")

    def run_node(self, node: Node, env: dict[Node, Any]) -> Any:
        args = map_nodes(node.args, env.__getitem__)
        kwargs = map_nodes(node.kwargs, env.__getitem__)
        return getattr(self, node.op.value)(node, args, kwargs)

    def placeholder(self, node: Node, args: tuple, kwargs: dict) -> Any:
        return next(self._args)

    def get_attr(self, node: Node, args: tuple, kwargs: dict) -> Any:
        return self.graph.constants[node.target]

    def call_function(self, node: Node, args: tuple, kwargs: dict) -> Any:
        return node.target(*args, **kwargs)

    def output(self, node: Node, args: tuple, kwargs: dict) -> Any:
        return args[0]
