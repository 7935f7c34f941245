"""Graph mode: capture a jitgrad program (forward and backward) as a static IR that prints as Python,
and transform it with passes. See docs/fx.md."""
from . import passes
from .dot import to_dot
from .graph import Graph, GraphError, PassRecord
from .graph_module import GraphModule
from .interpreter import Interpreter
from .joint import JointTrace, trace_joint
from .node import Node, NodeKind, Opcode, tuple_item
from .trace_calls import trace
from .tracer import TracedTensor, TraceError

__all__ = ["Graph", "GraphError", "GraphModule", "Interpreter", "JointTrace", "Node", "NodeKind", "Opcode",
           "PassRecord", "TraceError", "TracedTensor", "passes", "to_dot", "trace", "trace_joint", "tuple_item"]
