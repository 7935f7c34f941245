"""``to_dot(graph)``: the IR as a Graphviz picture, one box per node, arrows from value to reader.

Node ids are quoted, so a node named like a DOT keyword (``graph``, ``node``) draws too. Nodes of one
fusion group share a colour and a cluster, so the output of ``group_fusions`` can be seen
at a glance; backward nodes are drawn dashed.
"""
from __future__ import annotations

from ..autograd.visualize import DotSource, quote
from .graph import Graph
from .node import Opcode
from .printing import format_arg

_COLOURS = ("lightblue", "palegreen", "lightsalmon", "khaki", "plum", "lightcyan", "wheat", "pink")


def to_dot(graph: Graph) -> DotSource:
    lines = ["digraph fx {", "  node [shape=box, fontname=monospace];"]
    clusters: dict[str, list[str]] = {}
    for node in graph.nodes:
        if node.op is Opcode.OUTPUT:
            label = f"output\n{format_arg(node.args[0])}"
        else:
            label = f"{node.name}\n{node.op.value} {node.target_name}\n{node.format_meta()}"
        style = ["filled"] if "fusion_group" in node.meta else []
        if node.meta.get("phase") == "backward":
            style.append("dashed")
        attrs = [f"label={quote(label)}"]
        if style:
            attrs.append(f"style={quote(','.join(style))}")
        group = node.meta.get("fusion_group")
        if group is not None:
            attrs.append(f"fillcolor={_COLOURS[int(group.rsplit('_', 1)[-1]) % len(_COLOURS)]}")
            clusters.setdefault(group, []).append(quote(node.name))
        lines.append(f"  {quote(node.name)} [{', '.join(attrs)}];")
    for group, members in clusters.items():
        lines.append(f"  subgraph cluster_{group} {{ label={quote(group)}; {'; '.join(members)}; }}")
    for node in graph.nodes:
        for used in node.all_input_nodes:
            lines.append(f"  {quote(used.name)} -> {quote(node.name)};")
    lines.append("}")
    return DotSource("\n".join(lines) + "\n")
