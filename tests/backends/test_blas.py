"""Matrix products in kernels on numpy's BLAS (jitgrad/backends/numba_cpu/blas.py): every layout an
operand can reach a kernel in, against numpy; the fallback on numba's ``np.dot``; the cache keys."""
import textwrap

import numba
import numpy as np
import pytest

from helpers import run_python
from jitgrad.backends.numba_cpu import blas, compiler, numpy_blas


# any layout ("A" arrays), so that one compile per dtype serves every layout: the layout is read at run time
@numba.njit([f"void({t}[:, :], {t}[:, :], {t}[:, ::1])" for t in ("float32", "float64")])
def _mm(a, b, out):
    blas.mm_into(a, b, out)


@numba.njit([f"void({t}[:, :], {t}[:], {t}[::1])" for t in ("float32", "float64")])
def _mv(a, v, out):
    blas.mv_into(a, v, out)


@numba.njit
def _matvec(a, v, out):  # compiled per layout: C and Fortran matrices take gemv directly, others mv_into
    blas.matvec(a, v, out)


@numba.njit
def _matmat(a, b, out):  # compiled per layout: C and Fortran matrices take gemm directly, others mm_into
    blas.matmat(a, b, out)


def _broadcast(one: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A writable stride-0 view (a kernel sees an expanded tensor so; numba's signatures want writable)."""
    return np.lib.stride_tricks.as_strided(one, shape, (0,) * len(shape))


def _matrices(rows, cols, dtype, rng):
    """The same values laid out as C, transposed (Fortran), rows with a step, both dimensions with a
    step, and (for one row or column) a broadcast with stride 0."""
    base = rng.standard_normal((rows, cols)).astype(dtype)
    big = np.zeros((2 * rows, 2 * cols), dtype)
    big[::2, ::2] = base
    padded = np.zeros((rows, cols + 3), dtype)
    padded[:, :cols] = base
    layouts = {"C": base, "transposed": np.ascontiguousarray(base.T).T, "row step": padded[:, :cols],
               "both steps": big[::2, ::2]}
    if rows == 1 or cols == 1:
        layouts["broadcast"] = _broadcast(base.reshape(-1)[:1], (rows, cols)) if base.size else base
    return layouts


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,k,m", [(5, 7, 3), (1, 4, 6), (6, 4, 1), (3, 1, 2), (4, 0, 3), (0, 3, 2)])
def test_mm_into_equals_numpy_for_every_layout(dtype, n, k, m):
    rng = np.random.default_rng(n * 100 + k * 10 + m)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    for name_a, a in _matrices(n, k, dtype, rng).items():
        for name_b, b in _matrices(k, m, dtype, rng).items():
            for product in (_mm, _matmat):
                out = np.full((n, m), np.nan, dtype)
                product(a, b, out)
                np.testing.assert_allclose(out, a @ b, rtol=tolerance, atol=tolerance,
                                           err_msg=f"{product.__name__}: {name_a} @ {name_b}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,k", [(5, 7), (1, 4), (4, 1), (3, 0), (0, 3)])
def test_mv_into_equals_numpy_for_every_layout(dtype, n, k):
    rng = np.random.default_rng(n * 10 + k)
    v = rng.standard_normal(2 * k).astype(dtype)
    vectors = {"contiguous": v[:k], "step": v[::2], "reversed": v[k - 1::-1] if k else v[:0]}
    if k:
        vectors["broadcast"] = _broadcast(v[:1], (k,))
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    for name_a, a in _matrices(n, k, dtype, rng).items():
        for name_v, x in vectors.items():
            for product in (_mv, _matvec):
                out = np.full(n, np.nan, dtype)
                product(a, x, out)
                np.testing.assert_allclose(out, a @ x, rtol=tolerance, atol=tolerance,
                                           err_msg=f"{product.__name__}: {name_a} @ {name_v}")


def test_layouts_blas_reads_in_place():
    layout = blas._layout.py_func
    assert layout(4, 3, 3, 1) == (blas.NO_TRANS, 3)          # C-contiguous
    assert layout(4, 3, 5, 1) == (blas.NO_TRANS, 5)          # rows with a step (a slice of columns)
    assert layout(4, 3, 1, 4) == (blas.TRANS, 4)             # the transpose of a C-contiguous matrix
    assert layout(1, 3, 0, 1) == (blas.NO_TRANS, 3)          # one row: its stride does not matter
    assert layout(4, 1, 2, 0) == (blas.NO_TRANS, 2)          # one column with a step
    assert layout(4, 3, 0, 1) == (0, 0)                      # a broadcast row: copied first
    assert layout(4, 3, 6, 2) == (0, 0)                      # steps in both dimensions: copied first


def test_the_plain_python_functions_are_numpy():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    out = np.empty((2, 4))
    blas.mm_into(a, b, out)
    np.testing.assert_array_equal(out, a @ b)
    vector = np.empty(2)
    blas.mv_into(a, b[:, 0], vector)
    np.testing.assert_array_equal(vector, a @ b[:, 0])


def test_kernel_products_are_intrinsics_under_jit_and_numpy_without(monkeypatch):
    """Looked up when a kernel's source runs its imports, so a switch of the JIT is followed."""
    assert blas.matvec is not blas.mv_into and blas.matmat is not blas.mm_into
    monkeypatch.setattr(numba.config, "DISABLE_JIT", True)
    assert blas.matvec is blas.mv_into and blas.matmat is blas.mm_into


def test_kernel_keys_name_the_blas(monkeypatch):
    source = "def kernel(x):\n    return x\n"
    before = compiler.code_key(source)
    monkeypatch.setattr(numpy_blas, "description", lambda: "another BLAS")
    assert compiler.code_key(source) != before


def test_an_unknown_choice_is_refused(monkeypatch):
    monkeypatch.setenv("JITGRAD_KERNEL_BLAS", "mkl")
    with pytest.raises(ValueError, match="JITGRAD_KERNEL_BLAS='mkl'.*'numpy'.*'numba'"):
        blas._find_blas()


@pytest.mark.skipif(blas.BLAS is None, reason="numpy's BLAS was not found: every kernel already uses np.dot")
def test_numba_np_dot_fallback_gives_the_same_gradients(tmp_path):
    """``JITGRAD_KERNEL_BLAS=numba`` (what a numpy without CBLAS symbols gets): a compiled matmul step
    through numba's np.dot equals eager."""
    script = textwrap.dedent("""
        import numpy as np
        import jitgrad as jg
        from jitgrad.backends.numba_cpu import blas
        assert blas.BLAS is None and blas.description() == "numba np.dot"

        @jg.compile(fullgraph=True, cache=False)
        def step(x, w, v):
            loss = ((x @ w).tanh() @ v).sum()
            return loss, jg.autograd.grad(loss, [w, v])

        rng = np.random.default_rng(0)
        x, w, v = (jg.tensor(rng.standard_normal(s), requires_grad=True) for s in ((4, 3), (3, 5), (5,)))
        loss, grads = step(x, w, v)
        eager = ((x @ w).tanh() @ v).sum()
        expected = jg.autograd.grad(eager, [w, v])
        for got, want in zip(grads, expected):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
        print("same")
    """)
    done = run_python(script, {"JITGRAD_KERNEL_BLAS": "numba", "JITGRAD_CACHE_DIR": str(tmp_path)}, timeout=300)
    assert done.stdout.strip().endswith("same")
