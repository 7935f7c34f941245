"""What a backend that writes kernels as Python source (``numba_cpu``, ``numba_cuda``) needs to know of an
IR node: its IR line (in errors, and as the comment above its code), its dtype and the dtype its
constants are cast to, whether it is a Python number passed at each call, and whether every op of a
graph has a lowering the backend implements."""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from ..fx.graph import Graph
from ..fx.loop import Loop
from ..fx.node import Node, Opcode, tuple_item
from ..fx.printing import format_node
from ..ops.lowering import Intrinsic
from ..ops.meta_rules import TensorMeta, promoted


def ir_line(node: Node) -> str:
    """The node as ``print(graph)`` shows it, without the pass annotations: what an error names."""
    return format_node(node, notes=False)


def kernel_comment(node: Node, size: Callable[[int], str]) -> str:
    """The node's IR line as the comment above its code. One kernel serves every graph that differs
    only in sizes and Python numbers (a new batch size reuses it), so its source must not keep those
    of the graph it was first written for: sizes are the kernel's own (``size``: ``x_n0``, or ``1``,
    which is structure), and numbers in arguments are left out (``_``), but for the integers 0 and 1."""
    return "# " + format_node(node, size=size, leaf=_structure_only, notes=False)


def _structure_only(value: Any) -> str | None:
    """A plain argument's text in a kernel comment: ``_`` for a number that may be a size or a
    Python number (anything but a bool, 0 and 1) and an array's dtype without its length."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return None
    if isinstance(value, (int, float, np.number)):
        return "_"
    if isinstance(value, np.ndarray):
        return f"array({value.dtype})"
    return None


def kernel_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    return shape if shape else (1,)


def is_python_number(value: Any) -> bool:
    """A node standing for a Python number passed at each call (``fx.numbers``): a scalar argument."""
    return isinstance(value, Node) and bool(value.meta.get("python_number"))


def inexact_integer(value: Any, dtype: np.dtype) -> bool:
    """Whether ``value``, a Python number of the graph used as ``dtype``, is an integer the float64
    array of a kernel's numbers cannot hold (beyond 2**53): it is written into the kernel as a literal
    instead (``i + (2**60 + 1)`` was off by one), where every other number is read at each call."""
    return (np.dtype(dtype).kind in "iu" and type(value) is int and float(value) != value
            and np.iinfo(dtype).min <= value <= np.iinfo(dtype).max)


def is_scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, float, np.number, np.bool_))


def node_dtype(node: Node) -> np.dtype:
    return np.dtype(node.meta["dtype"])


def compute_dtype(node: Node) -> np.dtype:
    """The dtype an elementwise node computes in, which its constants are cast to: its result's, or
    for a comparison (a bool result) its operands' promoted dtype, PyTorch's (``int64 tensor < 2.5``
    compares in float32: until 2026-11-28 the 2.5 was cast to the int64 2, and ``l < 2.5`` was False
    at 2). An integer result is its own compute dtype: a bool tensor times 2 computes in int64 (in
    bool, 2 was True and the product 1)."""
    out = node_dtype(node)
    if out.kind in "fiu":
        return out
    operands = [_operand_meta(value) for value in node.args]
    operands = [o for o in operands if o is not None]
    if not any(isinstance(o, TensorMeta) for o in operands):
        return out
    return np.dtype(promoted(*operands))


def _operand_meta(value: Any) -> Any:
    """What ``promoted`` reads of an argument: a tensor's ``TensorMeta``, a number (one passed at each
    call as a number of its kind), None for anything else."""
    if isinstance(value, Node):
        dtype = value.meta.get("dtype")
        if isinstance(dtype, tuple) or dtype is None:
            return None
        if is_python_number(value):
            return {"f": 0.0, "b": False}.get(np.dtype(dtype).kind, 0)
        return TensorMeta(tuple(value.meta["shape"]), np.dtype(dtype))
    if isinstance(value, (bool, int, float, np.number, np.bool_)):
        return value
    return None


def operand_cast(node: Node, value: Any) -> np.dtype | None:
    """The dtype a tensor operand of ``node`` is converted to before the node's maths, as PyTorch and
    eager jitgrad convert every operand to the computation's dtype first: a float compute dtype other
    than the operand's (not a bool: a condition or a mask stays one). None: read it as it is. Without
    it, ``float32 tensor * float64 0-d tensor`` multiplied in float64 and rounded once, where eager
    rounds the 0-d tensor to float32 first; ``int64 tensor > float32 tensor`` compared exactly."""
    compute = compute_dtype(node)
    if compute.kind != "f" or not isinstance(value, Node) or is_python_number(value):
        return None
    dtype = value.meta.get("dtype")
    if isinstance(dtype, tuple) or dtype is None or np.dtype(dtype) in (compute, np.dtype(np.bool_)):
        return None
    return compute


def check_lowerings(graph: Graph, statements: Mapping[str, Any], backend: str, error: type[Exception],
                    loops: bool = False) -> None:
    """Raises ``error`` for the first node whose op has no lowering, or names an intrinsic absent from
    the backend's ``statements``, before anything is generated. A ``loop`` node (``fx.loop``) has no
    lowering of its own (its ``lower`` is None): a backend that writes loops passes ``loops=True``, and
    its body is checked instead."""
    for node in graph.nodes:
        if node.op is not Opcode.CALL_FUNCTION or node.target is tuple_item:
            continue
        if loops and isinstance(node.target, Loop):
            check_lowerings(node.target.body, statements, backend, error, loops)
            continue
        lowering = node.target.lower
        if lowering is None or isinstance(lowering, Intrinsic) and lowering.name not in statements:
            raise error(f"the {backend} backend has no lowering for op {node.target_name!r} (IR node {ir_line(node)})")


__all__ = ["check_lowerings", "compute_dtype", "inexact_integer", "ir_line", "is_python_number", "is_scalar",
           "kernel_comment", "kernel_shape", "node_dtype", "operand_cast"]
