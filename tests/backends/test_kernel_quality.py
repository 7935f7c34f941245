"""What the numba backend makes of the suite's patterns (issue 17), read in the generated source and
checked against the interpreter: constant small powers as products, batched products over transposed
operands read in place, row reductions that take their row buffers from the workspace, with the same
bits whatever the number of threads.

The generated code runs as plain Python here (no numba compile); test_numba_kernels.py checks that
row reductions and softmax give the same bits for any number of threads, compiled."""
from __future__ import annotations

import re

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn.functional as F
from helpers import assert_close
from jitgrad.backends.numba_cpu import PARALLEL_ELEMENTS
from jitgrad.backends.numba_cpu.loop_nest import ROW_BUFFER_ELEMENTS, ROW_CHUNKS, ROW_MIN_CHUNKS, row_chunks
from lowering_helpers import interpreted, lowered


def _kernel_body(source: str) -> str:
    return source.split("def kernel(")[1]


@pytest.mark.parametrize("exponent, products", [(2, 1), (3, 2), (1, 0)])
def test_a_constant_small_power_is_written_as_products(exponent, products, plain_python):
    x = np.random.default_rng(1).standard_normal((3, 5))

    def program(x):
        return (x ** exponent).sum()
    graph, kernel = lowered(program, [x])
    body = _kernel_body(kernel.source)
    assert "**" not in body and "pow_exponent" not in body
    line = next(s for s in body.splitlines() if s.strip().startswith("pow_v = "))
    assert line.count(" * ") == products
    assert_close(list(kernel(x)), interpreted(graph, [x]), dtype=np.float64)


@pytest.mark.parametrize("exponent", [2.5, 4, -2, 0])
def test_other_powers_keep_pow(exponent, plain_python):
    x = np.abs(np.random.default_rng(2).standard_normal((3, 5))) + 0.5

    def program(x):
        return (x ** exponent).sum()
    graph, kernel = lowered(program, [x])
    assert "**" in _kernel_body(kernel.source)
    assert_close(list(kernel(x)), interpreted(graph, [x]), dtype=np.float64)


def test_a_changing_exponent_never_reuses_the_product_code(plain_python):
    """The exponent as an argument (a whole step, and a forward), then a global: 2, 3, 2.5, 2, 3. Each
    call gives eager's values and gradients: a kernel written for ``x * x`` never runs for another
    exponent, whether the exponent becomes a run-time number or a guarded constant."""
    x = jg.tensor(np.random.default_rng(3).uniform(0.5, 2.0, (4, 3)), requires_grad=True)
    settings = {"p": 2}

    @jg.compile(cache=False)
    def step(x, p):
        value = (x ** p).sum()
        value.backward()
        return value

    @jg.compile(cache=False)
    def forward(x, p):
        return (x ** p).sum()

    @jg.compile(cache=False)
    def by_global(x):
        value = (x ** settings["p"]).sum()
        value.backward()
        return value

    for p in (2, 3, 2.5, 2, 3):
        settings["p"] = p
        want = (x.detach() ** p).sum().item()
        want_grad = p * x.detach().numpy() ** (p - 1)
        for run in (lambda: step(x, p), lambda: by_global(x)):
            x.grad = None
            assert run().item() == pytest.approx(want, rel=1e-12)
            np.testing.assert_allclose(x.grad.numpy(), want_grad, rtol=1e-12)
        with jg.no_grad():
            assert forward(x.detach(), p).item() == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("case", ["a @ b", "a @ b.mT", "a.mT @ b", "a.mT @ b.mT"])
def test_batched_products_read_transposed_operands_in_place(case, plain_python):
    """3-d @ 3-d, either operand a transposed view: no contiguous copy in the kernel; forward and
    backward (whose products take transposes of the inputs) equal the interpreter's."""
    rng = np.random.default_rng(4)
    a_shape = (3, 4, 5) if case.startswith("a @") else (3, 5, 4)
    b_shape = (3, 5, 6) if not case.endswith(".mT") else (3, 6, 5)
    arrays = [rng.standard_normal(a_shape), rng.standard_normal(b_shape)]

    def program(a, b):
        a.requires_grad_()
        b.requires_grad_()
        out = eval(case, {"a": a, "b": b})
        ((out * out).sum()).backward()
        return out, a.grad, b.grad
    graph, kernel = lowered(program, arrays)
    assert "ascontiguousarray" not in _kernel_body(kernel.source)
    assert_close(list(kernel(*arrays)), interpreted(graph, arrays), dtype=np.float64)


@pytest.mark.parametrize("batch", [(3, 1), (1, 3), (1, 1)])
def test_a_4d_product_with_one_real_batch_dimension_reads_its_transpose_in_place(batch, plain_python):
    """conv2d's backward multiplies by its columns transposed as (N, 1, L, K): with every batch
    dimension 1 but one, the operand is a 3-d stack once the others are indexed at 0, read in place."""
    rng = np.random.default_rng(6)
    arrays = [rng.standard_normal(batch + (4, 5)), rng.standard_normal(batch + (6, 5))]

    def program(a, b):
        return a @ b.mT
    graph, kernel = lowered(program, arrays)
    assert "ascontiguousarray" not in _kernel_body(kernel.source)
    assert_close(list(kernel(*arrays)), interpreted(graph, arrays), dtype=np.float64)


def _rows_program(x):
    return x.logsumexp(1), x.softmax(1), x.log_softmax(-1), (x.tanh() * x).sum()


def test_row_reductions_allocate_nothing_in_the_kernel(plain_python):
    """Row buffers, partial sums and a two-pass reduction's first results all come from the
    workspace: the kernel calls no ``np.empty``, serially or in parallel; softmax and log_softmax
    loop over their rows with prange when parallel; a reduction's per-element map (logsumexp's exp)
    fills the row buffer."""
    x = np.random.default_rng(5).standard_normal((PARALLEL_ELEMENTS // 64 + 3, 64))
    for parallel in (True, False):
        graph, kernel = lowered(_rows_program, [x], parallel=parallel)
        body = _kernel_body(kernel.source)
        assert "np.empty" not in body
        assert ("in prange(chunks" in body) == parallel   # the row reductions' chunks
        # logsumexp's two passes (max, then the exps' sum) share one loop over the rows: the second reads
        # the row the first just read, in cache (with the full sum's, two chunked loops in all, not three)
        assert body.count("in prange(chunks") == (2 if parallel else 0)
        assert body.count("_p in prange(") == (2 if parallel else 0)   # softmax's and log_softmax's rows
        assert kernel.parallel == parallel
        # logsumexp's exp(x - max) is computed into the row buffer, in the loop that vectorizes, not in the fold
        assert re.search(r"logsumexp_row\w* *\[i1\] = exp_float64\(", body)
        assert_close(list(kernel(x)), interpreted(graph, [x]), dtype=np.float64)


def test_softmax_reads_a_sliced_or_transposed_matrix_in_place(plain_python):
    x = np.random.default_rng(7).standard_normal((6, 9))

    def program(x):
        return x[1:, ::2].softmax(-1), x.T.log_softmax(1)
    graph, kernel = lowered(program, [x])
    assert "ascontiguousarray" not in _kernel_body(kernel.source)
    assert_close(list(kernel(x)), interpreted(graph, [x]), dtype=np.float64)


def test_softmax_over_dim_0_of_a_column_is_one_row(plain_python):
    x = np.random.default_rng(8).standard_normal((6, 1))
    graph, kernel = lowered(lambda x: (x.softmax(0), x.log_softmax(0), x.T.softmax(1)), [x])
    assert_close(list(kernel(x)), interpreted(graph, [x]), dtype=np.float64)


@pytest.mark.parametrize("shape, dim", [((0, 1, 2), 0), ((2, 0), 1), ((2, 0, 3), 1)])
def test_softmax_over_a_dimension_of_size_0_reads_nothing(plain_python, shape, dim):
    """Rows of no elements: the row's max started from its element 0 (an index out of bounds), and a
    log_softmax took ``math.log(0)``, until 2026-11-28; the output has no elements to write."""
    x = np.zeros(shape)
    graph, kernel = lowered(lambda x: (x.softmax(dim), x.log_softmax(dim)), [x])
    assert_close(list(kernel(x)), interpreted(graph, [x]), dtype=np.float64)


def test_wide_rows_take_fewer_row_buffers():
    """A parallel row reduction's buffers (one per chunk of rows) stay near ROW_BUFFER_ELEMENTS for wide
    rows and never exceed the input: 64 chunks of short rows, 8 of very wide ones, one per row below that."""
    assert row_chunks(10_000, 16) == ROW_CHUNKS
    assert row_chunks(100, 10_000_000) == ROW_MIN_CHUNKS
    assert row_chunks(3, 10_000_000) == 3
    assert row_chunks(1000, ROW_BUFFER_ELEMENTS // 20) == 20


def test_float64_tanh_is_the_polynomial_only_where_the_loop_can_vectorize(plain_python):
    """A loop calling the C library (``math.sin``) stays scalar: there ``tanh`` stays ``math.tanh``,
    whose latency is lower than the polynomial's; a loop of its own takes ``tanh_float64``."""
    x = np.random.default_rng(9).standard_normal((4, 5))
    graph, kernel = lowered(lambda x: ((x.sin() * 1.01).tanh(), (x.cumsum(1).tanh() * 2.0).exp()), [x])
    groups = _kernel_body(kernel.source).split("# fused_")
    with_sin = [g for g in groups if "math.sin(" in g]
    assert with_sin and all("math.tanh(" in g and "tanh_float64(" not in g for g in with_sin)
    assert any("tanh_float64(" in g and "exp_float64(" in g for g in groups)
    assert_close(list(kernel(x)), interpreted(graph, [x]), dtype=np.float64)


def test_embeddings_backward_adds_rows_as_scatter_add_did_and_raises_on_a_bad_index(plain_python):
    """``embedding_dense_backward`` adds whole rows, each index read once (no index expanded to every
    element, no ``scatter_add``): every element must get the sums, in the order, of ``np.add.at`` over
    the index expanded to every column (what the backward was before it had an op of its own), bit
    for bit in float32, where many rows repeat; none into the padding row; and an index outside the
    table raises from the kernel as eagerly."""
    rng = np.random.default_rng(3)
    index = rng.integers(0, 5, (3, 40))
    grad = (rng.standard_normal((3, 40, 4)) * 10.0 ** rng.integers(-4, 5, (3, 40, 1))).astype(np.float32)

    def program(g, i):
        w = jg.zeros(5, 4, dtype=jg.float32, requires_grad=True)
        whole = jg.autograd.grad(F.embedding(i, w), w, g)[0]
        return whole, jg.autograd.grad(F.embedding(i, w, padding_idx=2), w, g)[0]
    graph, kernel = lowered(program, [grad, index])
    body = _kernel_body(kernel.source)
    assert "embedding_dense_backward" in body and "scatter_add" not in body and "expand" not in body
    want = np.zeros((5, 4), np.float32)
    np.add.at(want, (np.broadcast_to(index[..., None], grad.shape), np.arange(4)), grad)
    whole, padded = kernel(grad, index)
    np.testing.assert_array_equal(whole, want)
    np.testing.assert_array_equal(padded, np.where(np.arange(5)[:, None] == 2, 0, want))
    for got, eager in zip((whole, padded), program(jg.tensor(grad), jg.tensor(index)), strict=True):
        np.testing.assert_array_equal(got, eager.numpy())
    index[1, 7] = 5
    with pytest.raises(IndexError, match="embedding_dense_backward"):
        kernel(grad, index)
