"""Graphviz pictures of graphs: ``to_dot(tensor)`` draws the eager backward graph behind a tensor.

The text is DOT, returned as a ``DotSource`` (a ``str``), so it can be printed, tested or pasted into
any Graphviz viewer; ``.render("file.svg")`` runs the ``dot`` program when it is installed, and says how
to get it when it is not, rather than making Graphviz a dependency.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..tensor import Tensor
    from .graph import Node


class DotSource(str):
    """DOT text that can render itself with Graphviz."""

    def render(self, path: str | Path) -> Path:
        """Writes the picture to ``path``; the format is the file's suffix (svg, png, pdf...)."""
        dot = shutil.which("dot")
        if dot is None:
            raise RuntimeError("rendering needs Graphviz's `dot` program, which is not installed (Debian/"
                               "Ubuntu: apt-get install graphviz; macOS: brew install graphviz). The DOT "
                               "text itself is this string: print it or paste it into a Graphviz viewer.")
        path = Path(path)
        fmt = path.suffix.lstrip(".") or "svg"
        import subprocess  # only a render needs it: 3 ms of every `import jitgrad` otherwise

        subprocess.run([dot, f"-T{fmt}", "-o", str(path)], input=str(self), text=True, check=True)
        return path


def quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(tensor: "Tensor") -> DotSource:
    """The backward graph reachable from ``tensor.grad_fn``: one box per node (``MulBackward0``), the
    leaves' ``AccumulateGrad`` with their shape, an arrow along each edge the gradient travels."""
    from .graph import AccumulateGrad

    lines = ["digraph backward {", "  node [shape=box, fontname=monospace];",
             f"  tensor [label={quote(f'tensor {list(tensor.shape)} {tensor.dtype}')}, shape=oval];"]
    root = tensor.grad_fn
    if root is not None:
        ids: dict["Node", str] = {}
        stack = [root]
        ids[root] = "n0"
        lines.append("  tensor -> n0;")
        while stack:
            node = stack.pop()
            label = node.name()
            if isinstance(node, AccumulateGrad):
                label += f"\n{list(node.variable.shape)}"
            lines.append(f"  {ids[node]} [label={quote(label)}];")
            for next_node, slot in node.next_functions:
                if next_node is None:
                    continue
                if next_node not in ids:
                    ids[next_node] = f"n{len(ids)}"
                    stack.append(next_node)
                lines.append(f"  {ids[node]} -> {ids[next_node]} [label={quote(str(slot))}];")
    lines.append("}")
    return DotSource("\n".join(lines) + "\n")
