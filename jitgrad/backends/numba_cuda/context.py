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

An unsupported use raises ``NotImplementedError``; the backend turns it into a ``LoweringError``
naming the op and its IR node.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ...fx.node import Node
from ..source import product, shape_tuple
from .dialect import numba_type


class OpContext:
    """The view a statement has of its node; see the module docstring for the contract."""

    def __init__(self, node: Node, inputs: dict[str, Any], out: str, shapes: dict[str, tuple[str, ...]],
                 contiguous: dict[str, bool], ranks: dict[str, int], size: Callable[[int], str],
                 number: Callable[[Any], str], library: Callable[[str, str], str],
                 index_argument: Callable[[np.ndarray], str], stream: str = "stream") -> None:
        self.node = node
        self.inputs = inputs
        self.out = out
        self.attrs = dict(node.kwargs)
        self.stream = stream
        self._shapes = shapes
        self._contiguous = contiguous
        self._ranks = ranks
        self._size = size
        self._number = number
        self._library = library
        self._index_argument = index_argument
        self.result_contiguous = False  # a view statement sets it when its result is C-contiguous

    def __getattr__(self, name: str) -> Any:
        inputs = self.__dict__.get("inputs", {})
        if name in inputs:
            return inputs[name]
        raise AttributeError(name)

    @property
    def dtype(self) -> np.dtype:
        dtype = self.node.meta["dtype"]
        return np.dtype(dtype[0] if isinstance(dtype, tuple) else dtype)

    @property
    def T(self) -> str:  # noqa: N802 - the name statements use, as on the CPU
        return numba_type(self.dtype)

    def shape(self, var: str | None = None) -> tuple[str, ...]:
        return self._shapes[self.out if var is None else var]

    def shape_tuple(self, var: str | None = None) -> str:
        return shape_tuple(self.shape(var))

    def rank(self, var: str | None = None) -> int:
        """The IR rank (0 for a scalar tensor, though its array has one element)."""
        return self._ranks[self.out if var is None else var]

    def size(self, value: int) -> str:
        return str(value) if value in (0, 1) else self._size(value)

    def number(self, value: Any) -> str:
        return self._number(value)

    def library(self, module: str, function: str) -> str:
        return self._library(module, function)

    def index_argument(self, array: np.ndarray) -> str:
        return self._index_argument(array)

    def is_contiguous(self, var: str) -> bool:
        return self._contiguous.get(var, False)

    @staticmethod
    def product(sizes: Sequence[str]) -> str:
        return product(sizes)


__all__ = ["OpContext"]
