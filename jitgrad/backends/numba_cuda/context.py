"""What a statement intrinsic sees on the CUDA backend: one IR node inside the generated host function.

A statement (``statements/``, for ops whose entry is ``lower=intrinsic(name)``) is a function
``emit(ctx, **intrinsic_params) -> str | list[str]`` returning lines of **host** Python (plain Python
run on the CPU, between kernel launches) that compute ``ctx.out``:

- a view op (``op.view``) binds ``ctx.out`` to a view of its input (``arrays.py``), sharing memory;
- any other op fills the device array ``ctx.out``, which the backend allocated from the memory plan
  (C-contiguous, the node's shape and dtype), usually by calling a host function of the kernel
  library (``kernels/``), which launches its kernels on ``ctx.stream``;
- an op with several outputs that is not a view (``max`` over a dimension: values and indices) has no
  buffer in the plan: it binds ``ctx.out`` to a tuple of device arrays it allocates
  (``cuda.device_array(shape, dtype, stream=stream)``; ``cuda`` is imported when the code names it).

The contract, all names are host variables or source text:

``ctx.inputs``
    op input name -> variable of a device array (``ctx.self``, ``ctx.other`` read it too); a variadic
    op's one input is a list of variables. Inputs may be strided views; 0-d tensors are 1-element
    arrays (every value has rank >= 1 in generated code, as on the CPU).
``ctx.out``, ``ctx.attrs``, ``ctx.dtype``, ``ctx.T``
    the variable to bind or fill; the node's keyword arguments; its numpy dtype; ``numba.float32``
    (the source of its numba scalar type).
``ctx.shape(var)``, ``ctx.shape_tuple(var)``, ``ctx.rank(var)``
    run-time size expressions of a variable (the output's by default): sizes are never source.
``ctx.size(value)``, ``ctx.number(value)``
    a run-time expression for a size taken from an attribute (a split's pieces), and a variable
    holding a Python number of the node (a fill value): the source stays the same for every size.
``ctx.stream``
    the variable of the stream to launch on.
``ctx.library(module, function)``
    the source to call a host function of ``jitgrad.backends.numba_cuda.<module>`` (``module`` is
    relative: ``"kernels.matmul"``, ``"kernels.copy"``); it imports the module into the generated
    one and records it: the module's ``KERNELS`` list of (name, pyfunc, tuple of numba argument
    types) then appears in ``program.kernels``, which the PTX test compiles with ``compile_ptx``.
    Host functions take device arrays (any strides), the output array and the stream.
``ctx.index_argument(array)``
    the variable of a device array holding ``array`` (int64 positions a statement computes from the
    node's attributes and traced shapes, an advanced index): copied to the device once per program.
``ctx.is_contiguous(var)``
    whether the variable is known C-contiguous at lowering time.

The shared part of this contract is ``jitgrad.backends.op_context.OpContext``; this subclass adds the
stream and the kernel library. An unsupported use raises ``NotImplementedError``; the backend turns it into a ``LoweringError``
naming the op and its IR node.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...fx.node import Node
from ..op_context import OpContext as SharedOpContext
from .dialect import numba_type


class OpContext(SharedOpContext):
    """The view a statement has of its node; see the module docstring for the contract."""

    scalar_type = staticmethod(numba_type)

    def __init__(self, node: Node, inputs: dict[str, Any], out: str, shapes: dict[str, tuple[str, ...]],
                 contiguous: dict[str, bool], ranks: dict[str, int], index_argument: Callable[[np.ndarray], str],
                 number: Callable[[Any], str], size: Callable[[int], str], library: Callable[[str, str], str],
                 stream: str = "stream") -> None:
        super().__init__(node, inputs, out, shapes, contiguous, ranks, index_argument, number, size)
        self.stream = stream
        self._library = library

    def library(self, module: str, function: str) -> str:
        return self._library(module, function)


__all__ = ["OpContext"]
