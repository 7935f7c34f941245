"""Eager ops on CUDA tensors through the same lowering as compiled graphs.

``run_op(op, values, attrs)`` is what ``OpDef.__call__`` calls instead of ``op.forward`` when a value is
a device array (``install()`` puts it in ``ops.registry.DEVICE_RUNNERS["cuda"]``). It builds the
one-node graph of the call (a placeholder per device array, Python numbers and attributes as the
node's arguments, the metadata from the op's own rule), runs the passes lowering needs
(``group_fusions``, ``plan_memory``) and lowers it; the program is kept per (op, dtypes, shapes,
attributes), and its module by source (``compiler.py``), in memory and in the disk cache, so eager and
compiled code launch the same kernels, also across processes. A Python number of an elementwise op
(``x * lr``) is an argument of the program, as ``fx.numbers`` makes it in compiled code, so a new value
(a learning rate that changes every step) reuses the program instead of making one per value. A view
op returns views sharing the input's memory (``x[0].add_(1)`` changes ``x``);
``write_into`` is how an in-place op writes its result into a tensor's memory (possibly a view).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...fx.graph import Graph
from ...fx.node import tuple_item
from ...fx.node_meta import call_meta
from ...fx.numbers import number_meta
from ...fx.passes.fusion import group_fusions
from ...fx.passes.memory import plan_memory
from .compiler import CudaProgram, lower
from .errors import LoweringError
from .kernels.copy import copy

_PROGRAMS: dict[Any, tuple[CudaProgram, bool]] = {}  # the program, and whether it returns a tuple
_current_stream: Callable[[], Any] | None = None
_disk_cache: Callable[[], Any] | None = None


def _is_device_array(value: Any) -> bool:
    return hasattr(value, "copy_to_host")


def _key_of(value: Any) -> Any:
    """A hashable stand-in for an argument or attribute: a device array by dtype and shape, an array
    attribute (an index) by its contents."""
    if _is_device_array(value):
        return ("array", str(value.dtype), tuple(value.shape))
    if isinstance(value, np.ndarray):
        return ("ndarray", str(value.dtype), value.shape, value.tobytes())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_key_of(v) for v in value))
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if isinstance(value, dict):
        return tuple(sorted((k, _key_of(v)) for k, v in value.items()))
    return (type(value).__name__, value)


def _placeholder(graph: Graph, array: Any) -> Any:
    return graph.placeholder("x", {"shape": tuple(array.shape), "dtype": np.dtype(array.dtype)})


def _is_number_argument(op: Any, value: Any) -> bool:
    """A Python number the program takes as an argument: of an elementwise op (code of other ops may
    not read a number that changes between calls), and not a bool (a flag, which is structure)."""
    return op.kind == "elementwise" and isinstance(value, (int, float)) and not isinstance(value, bool)


def one_node_graph(op: Any, values: tuple, attrs: dict) -> tuple[Graph, list[Any]]:
    """The graph of one call of ``op`` after the passes lowering needs, and what the program takes, in
    order: arrays (device arrays; numpy arrays stand for them where no kernel runs: the PTX check) and
    the numbers of an elementwise op."""
    graph, arrays = Graph(), []
    args: list[Any] = []
    for value in values:
        value = value.item() if isinstance(value, np.generic) else value
        if op.variadic and isinstance(value, (list, tuple)):
            args.append([_placeholder(graph, v) for v in value])
            arrays += list(value)
        elif _is_device_array(value) or isinstance(value, np.ndarray):
            args.append(_placeholder(graph, value))
            arrays.append(value)
        elif _is_number_argument(op, value):
            args.append(graph.placeholder("number", number_meta(value)))
            arrays.append(value)
        else:
            args.append(value)
    node = graph.call_function(op, tuple(args), dict(attrs), meta=call_meta(op, tuple(args), dict(attrs)))
    if isinstance(node.meta["dtype"], tuple):
        items = tuple(graph.call_function(tuple_item, (node, k), meta=call_meta(tuple_item, (node, k), {}))
                      for k in range(len(node.meta["dtype"])))
        graph.output(items)
    else:
        graph.output(node)
    return plan_memory(group_fusions(graph)), arrays


def run_op(op: Any, values: tuple, attrs: dict) -> Any:
    """``op`` on device arrays (and numbers): a device array, or a tuple of them for several outputs."""
    values = tuple(v.item() if isinstance(v, np.generic) else v for v in values)
    shown = tuple(type(v).__name__ if _is_number_argument(op, v) else v for v in values)
    key = (op.name, _key_of(shown), _key_of(attrs))
    entry = _PROGRAMS.get(key)
    if entry is None:
        graph, _ = one_node_graph(op, values, attrs)
        try:
            program = lower(graph, share_views=True, cache=_disk_cache() if _disk_cache is not None else None)
        except LoweringError as error:
            raise NotImplementedError(f"Could not run '{op.name}' with arguments from the 'CUDA' backend: it "
                                      f"has no CUDA lowering ({error})") from None
        entry = _PROGRAMS[key] = program, isinstance(graph.output_node.args[0], tuple)
    program, multi = entry
    arrays = [a for v in values for a in (v if op.variadic and isinstance(v, (list, tuple)) else [v])
              if _is_device_array(a) or _is_number_argument(op, a)]
    out = program(*arrays, stream=_current_stream() if _current_stream is not None else None)
    return tuple(out) if multi else out[0]


def write_into(destination: Any, source: Any) -> None:
    """``destination[...] = source`` on the device (broadcast, cast): an in-place op's write-back."""
    copy(source, destination, _current_stream() if _current_stream is not None else 0)


def install(current_stream: Callable[[], Any] | None = None, disk_cache: Callable[[], Any] | None = None) -> None:
    """Makes eager ops on device arrays run here; ``current_stream`` gives the stream to launch on
    (``jitgrad.cuda.current_stream``: a layer above this one, so it is passed in), ``disk_cache`` the
    disk cache a new program's module and kernels are kept in (``jitgrad.compile``'s, likewise), or None."""
    global _current_stream, _disk_cache
    from ...ops import registry

    _current_stream = current_stream
    _disk_cache = disk_cache
    registry.DEVICE_RUNNERS["cuda"] = run_op


def clear_cache() -> None:
    _PROGRAMS.clear()


__all__ = ["clear_cache", "install", "one_node_graph", "run_op", "write_into"]
