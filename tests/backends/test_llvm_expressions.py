"""The LLVM backend's expression writer: scalar expressions of the ops' vocabulary (``jitgrad.ops.scalar``)
written as IR, compiled, and run over values chosen to tell implementations apart (NaN, ±0, ±inf,
ties), against numpy and against the numba backend's float32 ``tanh`` run as plain Python."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from jitgrad.backends.llvm_cpu.arrays import contiguous_view, load, store
from jitgrad.backends.llvm_cpu.expressions import ExpressionWriter
from jitgrad.backends.llvm_cpu.function_writer import FunctionWriter
from jitgrad.backends.llvm_cpu.machine_code import compile_ir, new_target_machine
from jitgrad.ops import scalar
from jitgrad.ops.scalar import Var

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 7.95, -8.5, 9.0, -20.0, 88.0, 89.0, -104.0, -110.0,
                    1e-30, np.inf, -np.inf, np.nan])
_ENGINES = []


def compiled(expression, dtype, result_dtype=None, arity=2):
    """A function ``f(a, b, out, n)`` computing ``expression`` of ``a[i]`` (Var "a") and ``b[i]`` (Var
    "b") into ``out[i]``, elements of ``dtype`` in and ``result_dtype`` out."""
    import llvmlite.binding as llvm

    dtype, result_dtype = np.dtype(dtype), np.dtype(result_dtype or dtype)
    w = FunctionWriter()
    inputs = [contiguous_view(w, f"%{name}", dtype, ("%n",)) for name in "ab"[:arity]]
    out = contiguous_view(w, "%out", result_dtype, ("%n",))
    with w.loop("%n") as i:
        values = {name: load(w, view, [i]) for name, view in zip("ab", inputs)}
        value = ExpressionWriter(w, values).write(expression, dtype, result_dtype)
        store(w, out, [i], value)
    w.emit("ret void")
    text = w.define("define void @f(ptr %a, ptr %b, ptr %out, i64 %n) {")
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), new_target_machine())
    engine.add_object_file(llvm.ObjectFileRef.from_data(compile_ir("\n".join([*w.declarations.values(), text]))))
    engine.finalize_object()
    _ENGINES.append(engine)
    function = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
        engine.get_function_address("f"))

    def run(a, b=None):
        a = np.ascontiguousarray(a, dtype)
        b = np.ascontiguousarray(a if b is None else b, dtype)
        result = np.empty(a.shape, result_dtype)
        function(a.ctypes.data, b.ctypes.data, result.ctypes.data, a.size)
        return result
    return run


def pairs():
    a, b = np.meshgrid(SPECIAL, SPECIAL)
    return a.ravel(), b.ravel()


A, B = Var("a"), Var("b")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_arithmetic_and_selection_follow_numpy(dtype):
    a, b = pairs()
    a, b = a.astype(dtype), b.astype(dtype)
    with np.errstate(all="ignore"):
        cases = [(A + B * 2.0, a + b * dtype(2.0)), (A / B, a / b), (-A, -a),
                 (scalar.where(A > B, A, B), np.where(a > b, a, b)),
                 (scalar.where(A != A, 1.0, 0.0), np.where(np.isnan(a), dtype(1), dtype(0))),
                 (scalar.abs(A), np.abs(a)), (scalar.sign(A), np.sign(a)),
                 (scalar.max(A, B), np.where(b > a, b, a)), (scalar.min(A, B), np.where(b < a, b, a))]
    for expression, expected in cases:
        got = compiled(expression, dtype)(a, b)
        np.testing.assert_array_equal(got, expected.astype(dtype), err_msg=repr(expression))


def test_comparisons_give_bools_and_nan_is_unequal():
    a, b = pairs()
    for expression, expected in [(A < B, a < b), (A >= B, a >= b), (A == B, a == b), (A != B, a != b),
                                 (scalar.isfinite(A), np.isfinite(a)),
                                 (scalar.logical_and(A > 0.0, scalar.logical_not(B > 0.0)), (a > 0) & ~(b > 0))]:
        np.testing.assert_array_equal(compiled(expression, np.float64, np.bool_)(a, b), expected, repr(expression))


def test_casts_and_integer_arithmetic():
    a = np.array([-7, -1, 0, 3, 2**31 - 1], dtype=np.int64)
    b = np.array([2, 3, -4, 5, 2], dtype=np.int64)
    np.testing.assert_array_equal(compiled(A * B - A, np.int64)(a, b), a * b - a)
    np.testing.assert_array_equal(compiled(scalar.cast(A) / scalar.cast(B), np.int64, np.float64)(a, b), a / b)
    np.testing.assert_array_equal(compiled(scalar.abs(A), np.int64)(a, b), np.abs(a))


def test_float32_tanh_is_numba_backends_function_bit_for_bit():
    from jitgrad.backends.numba_cpu.intrinsics import tanh_float32

    x = np.concatenate([SPECIAL, np.linspace(-10, 10, 2001)]).astype(np.float32)
    got = compiled(scalar.tanh(A), np.float32, arity=1)(x)
    expected = np.array([tanh_float32.py_func(v) for v in x], dtype=np.float32)
    np.testing.assert_array_equal(got, expected)


def test_float32_exp_is_within_a_unit_in_the_last_place():
    x = np.concatenate([SPECIAL, np.linspace(-105, 89, 4001)]).astype(np.float32)
    got = compiled(scalar.exp(A), np.float32, arity=1)(x)
    with np.errstate(all="ignore"):
        expected = np.exp(x.astype(np.float64))
    normal = (expected < np.finfo(np.float32).max) & (expected > np.finfo(np.float32).tiny)
    np.testing.assert_allclose(got[normal], expected[normal], rtol=2e-7)
    assert (got[expected > np.finfo(np.float32).max] == np.inf).all()
    assert np.isnan(got[np.isnan(x)]).all() and (got[x < -104] == 0).all()


@pytest.mark.parametrize("name", ["tanh", "exp"])
def test_float64_tanh_and_exp_are_numba_backends_functions_bit_for_bit(name):
    from jitgrad.backends.numba_cpu import intrinsics

    x = np.concatenate([SPECIAL, [-750.0, -745.2, -744.0, 709.0, 709.8, 710.0, 21.9, 22.5, -30.0],
                        np.linspace(-40, 40, 1601)])
    got = compiled(getattr(scalar, name)(A), np.float64, arity=1)(x)
    own = getattr(intrinsics, f"{name}_float64")
    np.testing.assert_array_equal(got, np.array([own(v) for v in x]))


def test_float64_tanh_in_a_loop_that_calls_the_c_library_is_the_librarys_as_in_numba():
    """numba_cpu's ``library_calls_kept``: a loop body calling the C library (``sin``) keeps float64
    ``tanh`` a library call too; a loop of its own takes the polynomial. The LLVM kernel follows."""
    import jitgrad as jg
    from jitgrad import fx
    from jitgrad.backends.llvm_cpu.codegen import generate
    from jitgrad.fx.passes import DEFAULT_PIPELINE, PassManager

    x = jg.tensor(np.linspace(-1.0, 1.0, 6))
    with_sin = generate(PassManager(DEFAULT_PIPELINE).run(fx.trace(lambda x: x.sin().tanh() * 2.0, x).graph)).ir
    alone = generate(PassManager(DEFAULT_PIPELINE).run(fx.trace(lambda x: x.tanh() * 2.0, x).graph)).ir
    assert "call double @tanh(" in with_sin and "call double @jitgrad_tanh_float64(" not in with_sin
    assert "call double @jitgrad_tanh_float64(" in alone and "@tanh(" not in alone


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_atan2_is_c_atan2_at_zeros_infinities_and_nans(dtype):
    """atan2's lowering against numpy's (C's) at every pair of special values: the signs of zero
    choose the half turn on the x axis, both infinite give odd multiples of pi/4."""
    from jitgrad.ops.registry import REGISTRY
    a, b = pairs()
    got = compiled(REGISTRY["atan2"].lower(A, B), dtype)(a, b)
    expected = np.arctan2(a.astype(dtype), b.astype(dtype))
    np.testing.assert_allclose(got, expected, rtol=4 * np.finfo(dtype).eps, atol=0)
    assert np.array_equal(np.signbit(got), np.signbit(expected))
