"""Values at the edges (signed zeros, infinities, integers that wrap around) through both CPU code
generators, the LLVM generator and numba, against eager, bit for bit: what a hunt for wrong results
found. One program per backend holds every probe (a numba compile is slow); each test reads its own
outputs of it. The tests at the end are op lowerings (``jitgrad/ops``) that were wrong at the edges of
their domain on both generators, which write them as they are given."""
from __future__ import annotations

import os

import numpy as np
import pytest

import jitgrad as jg

BACKEND = ""   # conftest.compile_backend's default; each fixture below names its backend itself

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-310, 4.0, 1e300])
NARROW = np.array([2**31 - 1, -2**31, 3, -3, 100, 7], dtype=np.int64)
FACTORS = np.array([13, 2, 1, 7, 100, 50], dtype=np.int64)


def edge_program(x64, x32, i32, j32, i8, j8, i64, f32, s64, large):
    return {
        # every operand in the computation's dtype first, as PyTorch: an int64 tensor against 2.5 compares
        # in float32 (the 2.5 was cast to the int64 2), float32 against a float64 0-d tensor in float32,
        # an int64 tensor against a float32 one in float32; and float32 arithmetic rounds its operands
        "int64 less than 2.5": i64 < 2.5, "int64 equal to 2.5": i64 == 2.5, "int64 above 2.5": i64 >= 2.5 + i64 * 0,
        "float32 above float64 0-d": f32 > s64, "float32 equal to float64 0-d": f32 == s64,
        "int64 above float32": i64 > f32 * 2**30,
        "float32 times float64 0-d": f32 * s64 + 1.0, "float32 plus int32": f32 * 1e-3 + i32,
        "int64 times 1.5 as float32": i64 * 1.5, "square root of int64": i64.abs().sqrt(),
        # numba types int32 * int32 as int64: the scalar a later member reads must wrap as the array does
        "int32 product summed": (i32 * j32).sum(), "int32 product's max": (i32 * j32 + 1).amax(),
        "int8 product summed by rows": (i8 * j8).reshape(2, 3).sum(1),
        # and float32 + int64 as a float64: ``a + i`` must be rounded to float32 before the float64 product
        "float32 plus int64 times float64": ((f32 * 1.1 + i64) * x64[:6]).reshape(2, 3).sum(1),
        # sign(-0.0) is +0.0 in numpy and PyTorch (numba's np.sign and the generator's gave -0.0)
        "sign float64": x64.sign(), "sign float32": x32.sign(),
        # x ** 0.5 of a number exponent is sqrt in numpy and PyTorch: NaN at -inf, -0.0 at -0.0 (C's pow:
        # inf and 0.0); a number passed at each call: test_a_run_time_exponent_of_one_half_is_a_square_root
        "pow 0.5 float64": x64 ** 0.5, "pow 0.5 float32": x32 ** 0.5, "pow 0.5 gradient": _power_gradient(x64),
        # the kernels read the graph's numbers from a float64 array, which cannot hold these
        "int64 plus 2**60 + 1": i64 + (2**60 + 1), "int64 times 2**53 + 1": i64 * (2**53 + 1),
        # exp2 and fmod are functions of the scalar vocabulary, each backend's own: exp2 was exp(x * ln 2),
        # the product rounded to float32 (2^100 some 30 ulps off), fmod a floored ``%`` corrected by the
        # divisor, which had rounded b - |a| to b (fmod(-2.5, 1e300) was 0, fmod(-0.0, b) +0.0)
        "float32 exp2 of 100": jg.exp2(x32[10] * 25.0), "fmod of a small dividend": jg.fmod(x64, 1e300),
        # a float becomes an integer narrower than int32 through int32 (numpy, PyTorch): -250.0 as int8 is 6
        "float32 as int8": (x32 * 100).to(jg.int8), "float32 as uint8": x32.to(jg.uint8),
        "float64 as int16": (x64 * 2e4).to(jg.int16),
        # numba's np.sign of uint8 128 or 253 is 255 (it reads them as negative)
        "sign of uint8": i8.to(jg.uint8).sign(),
    }


def domain_edges(x64, x32, large):
    """Ops whose lowering (their entry's ``lower=``, in ``jitgrad/ops``) was wrong at the edges of their
    domain, on both generators: probed on the LLVM generator's fast compile alone."""
    return {"asinh of large magnitudes": jg.asinh(large), "acosh of large magnitudes": jg.acosh(-large),
            "asinh of -0.0": jg.asinh(x64[4]), "sinh near its overflow": jg.sinh(x64[10] * 177.5),
            "clamp to a NaN limit": x64.clamp(min=float("nan")) + x64.clamp(max=float("nan")) + x64.clamp(-1.0, 1.0)}


def llvm_program(*args):
    """``edge_program`` and the ops wrong at the edges of their domain: both generators write their
    expressions as they are given, so the fast compile of the two shows them."""
    return {**edge_program(*args), **domain_edges(*args[:2], args[-1])}


def numba_program(*args):
    """``edge_program`` and what only numba lowers (the generator sends integer division there)."""
    least = (args[6] * 0 - 2**62) * 2   # the least int64, whose // -1 wraps around to itself
    return {**edge_program(*args), "least int64 over -1": least // -1,
            "int64 fmod": jg.fmod(args[6], args[3]), "int64 fmod of a negative divisor": jg.fmod(args[6], -args[3])}


PROGRAMS = {"llvm_cpu": llvm_program, "numba_cpu": numba_program}


def _power_gradient(x):
    x = x.detach().requires_grad_()
    return jg.autograd.grad((x ** 0.5).sum(), [x])[0]


def _arguments():
    with np.errstate(over="ignore"):
        x32 = SPECIAL.astype(np.float32)
    return (jg.tensor(SPECIAL), jg.tensor(x32), jg.tensor(NARROW.astype(np.int32)), jg.tensor(FACTORS.astype(np.int32)),
            jg.tensor(np.array([127, -128, 3, -3, 100, 7], dtype=np.int8)), jg.tensor(FACTORS.astype(np.int8)),
            jg.tensor(NARROW), jg.tensor(np.array([0.1, 2.0, 3.0, -3.0, 100.0, 2.0**24], dtype=np.float32) / 3),
            jg.tensor(np.float64(0.1) / 3), jg.tensor(np.array([np.inf, -np.inf, 1e300])))


def _bits(value):
    """A result as a comparable record: dtype, shape and bytes (NaNs have one pattern here)."""
    array = value.detach().numpy()
    if array.dtype.kind == "f":
        array = np.where(np.isnan(array), np.nan, array).astype(array.dtype)
    return array.dtype, array.shape, array.tobytes()


@pytest.fixture(scope="module", params=["llvm_cpu", "numba_cpu"])
def compiled_edges(request):
    """The backend's name, a call of its compiled program and eager's results."""
    previous = os.environ.get("JITGRAD_COMPILE_BACKEND")
    os.environ["JITGRAD_COMPILE_BACKEND"] = request.param
    try:
        program = jg.compile(PROGRAMS[request.param], fullgraph=True, cache=False)
        with np.errstate(all="ignore"):
            got = program(*_arguments())
            expected = PROGRAMS[request.param](*_arguments())
        source = program.programs[0].lowered.source
    finally:
        if previous is None:
            os.environ.pop("JITGRAD_COMPILE_BACKEND")
        else:
            os.environ["JITGRAD_COMPILE_BACKEND"] = previous
    assert ("jitgrad_kernel" in source) == (request.param == "llvm_cpu")   # the backend asked for ran it
    return request.param, got, expected


def _assert_same(compiled_edges, *names):
    backend, got, expected = compiled_edges
    for name in names:
        assert _bits(got[name]) == _bits(expected[name]), (backend, name, got[name], expected[name])


def test_narrow_integer_products_wrap_around_before_a_reduction_reads_them(compiled_edges):
    """Until 2026-11-28 numba's kernels summed the exact int32 products (``(x * y).sum()`` of int32
    was 23622320118 where eager's wrapped products sum to 2147483638)."""
    _assert_same(compiled_edges, "int32 product summed", "int32 product's max", "int8 product summed by rows")


def test_a_float32_member_computed_from_int64_is_rounded_to_float32(compiled_edges):
    _assert_same(compiled_edges, "float32 plus int64 times float64")


def test_comparisons_of_mixed_dtypes_compare_in_the_promoted_dtype(compiled_edges):
    """Until 2026-11-28 a Python float met an int64 tensor cast to int64 (``l < 2.5`` was False at 2),
    and a float32 tensor met a float64 0-d tensor in float64 (``f > s`` True where PyTorch's is False)."""
    _assert_same(compiled_edges, "int64 less than 2.5", "int64 equal to 2.5", "int64 above 2.5",
                 "float32 above float64 0-d", "float32 equal to float64 0-d", "int64 above float32")


def test_operands_of_another_dtype_are_converted_before_the_arithmetic(compiled_edges):
    _assert_same(compiled_edges, "float32 times float64 0-d", "float32 plus int32", "int64 times 1.5 as float32",
                 "square root of int64")


def test_the_least_int64_floor_divided_by_minus_one_wraps_around(compiled_edges):
    """numba's ``//`` gave 0 (numpy and PyTorch: the least int64 again)."""
    _on(compiled_edges, "numba_cpu")
    _assert_same(compiled_edges, "least int64 over -1")


def test_an_integer_constant_beyond_2_to_the_53_is_exact(compiled_edges):
    """Until 2026-11-28 ``i + (2**60 + 1)`` was off by one: the constant went through the kernels'
    float64 array of numbers; it is written into the kernel now."""
    _assert_same(compiled_edges, "int64 plus 2**60 + 1", "int64 times 2**53 + 1")


def test_a_float_cast_to_a_narrow_integer_wraps_around_as_numpy(compiled_edges):
    """Until 2026-11-28 both generators converted a float straight to int8, uint8 or int16, poison out of
    range, which their vectorized loops packed with saturation: -2.5 as uint8 was 0 (PyTorch: 254), -250.0
    as int8 -128 (6), NaN as int8 -128 (0)."""
    _assert_same(compiled_edges, "float32 as int8", "float32 as uint8", "float64 as int16")


def test_sign_of_negative_zero_is_positive_zero(compiled_edges):
    _assert_same(compiled_edges, "sign float64", "sign float32")


def test_sign_of_an_unsigned_integer_is_one_where_it_is_nonzero(compiled_edges):
    """Until 2026-11-28 numba's kernels gave 255 for uint8 values of 128 and more (numba's np.sign)."""
    _assert_same(compiled_edges, "sign of uint8")


def test_a_constant_exponent_of_one_half_is_a_square_root(compiled_edges):
    _assert_same(compiled_edges, "pow 0.5 float64", "pow 0.5 float32", "pow 0.5 gradient")


def test_a_run_time_exponent_of_one_half_is_a_square_root(monkeypatch):
    """An exponent passed at each call (a number made dynamic at its first change) is sqrt's at 0.5 and
    pow's elsewhere, in one kernel. On the LLVM generator only (numba's kernel would be two more slow
    compiles): both write the expression ``fused_loop.runtime_power`` makes."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "llvm_cpu")
    power = jg.compile(lambda x, e: x ** e, fullgraph=True, cache=False)
    x = jg.tensor(SPECIAL)
    with np.errstate(all="ignore"):
        for exponent in (0.5, 2.5, 0.5, 3.0):
            assert _bits(power(x, exponent)) == _bits(x ** exponent), exponent
    assert len(power.programs) == 2 and "jitgrad_kernel" in power.programs[-1].lowered.source


def test_a_run_time_integer_out_of_a_narrow_tensors_range_raises_as_eagerly(monkeypatch):
    """Eager converts an int to the dtype of the integer tensor beside it and raises ``OverflowError``
    out of its range; the kernel wrapped a run-time number around (``int8 + 300`` gave 45, ``uint8 ==
    -1`` compared with 255), silently, until 2026-11-29. Now such a call meets eager's error."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "llvm_cpu")
    step = jg.compile(lambda a, b, n: (a + n, b == n), dynamic=True, fullgraph=False, cache=False)
    a, b = jg.tensor(np.array([1, 100], dtype=np.int8)), jg.tensor(np.array([0, 255], dtype=np.uint8))
    for n in (5, 300, -1, 7):
        try:
            want = [t.tolist() for t in (a + n, b == n)]
        except OverflowError:
            with pytest.raises(OverflowError):
                step(a, b, n)
        else:
            assert [t.tolist() for t in step(a, b, n)] == want, n


def test_a_run_time_power_that_python_makes_complex_raises_as_eagerly(monkeypatch):
    """``(1 - t / 10) ** 0.5`` is a complex number in Python past ``t = 10``, which eager's tensor op
    refuses; the kernel took its real part, silently, until 2026-11-29."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "llvm_cpu")
    decay = jg.compile(lambda x, t: x * (1 - t / 10) ** 0.5, dynamic=True, cache=False)
    x = jg.tensor(np.array([1.0, 2.0]))
    assert decay(x, 1).tolist() == (x * 0.9 ** 0.5).tolist()
    with pytest.raises(RuntimeError):
        x * (1 - 12 / 10) ** 0.5
    with pytest.raises(RuntimeError):
        decay(x, 12)


# ---- op lowerings that were wrong at the edges of their domain (the fix was the op's or the vocabulary's) ---
def _on(compiled_edges, backend):
    if compiled_edges[0] != backend:
        pytest.skip(f"probed on {backend} alone (the other writes the same expression; llvm_cpu sends integer "
                    "division to numba)")


def _assert_close(compiled_edges, name, rtol):
    backend, got, expected = compiled_edges
    actual, wanted = got[name].numpy(), expected[name].numpy()
    np.testing.assert_allclose(actual, wanted, rtol=rtol, err_msg=f"{backend}: {name}")
    assert np.signbit(actual).tolist() == np.signbit(wanted).tolist(), (backend, name, actual, wanted)


def test_asinh_at_large_magnitudes_and_negative_zero(compiled_edges):
    _on(compiled_edges, "llvm_cpu")
    _assert_close(compiled_edges, "asinh of -0.0", 0)
    _assert_close(compiled_edges, "asinh of large magnitudes", 1e-14)


def test_acosh_at_large_magnitudes(compiled_edges):
    _on(compiled_edges, "llvm_cpu")
    _assert_close(compiled_edges, "acosh of large magnitudes", 1e-14)


def test_sinh_near_its_overflow(compiled_edges):
    _on(compiled_edges, "llvm_cpu")
    _assert_close(compiled_edges, "sinh near its overflow", 1e-14)


def test_clamp_to_a_nan_limit_is_nan(compiled_edges):
    """``clamp(x, min=nan)`` is NaN everywhere (numpy's clip, PyTorch); the lowering's ``max(x, nan)``,
    Python's, kept ``x`` until 2026-11-28."""
    _on(compiled_edges, "llvm_cpu")
    _assert_same(compiled_edges, "clamp to a NaN limit")
    assert np.isnan(compiled_edges[2]["clamp to a NaN limit"].numpy()).all()


def test_float32_exp2_within_a_few_ulps(compiled_edges):
    _assert_close(compiled_edges, "float32 exp2 of 100", 4e-7)


def test_fmod_of_a_small_dividend_by_a_large_divisor(compiled_edges):
    _assert_close(compiled_edges, "fmod of a small dividend", 0)


def test_integer_fmod_has_the_sign_of_the_dividend(compiled_edges):
    _on(compiled_edges, "numba_cpu")
    _assert_same(compiled_edges, "int64 fmod", "int64 fmod of a negative divisor")
