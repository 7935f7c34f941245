"""The LLVM generator's product for few rows and terms and many columns (``llvm_cpu/wide_product.py``):
its values against numpy in float64 for every path through it (terms transposed in registers, loaded
as rows or gathered; whole row groups and single rows; whole column blocks and the last columns) and
for operands of any layout; each column summed the same wherever it falls; and a compiled step that
uses it (K15's backward, small) against eager. One module of both dtypes and one kernel, compiled for
real."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import jitgrad as jg
from jitgrad import fx
from jitgrad.backends.llvm_cpu import lower, wide_product
from jitgrad.backends.llvm_cpu.machine_code import compile_ir, new_target_machine
from jitgrad.fx import passes

llvm = pytest.importorskip("llvmlite.binding")
_SIGNATURE = ctypes.CFUNCTYPE(None, *[ctypes.c_int64] * 3, *[ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64] * 2,
                              ctypes.c_void_p, ctypes.c_int64)
TOLERANCE = {np.float32: 2e-6, np.float64: 1e-14}   # relative to sum(|a| |b|) over the terms


@pytest.fixture(scope="module")
def products():
    """``product(a, b)`` through the helper (both dtypes, one module, one compile)."""
    parts = {}
    for dtype in (np.float32, np.float64):
        text, declarations = wide_product.definition(np.dtype(dtype), linkage="external")
        parts.update(declarations)
        parts[wide_product.symbol(np.dtype(dtype))] = text
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), new_target_machine())
    engine.add_object_file(llvm.ObjectFileRef.from_data(compile_ir("\n".join(parts.values()))))
    engine.finalize_object()
    functions = {dtype: _SIGNATURE(engine.get_function_address(wide_product.symbol(np.dtype(dtype))))
                 for dtype in (np.float32, np.float64)}

    def product(a, b):
        (m, k), n, size = a.shape, b.shape[1], a.itemsize
        c = np.full((m, n), np.nan, a.dtype)
        functions[a.dtype.type](m, n, k, a.ctypes.data, a.strides[0] // size, a.strides[1] // size,
                                b.ctypes.data, b.strides[0] // size, b.strides[1] // size, c.ctypes.data,
                                c.strides[0] // size)
        return c
    product.engine = engine   # the code lives as long as the engine
    return product


def _check(c, a, b):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    scale = np.abs(a64) @ np.abs(b64) + np.finfo(a.dtype).tiny
    assert np.all(np.abs(c - a64 @ b64) <= TOLERANCE[a.dtype.type] * scale), np.max(np.abs(c - a64 @ b64) / scale)


def _right(rng, dtype, k, n, layout):
    """b (k, n): ``T`` the transpose of a C-contiguous (n, k) (K15's b.T), ``C`` C-contiguous, ``S``
    steps in both dimensions."""
    if layout == "T":
        return rng.standard_normal((n, k)).astype(dtype).T
    if layout == "C":
        return rng.standard_normal((k, n)).astype(dtype)
    return rng.standard_normal((2 * k, 3 * n)).astype(dtype)[::2, ::3]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_product_matches_numpy_on_every_path_and_layout(products, dtype):
    rng = np.random.default_rng(17)
    lanes = wide_product.LANES[np.dtype(dtype).name]
    # (m, k, n): a row group and a single row, one transposed chunk and a gathered term, whole blocks
    # and the last columns; one row, one term; no whole block; the largest m and k; two chunks exactly
    sizes = [(9, lanes + 1, 5 * lanes + 3), (1, 1, 2 * lanes + 1), (3, 2, lanes - 1), (32, 32, 3 * lanes + 5),
             (8, 2 * lanes, 4 * lanes)]
    for m, k, n in sizes:
        for layout in "TCS":
            a = rng.standard_normal((m, k)).astype(dtype)
            b = _right(rng, dtype, k, n, layout)
            _check(products(a, b), a, b)
        transposed_a = rng.standard_normal((k, m)).astype(dtype).T    # a of any layout: read by elements
        b = _right(rng, dtype, k, n, "T")
        _check(products(transposed_a, b), transposed_a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_column_is_summed_the_same_in_a_vector_lane_and_in_the_last_columns(products, dtype):
    rng = np.random.default_rng(3)
    lanes = wide_product.LANES[np.dtype(dtype).name]
    a = rng.standard_normal((9, 19)).astype(dtype)
    b = _right(rng, dtype, 19, 3 * lanes + 2, "T")
    whole, shifted = products(a, b), products(a, b[:, 3:])   # the columns move to other lanes, some to the tail
    np.testing.assert_array_equal(whole[:, 3:], shifted)
    np.testing.assert_array_equal(products(a, b[:, :lanes - 1]), whole[:, :lanes - 1])   # all in the tail


def test_a_compiled_step_with_a_wide_backward_matches_eager():
    """tanh(a @ b).sum() (K15 at 9 rows, 17 terms, 300 columns): the gradient of a is g (9, 17) @ b.T."""
    rng = np.random.default_rng(15)
    a_value = (rng.standard_normal((9, 300)) * 0.1).astype(np.float32)
    b_value = (rng.standard_normal((300, 17)) * 0.1).astype(np.float32)

    def program(a, b):
        return jg.autograd.grad(jg.tanh(a @ b).sum(), (a, b))

    tensors = [jg.tensor(a_value, requires_grad=True), jg.tensor(b_value, requires_grad=True)]
    kernel = lower(passes.PassManager().run(fx.trace(program, *tensors).graph))
    assert f"call void @{wide_product.symbol(np.dtype(np.float32))}(" in kernel.source
    eager = program(jg.tensor(a_value, requires_grad=True), jg.tensor(b_value, requires_grad=True))
    for got, want in zip(kernel(a_value, b_value), eager, strict=True):
        assert got.flags.c_contiguous
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)
