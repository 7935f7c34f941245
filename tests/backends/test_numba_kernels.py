"""What the generated kernels do for speed, checked for correctness: the float32 tanh, reductions in
registers and in parallel partials, transposes handed to BLAS, and workspaces kept between calls.
Each test compiles one small kernel under numba."""
from __future__ import annotations

import re
import threading

import numpy as np
import pytest

import jitgrad as jg
from jitgrad import fx
from jitgrad.backends.numba_cpu import PARALLEL_ELEMENTS, lower
from jitgrad.fx import passes
from jitgrad.ops.registry import REGISTRY


def lowered(fn, *arrays, parallel=None):
    graph = passes.PassManager().run(fx.trace(fn, *(jg.tensor(a) for a in arrays)).graph)
    return lower(graph, parallel=parallel)


def applied(scalar_function, values):
    """A jitted scalar helper over ``values`` inside a numba loop, as the kernels call it."""
    import numba

    @numba.njit
    def apply(values, out):
        for i in range(values.shape[0]):
            out[i] = scalar_function(values[i])
    out = np.empty_like(values)
    apply(values, out)
    return out


def test_tanh_float32_is_within_a_few_ulp_of_the_exact_tanh():
    from jitgrad.backends.numba_cpu.intrinsics import tanh_float32

    grid = np.linspace(-12.0, 12.0, 400_001).astype(np.float32)
    special = np.array([0.0, -0.0, 1e-30, -1e-30, 7.9, 9.0, np.inf, -np.inf, np.nan], np.float32)
    values = np.concatenate([grid, special])
    out = applied(tanh_float32, values)
    exact = np.tanh(values.astype(np.float64))
    finite = np.isfinite(exact) & (exact != 0)
    assert out.dtype == np.float32
    assert (np.abs(out - exact)[finite] / np.abs(exact[finite])).max() < 5e-7
    np.testing.assert_array_equal(out[~finite], np.tanh(values[~finite]))  # zeros, nan
    assert out[-3] == 1.0 and out[-2] == -1.0


def test_exp_float32_is_within_an_ulp_of_the_exact_exp_and_numpy_at_the_ends(monkeypatch):
    """Also: the LLVM generator's float32 ``exp`` gives the same bits, so a kernel's results do not
    depend on the CPU lowering that compiled it (rounding ties of ``x log2 e`` included)."""
    from jitgrad.backends.numba_cpu.intrinsics import exp_float32

    grid = np.linspace(-110.0, 90.0, 400_001).astype(np.float32)
    special = np.array([0.0, -0.0, 1e-30, 88.72, 88.7228, 88.73, -87.3, -100.0, -103.9, -104.0, np.inf, -np.inf,
                        np.nan], np.float32)
    ties = (np.arange(-300, 258, dtype=np.float32) / np.float32(2.0)) / np.float32(1.4426950408889634)
    values = np.concatenate([grid, special, ties])
    out = applied(exp_float32, values)
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "llvm_cpu")
    by_llvm = jg.compile(lambda x: x.exp(), fullgraph=True, cache=False, parallel=False)
    np.testing.assert_array_equal(by_llvm(jg.tensor(values)).numpy().view(np.int32), out.view(np.int32))
    assert "jitgrad_exp_float32" in by_llvm.programs[0].lowered.source
    exact = np.exp(values.astype(np.float64))
    normal = np.isfinite(exact) & (exact > np.finfo(np.float32).tiny) & (exact < np.finfo(np.float32).max)
    assert out.dtype == np.float32
    assert (np.abs(out - exact)[normal] / exact[normal]).max() < 1.5e-7
    subnormal = exact <= np.finfo(np.float32).tiny
    assert np.abs(out - exact)[subnormal].max() <= 1.5e-45   # one subnormal step
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out[~normal & ~subnormal], np.exp(values[~normal & ~subnormal]))  # inf, nan


def test_float64_exp_and_tanh_are_within_two_ulp_of_numpy():
    from jitgrad.backends.numba_cpu.intrinsics import exp_float64, tanh_float64

    rng = np.random.default_rng(0)
    values = np.concatenate([rng.uniform(-750.0, 712.0, 20_000), rng.standard_normal(20_000) * 1e-3,
                             rng.standard_normal(2_000) * 1e-200, [0.0, -0.0, 22.0, -23.0, 709.78, 709.79,
                                                                   -745.1, -745.2, np.inf, -np.inf, np.nan]])
    with np.errstate(over="ignore"):
        for function, exact in ((exp_float64, np.exp(values)), (tanh_float64, np.tanh(values))):
            out = applied(function, values)
            normal = np.isfinite(exact) & (np.abs(exact) > np.finfo(np.float64).tiny)
            assert (np.abs(out - exact)[normal] / np.abs(exact[normal])).max() < 5e-16, function
            tiny = np.abs(exact) <= np.finfo(np.float64).tiny
            assert np.abs(out - exact)[tiny].max() <= 1e-323, function
            np.testing.assert_array_equal(out[~normal & ~tiny], exact[~normal & ~tiny])  # inf, nan, +-1


def test_float32_exp_softmax_and_sigmoid_in_kernels_match_numpy():
    x = np.random.default_rng(1).standard_normal((6, 7)).astype(np.float32) * 5
    kernel = lowered(lambda x: (x.exp(), x.sigmoid(), x.softmax(1), x.log_softmax(0)), x)
    assert "exp_float32(" in kernel.source and "math.exp" not in kernel.source
    t = jg.tensor(x)
    for got, want in zip(kernel(x), (t.exp(), t.sigmoid(), t.softmax(1), t.log_softmax(0))):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-6, atol=1e-7)


def test_float32_tanh_in_a_kernel_matches_numpy():
    x = np.random.default_rng(0).standard_normal((8, 5)).astype(np.float32) * 4
    kernel = lowered(lambda x: (x.tanh() * 2.0, jg.gelu(x, approximate="tanh")), x)
    assert "tanh_float32(" in kernel.source
    tanh2, gelu = kernel(x)
    np.testing.assert_allclose(tanh2, np.tanh(x) * 2, rtol=1e-6, atol=1e-7)
    expected = jg.gelu(jg.tensor(x), approximate="tanh").numpy()
    # Below x = -3, 1 + tanh cancels: float32 eager and compiled are both off the exact value there by
    # about 1e-7 absolutely (each its own way), hence the compile tests' absolute floor.
    np.testing.assert_allclose(gelu, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_and_full_reductions_in_registers_and_parallel_partials(dtype):
    x = np.random.default_rng(1).standard_normal((6, 7)).astype(dtype)

    def reductions(x):
        return (x.sum(), x.amax(), x.mean(), x.var(dim=1), x.logsumexp(dim=1), x.sum(dim=0), x.std())
    tol = 1e-12 if dtype == np.float64 else 1e-5
    expected = [v.numpy() for v in reductions(jg.tensor(x))]
    for parallel in (False, True):
        kernel = lowered(reductions, x, parallel=parallel)
        assert ("_partial" in kernel.source) == parallel  # full sum, amax and mean split into partials
        assert kernel.kernel.targetoptions.get("parallel", False) == parallel  # else prange runs serially
        for got, want in zip(kernel(x), expected):
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_a_transposed_matrix_goes_to_blas_without_a_copy():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((5, 4)), rng.standard_normal((4, 3))

    def step(x, w):
        loss = (x @ w).tanh().sum()
        loss.backward()
        return loss  # the trace adds w.grad as an output
    graph = passes.PassManager().run(fx.trace(step, jg.tensor(x), jg.tensor(w, requires_grad=True)).graph)
    kernel = lower(graph)
    assert ".T\n" in kernel.source and "ascontiguousarray" not in kernel.source
    w_eager = jg.tensor(w, requires_grad=True)
    loss = (jg.tensor(x) @ w_eager).tanh().sum()
    loss.backward()
    got_loss, got_grad = kernel(x, w)
    np.testing.assert_allclose(got_loss, loss.item(), rtol=1e-12)
    np.testing.assert_allclose(got_grad, w_eager.grad.numpy(), rtol=1e-12)


def test_division_by_zero_gives_what_eager_gives():
    """numba's default error model raises ZeroDivisionError (and checks every divisor, which keeps
    loops from vectorizing); kernels use numpy's for floats (inf, -inf, nan) and check integer
    divisors themselves, raising eager's error where numpy's model would give 0."""
    x = np.array([1.0, -2.0, 0.0, 3.0])
    zero = np.array([0.0, 0.0, 0.0, 1.0])
    counts, divisors = np.array([7, -3, 0]), np.array([2, 2, 5])
    with np.errstate(divide="ignore", invalid="ignore"):  # numpy's warnings, from eager and the trace
        kernel = lowered(lambda x, z, c, n: (x / z, c // n, c % n), x, zero, counts, divisors)
        eager_ratio = jg.tensor(x) / jg.tensor(zero)
    ratio, quotient, remainder = kernel(x, zero, counts, divisors)
    np.testing.assert_array_equal(ratio, eager_ratio.numpy())     # [inf, -inf, nan, 3]
    np.testing.assert_array_equal(quotient, (jg.tensor(counts) // jg.tensor(divisors)).numpy())
    np.testing.assert_array_equal(remainder, (jg.tensor(counts) % jg.tensor(divisors)).numpy())
    for none in (np.array([0, 1, 1]), np.array([1, 1, 0])):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            jg.tensor(counts) // jg.tensor(none)
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            kernel(x, zero, counts, none)


def test_workspaces_are_kept_between_calls_but_outputs_are_new_and_threads_do_not_share():
    def chain(x):
        y = (x.exp() @ x).sin()           # intermediates live in the workspace
        return y.sum(dim=1), (y * y).cos()
    kernel = lowered(chain, np.eye(6))
    assert "workspace_float64[" in kernel.source
    inputs = [np.random.default_rng(seed).standard_normal((6, 6)) for seed in range(8)]
    expected = [[v.numpy() for v in chain(jg.tensor(a))] for a in inputs]
    first = kernel(inputs[0])
    kept = [o.copy() for o in first]
    kernel(inputs[1])
    for out, copy in zip(first, kept):
        np.testing.assert_array_equal(out, copy)  # a later call did not write into earlier outputs

    results: dict[int, list] = {}

    def run(i):
        for _ in range(200):
            results[i] = kernel(inputs[i])
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, want in enumerate(expected):
        for got, w in zip(results[i], want):
            np.testing.assert_allclose(got, w, rtol=1e-12)


def test_groups_with_the_same_code_share_one_function():
    def unrolled(h, w):
        for _ in range(6):
            h = (w @ h).tanh() * 0.5 + h   # six groups with the same loop nest up to names
        return h
    h, w = np.linspace(-1.0, 1.0, 5), np.random.default_rng(3).standard_normal((5, 5)) * 0.4
    kernel = lowered(unrolled, h, w)
    calls = [line.split("(")[0].strip() for line in kernel.source.split("def kernel(")[1].splitlines()
             if line.strip().startswith("fused")]
    assert len(calls) == 6 and len(set(calls)) == 1, calls
    assert kernel.source.count("@numba.njit") == 1
    np.testing.assert_allclose(kernel(h, w)[0], unrolled(jg.tensor(h), jg.tensor(w)).numpy(), rtol=1e-12)


def test_outlining_finds_parameters_and_equal_code_up_to_names():
    from jitgrad.backends.numba_cpu.outlining import canonical_form, parameters

    first = "for i0 in range(n):\n    t = math.tanh(a[i0])\n    out[i0] = t * s  # a comment\n"
    second = "for i0 in range(m):\n    u = math.tanh(b[i0])\n    res[i0] = u * k\n"
    aliased = "for i0 in range(m):\n    u = math.tanh(b[i0])\n    b[i0] = u * k\n"
    assert parameters(first) == ["n", "a", "out", "s"]
    assert canonical_form(first) == canonical_form(second)
    assert canonical_form(first) != canonical_form(aliased)  # writing into its input is other code


def test_statement_lowerings_compile_under_numba():
    """The statement lowerings that plain-Python runs cannot vouch for numba typing: argmax/argmin,
    max/min(dim), basic indexing and its scatter, fill, copy, batched and broadcast matmul."""
    rng = np.random.default_rng(4)
    x, b, c = rng.standard_normal((3, 4)), rng.standard_normal((2, 1, 4, 2)), rng.standard_normal((3, 2, 3))

    def program(x, b, c):
        values, indices = x.max(dim=1)
        low, where_low = x.min(dim=0, keepdim=True)
        filled = x.clone().fill_(0.5) + x.clone().copy_(x[1])
        product = (b @ c).sum()
        loss = (values * 2.0).sum() + low.sum() + x[1].sum() + x[:, 2:].sum() + product + filled.sum()
        loss.backward()
        return loss, indices, where_low, x.argmax(dim=0), x.argmin(dim=1, keepdim=True)
    tensors = [jg.tensor(a, requires_grad=True) for a in (x, b, c)]
    graph = passes.PassManager().run(fx.trace(program, *tensors).graph)
    kernel = lower(graph)
    eager = [jg.tensor(a, requires_grad=True) for a in (x, b, c)]
    expected = [v.detach().numpy() for v in program(*eager)] + [t.grad.numpy() for t in eager]
    got = kernel(x, b, c)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, e.dtype, g.shape, e.shape)
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def test_advanced_indexing_and_writes_compile_under_numba():
    """Gathers and scatters by flat positions computed when lowering: integer and boolean array
    indices, their accumulating backward, index_put with broadcast values, a write through a view."""
    rng = np.random.default_rng(5)
    x, v = rng.standard_normal((4, 3)), rng.standard_normal(3)
    rows, mask = np.array([2, 0, 2]), x > 0.2

    def program(x, v):
        picked = x[jg.tensor(rows)] * 2.0 + x[jg.tensor(mask)].sum()
        y = x * 1.0
        y[jg.tensor(np.array([1, 3]))] = v          # index_put, values broadcast over the rows
        y[:, 1:2].mul_(3.0)                          # a write through a view: copy_slices
        loss = picked.sum() + (y * y).sum()
        loss.backward()
        return loss, picked, y
    graph = passes.PassManager().run(fx.trace(program, jg.tensor(x, requires_grad=True),
                                              jg.tensor(v, requires_grad=True)).graph)
    names = {n.target_name for n in graph.nodes}
    assert {"getitem", "index_scatter", "index_put", "copy_slices"} <= names, names
    kernel = lower(graph)
    eager = [jg.tensor(x, requires_grad=True), jg.tensor(v, requires_grad=True)]
    expected = [t.detach().numpy() for t in program(*eager)] + [t.grad.numpy() for t in eager]
    for got, want in zip(kernel(x, v), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_fastmath_is_passed_to_numba_and_keeps_results_close():
    """In float32 and float64: until 2026-11-28 the float64 exp and tanh rounded ``x log2 e`` to an
    integer by adding and subtracting 1.5 * 2^52, which fastmath's reassociation folded away (exp(0.5)
    was 2.0, exp(2.0) 8.0); and fastmath's ``nnan`` let LLVM take isnan(nan) for False (it is no longer
    among the flags)."""
    x = np.random.default_rng(6).standard_normal((5, 7)).astype(np.float32)
    y = x.astype(np.float64) * 3
    y[0, 0] = np.nan
    graph = passes.PassManager().run(fx.trace(lambda x, y: ((x.exp() * x).sum(dim=1), y.exp() + y.tanh(), y != y),
                                              jg.tensor(x), jg.tensor(y)).graph)
    plain, fast = lower(graph), lower(graph, fastmath=True)
    assert fast.kernel.targetoptions["fastmath"] and not plain.kernel.targetoptions["fastmath"]
    assert fast.kernel is not plain.kernel  # the in-memory kernel cache keys on fastmath too
    np.testing.assert_allclose(fast(x, y)[0], plain(x, y)[0], rtol=1e-5)
    np.testing.assert_allclose(fast(x, y)[1], np.exp(y) + np.tanh(y), rtol=1e-14)
    np.testing.assert_array_equal(fast(x, y)[2], np.isnan(y))


def test_an_unrolled_loop_reads_rows_as_views_and_multiplies_them_at_once():
    """``x[t]`` of a loop is a view (a transposed source's row too, and ``x[-1]``, and ``c[1, 0]``),
    the products of one matrix with every ``x[t]`` are one product, and 1-d values bind their buffers
    without a reshape; the values and gradients are eager's."""
    rng = np.random.default_rng(7)
    w, xs, c = rng.standard_normal((3, 2)), rng.standard_normal((6, 2)), rng.standard_normal((2, 3, 2))

    def program(w, xs, c):
        h = jg.zeros(3, dtype=jg.float64)
        for t in range(6):
            h = (h + w @ xs[t]).tanh()
        extra = (xs.T[1] * xs[-1][0]).sum() + (c[1, 0] * w[2]).sum()
        loss = (h * h).sum() + extra
        loss.backward()
        return loss
    tensors = [jg.tensor(w, requires_grad=True), jg.tensor(xs), jg.tensor(c)]
    graph = passes.PassManager().run(fx.trace(program, *tensors).graph)
    kernel = lower(graph)
    assert [n.target_name for n in graph.nodes].count("mv") == 0
    for view in (r"= mm\[0\]\n", r"= permute\w*\[1\]\n", r"= c\[1, 0\]\n", r"tanh = buf\d+\n"):
        assert re.search(view, kernel.source), view
    eager = [jg.tensor(w, requires_grad=True), jg.tensor(xs), jg.tensor(c)]
    expected_loss = program(*eager)
    got_loss, got_grad = kernel(w, xs, c)
    np.testing.assert_allclose(got_loss, expected_loss.item(), rtol=1e-12)
    np.testing.assert_allclose(got_grad, eager[0].grad.numpy(), rtol=1e-12)


def test_row_reductions_and_softmax_give_the_same_bits_for_any_number_of_threads():
    """Large (row buffers in chunks, rows folded in vector lanes) and parallel: one thread and every
    thread give identical results, close to eager's; softmax's backward (rows with prange) and a
    cross-entropy's gradient included (log_softmax's backward is softmax's loop with another formula),
    groups fused into the softmax's and its backward's row loops, and ``exp(x - lse)`` from the
    logsumexp's exps in its row loop."""
    import numba

    rng = np.random.default_rng(6)
    x = rng.standard_normal((PARALLEL_ELEMENTS // 128 + 7, 131)).astype(np.float32)   # a remainder after the lanes
    g = rng.standard_normal(x.shape).astype(np.float32)
    targets = rng.integers(0, x.shape[1], x.shape[0])
    targets[3] = -100
    scale = np.array(0.5, np.float32)

    def rows_program(x, g, targets, scale):
        softmax = x.softmax(1)
        loss = (softmax * x).sum()   # the unit right after the softmax: fused into its rows
        lse = x.logsumexp(1)
        return (lse, (x - lse.reshape(-1, 1)).exp() * g, softmax, loss, (x.tanh() * x).sum(),
                REGISTRY["softmax_backward"](g, softmax, dim=1) + softmax,
                REGISTRY["cross_entropy_backward"](scale, targets, softmax, reduction="mean", ignore_index=-100))
    arrays = (x, g, targets, scale)
    kernel = lowered(rows_program, *arrays)
    assert kernel.parallel and "in prange(chunks" in kernel.source and "_p in prange(" in kernel.source
    assert kernel.source.count("a row at a time in softmax") == 2   # the loss's sum, the backward's add (row_fusion)
    assert "row_dot(" in kernel.source and "row_max(" in kernel.source   # vector lanes (row_reductions)
    assert "cross_entropy_backward_i in prange(" in kernel.source
    assert "exps over their sum" in kernel.source   # the logsumexp's exps reused (row_fusion)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = [a.copy() for a in kernel(*arrays)]
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = [a.copy() for a in kernel(*arrays)]
    finally:
        numba.set_num_threads(before)
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)
    for got, want in zip(one, rows_program(*(jg.tensor(a) for a in arrays))):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)
