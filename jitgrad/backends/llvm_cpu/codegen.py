"""Writes a graph (after the pass pipeline) as one LLVM IR function, ``jitgrad_kernel``, called from
Python as a C function of the Python C API: ``PyObject *jitgrad_kernel(PyObject *self, PyObject *args)``.

``args`` is a tuple of numpy arrays, in this order: ``sizes`` (int64: every size no structure fixes,
and each buffer's offset in its workspace), ``scalars`` (float64: the graph's Python numbers, cast
once to the dtype they meet), one array per output (allocated by the caller, filled here), the
placeholders' arrays (a Python number as a one-element array), the graph's constants, then one
workspace per dtype of intermediates. The function reads each array's data pointer straight from the
objects (``TUPLE_ITEMS``, ``ARRAY_DATA``: offsets ``loader.py`` checks in this interpreter before any
kernel runs), releases the GIL, runs, and returns None. ``CompiledGraph`` has checked every argument's
shape, dtype and layout before the call, as numba's wrapper would.

The layout follows the numba CPU backend's kernel (``numba_cpu/codegen.py``): the memory plan taken as
it is, one block per unit in the graph's order, a fusion group as one loop nest (``fused_loops.py``),
any other op as its statement (``statements/``), each node's IR line as a comment above its code. No
size and no number is written into the IR, so graphs differing only in them share a kernel.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...fx.graph import Graph
from ...fx.loop import Loop
from ...fx.node import Node, Opcode, iter_nodes, tuple_item
from ...fx.passes.memory import is_planned, output_buffer
from ...fx.passes.schedule import units
from ...ops.lowering import Intrinsic
from ..nodes import inexact_integer, ir_line, is_python_number, kernel_comment, kernel_shape, node_dtype
from .arrays import ArrayView, contiguous_view, copy
from .expressions import Value, convert
from .function_writer import FunctionWriter, memory_type
from .fused_loops import FusedLoops, NotCovered
from .loader import ARRAY_DATA, ENTRY, TUPLE_ITEMS
from .loops import emit_loop
from .statements import STATEMENTS, Statement

_PYTHON_API = ("declare ptr @PyEval_SaveThread()\ndeclare void @PyEval_RestoreThread(ptr)\n"
               "declare void @Py_IncRef(ptr)\ndeclare void @PyErr_SetString(ptr, ptr)\n"
               "@_Py_NoneStruct = external global i8")


@dataclass
class GeneratedKernel:
    """The module's IR and what the caller passes besides the placeholders' arrays."""

    ir: str
    constants: list[str]                       # graph.constants keys, in argument order
    workspaces: list[tuple[np.dtype, int]]     # one array per dtype of intermediates: dtype, elements
    sizes: list[int]
    scalars: list[float]
    output_arrays: list[tuple[tuple[int, ...], np.dtype]]


def check_coverage(graph: Graph) -> None:
    """``NotCovered`` naming the first op this generator has no code for, before anything is written."""
    for node in graph.nodes:
        if node.op is not Opcode.CALL_FUNCTION:
            continue
        if node.target is tuple_item:
            continue
        if isinstance(node.target, Loop):   # written as a loop (loops.py): its body's ops are what it needs
            check_coverage(node.target.body)
            continue
        lowering = node.target.lower
        if lowering is None or isinstance(lowering, Intrinsic) and lowering.name not in STATEMENTS:
            raise NotCovered(f"op {node.target_name!r} (IR node {ir_line(node)})")


class KernelWriter:
    """The kernel being written: its arguments, sizes, numbers, buffers and each node's array."""

    def __init__(self, graph: Graph, parallel: bool | None, fastmath: bool, fixed_arguments: int) -> None:
        self.graph = graph
        self.parallel_mode = parallel
        self.fn = FunctionWriter(fastmath)
        self.views: dict[Node, ArrayView] = {}
        self.sizes: list[int] = []
        self.size_names: dict[int, str] = {}
        self.scalars: list[float] = []
        self.number_values: dict[tuple[str, str], Value] = {}
        self.arguments = fixed_arguments                # tuple items before the workspaces
        self.workspaces: dict[str, tuple[str, int]] = {}   # dtype name -> (pointer, elements so far)
        self.buffers: dict[str, str] = {}               # buffer -> its pointer
        self.buffer_prefix = ""                         # a loop body's buffers: apart from the kernel's
        self.output_pointers: dict[str, str] = {}       # output buffer -> the output argument's pointer
        self.pointers: dict[int, str] = {}
        self.groups: dict[str, tuple[str, int]] = {}   # a group function's code -> its name, its calls
        self.group_texts: dict[str, str] = {}
        self.messages: list[str] = []                  # the error messages' constants
        self.gil = "%gil"                               # the thread state the GIL is taken back with

    # ---- arguments, sizes and numbers --------------------------------------------------------------
    def argument(self, position: int, hint: str) -> str:
        """The data pointer of the ``position``-th array of ``args``, read in the entry block."""
        if position not in self.pointers:
            w = self.fn
            with w.at_top():
                item = w.assign(f"{hint}.item", f"getelementptr i8, ptr %args, i64 {TUPLE_ITEMS + 8 * position}")
                array = w.load("ptr", item, f"{hint}.object")
                field = w.assign(f"{hint}.field", f"getelementptr i8, ptr {array}, i64 {ARRAY_DATA}")
                self.pointers[position] = w.load("ptr", field, hint)
        return self.pointers[position]

    def slot_value(self, value: int, hint: str) -> str:
        """A new entry of ``sizes`` holding ``value``, read once in the entry block."""
        w = self.fn
        with w.at_top():
            pointer = w.assign(f"{hint}.at", f"getelementptr i64, ptr {self.argument(0, 'sizes')}, "
                                             f"i64 {len(self.sizes)}")
            name = w.load("i64", pointer, hint)
        self.sizes.append(int(value))
        return name

    def size(self, value: int) -> str:
        """A run-time size: the literals 0 and 1 (structure) or an entry of ``sizes``, one per value."""
        value = int(value)
        if value in (0, 1):
            return str(value)
        if value not in self.size_names:
            self.size_names[value] = self.slot_value(value, f"size{len(self.size_names)}")
        return self.size_names[value]

    def sizes_of(self, shape: tuple[int, ...]) -> tuple[str, ...]:
        return tuple(self.size(s) for s in kernel_shape(tuple(shape)))

    def scalar(self, value: Any, dtype: np.dtype) -> Value:
        """A Python number of the graph: an entry of ``scalars`` cast once to ``dtype`` (as numba's
        kernel writes ``np.float32(scalars[k])``)."""
        if inexact_integer(value, dtype):
            return Value(str(int(value)), np.dtype(dtype))
        key = (repr(float(value)), np.dtype(dtype).str)
        if key not in self.number_values:
            w = self.fn
            with w.at_top():
                pointer = w.assign("scalar.at", f"getelementptr double, ptr {self.argument(1, 'scalars')}, "
                                                f"i64 {len(self.scalars)}")
                loaded = Value(w.load("double", pointer, "scalar"), np.dtype(np.float64))
                self.number_values[key] = convert(w, loaded, dtype)
            self.scalars.append(float(value))
        return self.number_values[key]

    def number(self, node: Node, dtype: np.dtype) -> Value:
        """A Python-number input (a one-element array argument) cast once to ``dtype``."""
        key = (node.name, np.dtype(dtype).str)
        if key not in self.number_values:
            view = self.views[node]
            w = self.fn
            with w.at_top():
                loaded = w.load(memory_type(view.dtype), view.pointer, f"{node.name}.number")
                value = Value(loaded, view.dtype)
                if view.dtype == np.bool_:
                    value = Value(w.assign("b", f"trunc i8 {loaded} to i1"), view.dtype)
                self.number_values[key] = convert(w, value, dtype)
        return self.number_values[key]

    # ---- memory ----------------------------------------------------------------------------------------
    def workspace(self, dtype: np.dtype, elements: int, hint: str) -> str:
        """A pointer to the next ``elements`` of ``dtype``'s workspace (their offset an entry of ``sizes``):
        memory a call neither allocates nor frees."""
        if dtype.name not in self.workspaces:
            self.workspaces[dtype.name] = (self.argument(self.arguments, f"workspace.{dtype.name}"), 0)
            self.arguments += 1
        base, used = self.workspaces[dtype.name]
        offset = "0" if used == 0 else self.slot_value(used, f"{hint}.offset")
        self.workspaces[dtype.name] = (base, used + max(elements, 1))
        with self.fn.at_top():
            return self.fn.element_pointer(dtype, base, offset, hint)

    def allocate(self, node: Node) -> None:
        """Binds ``node`` to its buffer of the memory plan: the caller's output array, or the next
        elements of its dtype's workspace."""
        buffer, dtype = self.buffer_prefix + node.meta["buffer"], node_dtype(node)
        if buffer not in self.buffers:
            if buffer in self.output_pointers:
                self.buffers[buffer] = self.output_pointers[buffer]
            else:
                self.buffers[buffer] = self.workspace(dtype, math.prod(kernel_shape(tuple(node.meta["shape"]))),
                                                      buffer)
        self.views[node] = contiguous_view(self.fn, self.buffers[buffer], dtype, self.sizes_of(node.meta["shape"]))

    def scratch(self, node: Node) -> ArrayView:
        """Workspace memory shaped like ``node``, for a value no node holds (a first pass's result)."""
        dtype = node_dtype(node)
        pointer = self.workspace(dtype, math.prod(kernel_shape(tuple(node.meta["shape"]))), f"{node.name}.first")
        return contiguous_view(self.fn, pointer, dtype, self.sizes_of(node.meta["shape"]))

    def bind(self, node: Node, view: ArrayView) -> None:
        """``node``'s array is ``view``; or, where the plan gave the node memory of its own, a copy of it
        there (the plan may reuse the viewed memory after this)."""
        if "buffer" in node.meta:
            self.allocate(node)
            copy(self.fn, view, self.views[node], f"{node.name}.")
        else:
            self.views[node] = view

    def comment(self, node: Node) -> str:
        return kernel_comment(node, self.size)

    def raise_error(self, exception: str, message: str) -> None:
        """Ends the call here with Python's ``exception`` (``IndexError``) and ``message``: the GIL taken
        back, the error set, NULL returned (what a C function of the Python API does to raise)."""
        w = self.fn
        text = message.encode() + b"\0"
        name = f"@message.{len(self.messages)}"
        self.messages.append(f"{name} = private unnamed_addr constant [{len(text)} x i8] c\""
                             + "".join(f"\\{b:02X}" for b in text) + '"')
        w.declare(f"PyExc_{exception}", f"@PyExc_{exception} = external global ptr")
        w.emit(f"call void @PyEval_RestoreThread(ptr {self.gil})")
        kind = w.load("ptr", f"@PyExc_{exception}", "exception")
        w.emit(f"call void @PyErr_SetString(ptr {kind}, ptr {name})")
        w.emit("ret ptr null")
        w.label(w.fresh("after_raise"))   # a block no branch reaches, for what follows

    def group_function(self, w: FunctionWriter, parameters: list[tuple[str, str]]) -> str:
        """The name of the function ``w`` wrote (a fusion group's loops), one per distinct code:
        a loop written before under other node names is called again, not written again."""
        for name, text in w.declarations.items():
            self.fn.declare(name, text)
        header = "define internal void @GROUP(" + ", ".join(f"{t} noundef {p}" for p, t in parameters) + ")"
        text = w.define(header + " {")
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(";"))
        name, calls = self.groups.get(code, (f"group_{len(self.groups)}", 0))
        self.groups[code] = (name, calls + 1) if calls else (name, 1)
        if not calls:
            self.group_texts[name] = text
        return name

    def group_definitions(self) -> list[str]:
        """Each group function's text; one called more than once is never inlined (the kernel's size
        stays a call per use), one called once is LLVM's to inline."""
        out = []
        for name, calls in self.groups.values():
            text = self.group_texts[name].replace("@GROUP(", f"@{name}(", 1)
            if calls > 1:
                text = text.replace(") {", ") noinline {", 1)
            out.append(text)
        return out

    # ---- statements --------------------------------------------------------------------------------
    def statement(self, node: Node) -> None:
        if isinstance(node.target, Loop):
            emit_loop(self, node)
            return
        self.fn.comment(self.comment(node))
        if node.target is tuple_item:   # an item of a multi-output view (``split``)
            source, index = node.args
            views = self.views[source]
            if not isinstance(views, list):
                raise NotCovered(f"an item of op {source.target_name!r} (IR node {ir_line(node)})")
            self.bind(node, views[index])
            return
        op = node.target
        if any(is_python_number(v) for v in node.all_input_nodes):
            raise NotCovered(f"a Python number passed at each call reaches op {node.target_name!r}")
        inputs = [[self.views[v] for v in node.args[0]]] if op.variadic else \
            [self.views[v] if isinstance(v, Node) else v for v in node.args]
        out = None
        multi = isinstance(node.meta["dtype"], tuple)
        if "buffer" in node.meta and not multi:
            self.allocate(node)
            out = self.views[node]
        try:
            result = STATEMENTS[op.lower.name](Statement(self, node, inputs, out), **op.lower.params)
        except NotImplementedError as error:
            raise NotCovered(f"op {node.target_name!r}: {error} (IR node {ir_line(node)})") from None
        if multi:
            if not isinstance(result, list):
                raise NotCovered(f"op {node.target_name!r} returns several tensors (IR node {ir_line(node)})")
            self.views[node] = result
        elif isinstance(result, ArrayView):
            self.bind(node, result)
        elif out is None:
            raise NotCovered(f"op {node.target_name!r} has no memory in the plan (IR node {ir_line(node)})")


def generate(graph: Graph, parallel: bool | None = None, fastmath: bool = False) -> GeneratedKernel:
    """The kernel's module for ``graph`` (not modified), or ``NotCovered``."""
    if not is_planned(graph):
        raise NotCovered("the graph has not been through the pass pipeline (plan_memory)")
    check_coverage(graph)
    outputs = list(iter_nodes(graph.output_node.args[0]))
    placeholders = graph.placeholders
    constants = [n for n in graph.nodes if n.op is Opcode.GET_ATTR]
    fixed = 2 + len(outputs) + len(placeholders) + len(constants)
    k = KernelWriter(graph, parallel, fastmath, fixed)
    w = k.fn
    for j, node in enumerate(outputs):
        k.output_pointers[output_buffer(j)] = k.argument(2 + j, f"out{j}")
    for j, node in enumerate([*placeholders, *constants]):
        pointer = k.argument(2 + len(outputs) + j, node.name)
        if is_python_number(node):
            k.views[node] = ArrayView(pointer, node_dtype(node), ("1",), ("1",), True)
        else:
            k.views[node] = contiguous_view(w, pointer, node_dtype(node), k.sizes_of(node.meta["shape"]))
    k.gil = gil = w.assign("gil", "call ptr @PyEval_SaveThread()")
    for members in units(graph):
        if not members[0].kind.in_loop:
            k.statement(members[0])
        else:
            FusedLoops(k, members).emit()
    for j, node in enumerate(outputs):
        if node.meta.get("buffer") != output_buffer(j):
            w.comment(f"%{node.name} is copied into the caller's array")
            target = contiguous_view(w, k.output_pointers[output_buffer(j)], node_dtype(node),
                                     k.sizes_of(node.meta["shape"]))
            copy(w, k.views[node], target, f"out{j}.")
    w.emit(f"call void @PyEval_RestoreThread(ptr {gil})")
    w.emit("call void @Py_IncRef(ptr @_Py_NoneStruct)")
    w.emit("ret ptr @_Py_NoneStruct")
    function = w.define(f"define ptr @{ENTRY}(ptr %self, ptr %args) {{")
    ir = "\n\n".join([*w.declarations.values(), _PYTHON_API, *k.messages, *k.group_definitions(), function]) + "\n"
    workspaces = [(np.dtype(name), max(used, 1)) for name, (_, used) in k.workspaces.items()]
    return GeneratedKernel(ir, [c.target for c in constants], workspaces, k.sizes, k.scalars,
                           [(tuple(n.meta["shape"]), node_dtype(n)) for n in outputs])


__all__ = ["ARRAY_DATA", "ENTRY", "GeneratedKernel", "KernelWriter", "TUPLE_ITEMS", "check_coverage", "generate"]
