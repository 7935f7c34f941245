"""The CUDA statements of the data-movement intrinsics (``statements/{shape_copies,indexing,inplace,
sampling}.py``): the host lines each writes, run on device arrays, give the op's eager forward.

``Context`` stands in for the backend's ``OpContext`` with the contract ``numba_cuda/context.py``
states (input variables, ``out``, ``attrs``, ``stream``, ``library``, ``index_argument``, ``number``,
``size``), so that the statements are tested apart from the code generator; every name it hands out
is a variable of the namespace the lines run in, as in a generated host function."""
from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from numba import cuda

from jitgrad.ops.registry import REGISTRY
from jitgrad.random import Generator

statements = importlib.import_module("jitgrad.backends.numba_cuda.statements.shape_copies"), \
    importlib.import_module("jitgrad.backends.numba_cuda.statements.indexing"), \
    importlib.import_module("jitgrad.backends.numba_cuda.statements.inplace"), \
    importlib.import_module("jitgrad.backends.numba_cuda.statements.sampling")
STATEMENTS = {name: emit for module in statements for name, emit in module.STATEMENTS.items()}


def kernel_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(shape) if shape else (1,)  # a 0-d value is a 1-element array in generated code


class Context:
    """The statements' view of one node (``numba_cuda/context.py``'s contract)."""

    def __init__(self, op: str, inputs: dict[str, Any], attrs: dict[str, Any], out_shape: tuple[int, ...]) -> None:
        self.namespace: dict[str, Any] = {"stream": 0}
        self.inputs: dict[str, Any] = {}
        args = []
        for name, value in inputs.items():
            if isinstance(value, list):
                self.inputs[name] = [self._variable(f"{name}{k}", cuda.to_device(v.reshape(kernel_shape(v.shape))))
                                     for k, v in enumerate(value)]
            elif isinstance(value, np.ndarray):
                self.inputs[name] = self._variable(name, cuda.to_device(value.reshape(kernel_shape(value.shape))))
                args.append(SimpleNamespace(meta={"shape": value.shape}))
            else:
                self.inputs[name] = value  # a Python number stays itself, as the code generator leaves it
                args.append(value)
        self.node = SimpleNamespace(args=args, kwargs=attrs, meta={"shape": out_shape})
        self.attrs, self.out, self.stream = dict(attrs), "out", "stream"
        self.out_shape = kernel_shape(out_shape)
        self.result_contiguous = False

    def __getattr__(self, name: str) -> Any:
        if name in self.__dict__.get("inputs", {}):
            return self.inputs[name]
        raise AttributeError(name)

    def _variable(self, hint: str, value: Any) -> str:
        name = f"{hint}_{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def library(self, module: str, function: str) -> str:
        alias = module.replace(".", "_")
        self.namespace[alias] = importlib.import_module(f"jitgrad.backends.numba_cuda.{module}")
        return f"{alias}.{function}"

    def index_argument(self, array: np.ndarray) -> str:
        return self._variable("positions", cuda.to_device(np.ascontiguousarray(array, dtype=np.int64).reshape(-1)))

    def number(self, value: Any) -> str:
        return self._variable("number", float(value))  # the host holds graph numbers as floats

    def size(self, value: int) -> str:
        return str(value) if value in (0, 1) else self._variable("size", int(value))

    def shape_tuple(self, var: str | None = None) -> str:
        assert var is None
        return repr(self.out_shape)


def run_statement(op: str, inputs: dict[str, Any], attrs: dict[str, Any], dtype: Any, emit: Any = None) -> np.ndarray:
    """The statement's lines run on device arrays (the output allocated as the backend does for a
    non-view op); returns the output, in the IR's shape, against the op's eager forward."""
    forward_inputs = list(inputs.values())
    expected = np.asarray(REGISTRY[op].forward(*forward_inputs, **attrs))
    ctx = Context(op, inputs, attrs, expected.shape)
    if not REGISTRY[op].view:
        ctx.namespace["out"] = cuda.device_array(ctx.out_shape, dtype)
    lines = (emit or STATEMENTS[REGISTRY[op].lower.name])(ctx)
    exec("\n".join([lines] if isinstance(lines, str) else lines), ctx.namespace)
    result = ctx.namespace["out"].copy_to_host().reshape(expected.shape)
    np.testing.assert_array_equal(result, expected)
    return result


A = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 4


@pytest.mark.parametrize("dim", [0, 2])
def test_concatenate_and_stack(dim):
    run_statement("cat", {"tensors": [A, A[:, :, ::-1] + 1, A.astype(np.float64)]}, {"dim": dim}, np.float64)
    run_statement("stack", {"tensors": [A, A * 2]}, {"dim": dim}, np.float32)


@pytest.mark.parametrize("index", [(np.array([1, 0, 1]),), (slice(None), np.array([2, 2, 0]), np.array([3, 0, 3])),
                                   (A > 3,), (np.array([[1], [0]]), np.array([0, 2]))])
def test_getitem_gathers_for_an_advanced_index(index):
    """``views.getitem`` (the codegen's) hands an advanced index to ``gather_getitem``."""
    run_statement("getitem", {"self": A}, {"index": index}, np.float32, emit=statements[1].gather_getitem)


@pytest.mark.parametrize("index", [(slice(None), 1), (0, slice(1, 3), Ellipsis), (np.array([1, 0, 1, 1]),),
                                   (slice(None), np.array([2, 2, 0]), np.array([3, 0, 3]))])
def test_index_scatter_sums_repeats(index):
    grad = np.asarray(A[index] * 3 + 0.1, dtype=np.float32)
    run_statement("index_scatter", {"grad": grad}, {"shape": A.shape, "index": index}, np.float32)


def test_fill_and_copy():
    run_statement("fill", {"self": A}, {"value": -1.5, "zero": False}, np.float32)
    run_statement("copy", {"self": A, "src": A[:, :1, ::-1].astype(np.int32)}, {}, np.float32)
    run_statement("copy", {"self": A, "src": 4.0}, {}, np.float32)


@pytest.mark.parametrize("values", [np.array([10.0, 20.0, 30.0, 40.0], np.float32), np.array(-3.0, np.float32), 7.0])
def test_index_put_with_repeats(values):
    index = (np.array([1, 0, 1]), slice(None), np.array([2, 2, 2]))
    broadcast = values[None, :3] if isinstance(values, np.ndarray) and values.ndim else values
    run_statement("index_put", {"self": A, "values": broadcast}, {"index": index}, np.float32)


def test_copy_slices():
    positions = np.array([[0, 5], [23, 7]])
    run_statement("copy_slices", {"self": A, "src": np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)},
                  {"positions": positions}, np.float32)
    run_statement("copy_slices", {"self": A, "src": 0.0}, {"positions": positions}, np.float32)


@pytest.mark.parametrize("op", ["uniform", "normal"])
def test_draws(op):
    run_statement(op, {"state": Generator(3).take(6)}, {"shape": (2, 3), "dtype": np.float32}, np.float32)
