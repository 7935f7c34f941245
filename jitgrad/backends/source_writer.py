"""What both numba backends' writers of a graph's source do alike: name fresh variables, pass sizes as
arguments, bind each IR node to its array variable and run a node's statement intrinsic.

A backend's ``codegen.py`` writes a graph as source (one ``numba.njit`` function on the CPU, a host
function launching ``@cuda.jit`` kernels on CUDA). Either way no size is written into the source (a
size comes from an input's ``.shape`` or from ``sizes``), every value is an array variable with
run-time size expressions, and a statement intrinsic sees its node through an ``OpContext``.
``SourceWriter`` holds that bookkeeping once; a backend subclasses it with its indentation, its
``OpContext`` and statements, and its own numbers, buffers and kernels.
"""
from __future__ import annotations

from typing import Any, Callable

from ..fx.graph import Graph
from ..fx.node import Node, NodeKind, tuple_item
from .nodes import ir_line, is_python_number, kernel_comment, kernel_shape
from .op_context import OpContext


class SourceWriter:
    """The state of one graph's source being written: variable names, sizes, and each node's array
    variable with its size expressions, contiguity and IR rank (what an ``OpContext`` reads)."""

    indent = ""  # of the lines of the function the statements are written into
    lowering_error: type[Exception] = RuntimeError  # each backend's subclass sets its LoweringError
    statements: dict[str, Callable[..., Any]] = {}  # and its statement intrinsics, by name

    def __init__(self, graph: Graph, reserved: frozenset[str] | set[str]) -> None:
        self.top: list[str] = []
        self.allocations: list[str] = []
        self.sizes: list[int] = []
        self.scalars: list[float] = []
        self.size_names: dict[int, str] = {}
        self.scalar_names: dict[tuple[str, str], str] = {}
        self.shapes: dict[str, tuple[str, ...]] = {}    # variable -> size expressions
        self.contiguous: dict[str, bool] = {}
        self.ranks: dict[str, int] = {}
        self.var: dict[Node, str] = {}                  # node -> array variable
        self.reserved = reserved
        self.taken = {n.name for n in graph.nodes} | reserved
        self.placeholder_dims: dict[int, str] = {}
        self.output_params: dict[str, str] = {}         # buffer -> the output argument it is
        self.allocated: dict[str, tuple[str, str]] = {}  # buffer -> its variable and its length
        self.index_arrays: dict[str, Any] = {}          # arguments made by statements (flat positions)

    # ---- names and sizes ---------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        """A variable name not yet taken: ``hint``, or ``hint_1``, ``hint_2``..."""
        name, count = hint, 0
        while name in self.taken:
            count += 1
            name = f"{hint}_{count}"
        self.taken.add(name)
        return name

    def size(self, value: int) -> str:
        """A run-time expression for a size: ``1`` stays literal (it decides broadcasting, which is
        structure); a size some input has is read from its ``.shape``; others come in ``sizes``."""
        if value == 1:
            return "1"
        if value in self.placeholder_dims:
            return self.placeholder_dims[value]
        if value not in self.size_names:
            name = self.fresh(f"size{len(self.sizes)}")
            self.top.append(f"{self.indent}{name} = sizes[{len(self.sizes)}]")
            self.sizes.append(int(value))
            self.size_names[value] = name
            self.declare_size(name)
        return self.size_names[value]

    def declare_size(self, name: str) -> None:
        """Called once for each size variable, read from ``sizes`` or from a placeholder's ``.shape``
        (CUDA records its type)."""

    def sizes_of(self, shape: tuple[int, ...]) -> tuple[str, ...]:
        return tuple(self.size(s) for s in kernel_shape(shape))

    # ---- nodes and their arrays ----------------------------------------------------------------------
    def array_name(self, node: Node) -> str:
        """The array variable of a node: its name, unless that is a name the code reads (``max``)."""
        if node in self.var:
            return self.var[node]
        return node.name if node.name not in self.reserved else self.fresh(f"{node.name}_")

    def bind(self, node: Node, var: str, contiguous: bool) -> None:
        self.var[node] = var
        self.shapes[var] = self.sizes_of(node.meta["shape"])
        self.contiguous[var] = contiguous
        self.ranks[var] = len(node.meta["shape"])

    def placeholder(self, node: Node, contiguous: bool) -> str:
        """Binds a placeholder to its argument, named after it, and returns the name; its sizes are read
        from the argument's ``.shape`` (a Python number is a scalar argument, read cast where used)."""
        var = self.array_name(node)
        if is_python_number(node):
            self.var[node] = var
            self.declare_number(var, node)
            return var
        for k, s in enumerate(node.meta["shape"]):
            if s != 1 and s not in self.placeholder_dims:
                name = self.fresh(f"{var}_n{k}")
                self.placeholder_dims[s] = name
                self.top.append(f"{self.indent}{name} = {var}.shape[{k}]")
                self.declare_size(name)
        self.bind(node, var, contiguous)
        return var

    def declare_number(self, var: str, node: Node) -> None:
        """Called for each Python-number argument (CUDA records its type)."""

    def allocate(self, node: Node, out: list[str]) -> None:
        """Binds ``node``'s array to its buffer of the memory plan; each backend's own."""
        raise NotImplementedError

    def comment(self, node: Node) -> str:
        """The node's IR line as its comment, with this code's sizes (``kernel_comment``)."""
        return kernel_comment(node, self.size)

    def op_context(self, node: Node, inputs: dict[str, Any], out: str) -> OpContext:
        """The backend's ``OpContext`` of ``node`` computing ``out`` from ``inputs``."""
        raise NotImplementedError

    def statement(self, node: Node, out: list[str]) -> None:
        """The lines of a node that is in no fusion group: an item of a multi-output op's tuple, or its
        op's statement intrinsic (``lower=intrinsic(name)``) writing into the plan's buffer."""
        out.append(f"{self.indent}{self.comment(node)}")
        if node.target is tuple_item:
            source, index = node.args
            name = self.array_name(node)
            self.bind(node, name, False)
            out.append(f"{self.indent}{name} = {self.var[source]}[{index}]")
            return
        op = node.target
        if any(is_python_number(v) for v in node.all_input_nodes):
            raise self.lowering_error(f"cannot lower IR node {ir_line(node)}: a Python number that changes "
                                      "between calls reaches an op that is not elementwise")
        values = [[self.var[v] for v in node.args[0]]] if op.variadic else \
            [self.var[v] if isinstance(v, Node) else v for v in node.args]
        multi = isinstance(node.meta["dtype"], tuple)
        name = self.array_name(node)
        if "buffer" in node.meta:  # the plan's memory; a view binds its input's, a multi-output op its own
            self.allocate(node, out)
        elif not multi:
            self.bind(node, name, False)
        else:
            self.var[node] = name
        ctx = self.op_context(node, dict(zip(op.inputs, values)), name)
        try:
            lines = self.statements[op.lower.name](ctx, **op.lower.params)
        except NotImplementedError as error:
            raise self.lowering_error(f"cannot lower IR node {ir_line(node)}: {error}") from None
        out.extend(self.indent + line for line in ([lines] if isinstance(lines, str) else lines))
        if node.kind is NodeKind.VIEW and not multi:
            self.contiguous[name] = ctx.result_contiguous


__all__ = ["SourceWriter"]
