"""``jitgrad.linalg`` against ``torch.linalg``: values, dtypes, shapes and gradients of each function on
single and batched inputs, second-order gradients by ``gradgradcheck`` for those with numpy forwards,
and PyTorch's errors. Sizes are tiny (3x3, batches of 2): nothing here compiles a kernel."""
from __future__ import annotations

import math

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
GENERAL = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)     # well conditioned, batched
TALL = RNG.standard_normal((2, 4, 3))
WIDE = RNG.standard_normal((3, 4))
RHS = RNG.standard_normal((2, 3, 2))
VECTORS = RNG.standard_normal((2, 3))
SPD = GENERAL @ GENERAL.transpose(0, 2, 1) + np.eye(3)           # distinct eigenvalues


def _run(module, fn, arrays, dtype):
    tensors = [module.tensor(a.astype(dtype), requires_grad=a.dtype.kind == "f") for a in arrays]
    outputs = fn(module, *tensors)
    outputs = tuple(outputs) if isinstance(outputs, tuple) else (outputs,)
    floats = [o for o in outputs if o.requires_grad]
    if floats:
        weights = np.random.default_rng(1)
        loss = sum((o * module.tensor(weights.standard_normal(tuple(o.shape)).astype(dtype))).sum() for o in floats)
        loss.backward()
    return outputs, [None if t.grad is None else t.grad.numpy() for t in tensors]


def check(fn, *arrays, dtype=np.float64, rtol=1e-7, atol=1e-9):
    """``fn(module, *tensors)`` in jitgrad and in torch: each output's values, dtype and shape, and the
    gradients of a fixed random weighting of the float outputs."""
    ours, our_grads = _run(jg, fn, arrays, dtype)
    theirs, their_grads = _run(torch, fn, arrays, dtype)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        assert tuple(a.shape) == tuple(b.shape) and a.requires_grad == b.requires_grad
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol)
    for a, b in zip(our_grads, their_grads):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# sign-invariant views of the decompositions' vectors: columns fixed only up to sign
def _abs_columns(x):
    return x * x


CASES = {
    "vector_norm": (lambda m, x: m.linalg.vector_norm(x), [VECTORS]),
    "vector_norm-ord1-dim": (lambda m, x: m.linalg.vector_norm(x, 1, dim=1, keepdim=True), [VECTORS]),
    "vector_norm-inf-dims": (lambda m, x: m.linalg.vector_norm(x, math.inf, dim=(0, 2)), [TALL]),
    "vector_norm-3": (lambda m, x: m.linalg.vector_norm(x, 3.0, dim=-1), [VECTORS]),
    # the count of nonzeros: values only (its gradient is zeros here, None in PyTorch: ops/linalg.py's norm)
    "vector_norm-0": (lambda m, x: m.linalg.vector_norm((x * (x > 0)).detach(), 0, dim=-1), [VECTORS]),
    "vector_norm--1": (lambda m, x: m.linalg.vector_norm(x, -1.5, dim=0, keepdim=True), [VECTORS]),
    "vector_norm-dtype": (lambda m, x: m.linalg.vector_norm(x.float(), dtype=m.float64), [VECTORS]),
    "matrix_norm-fro": (lambda m, x: m.linalg.matrix_norm(x), [GENERAL]),
    "matrix_norm-1": (lambda m, x: m.linalg.matrix_norm(x, 1), [GENERAL]),
    "matrix_norm--1-keepdim": (lambda m, x: m.linalg.matrix_norm(x, -1, keepdim=True), [TALL]),
    "matrix_norm-inf-dims": (lambda m, x: m.linalg.matrix_norm(x, math.inf, dim=(0, 2)), [TALL]),
    "matrix_norm--inf": (lambda m, x: m.linalg.matrix_norm(x, -math.inf), [TALL]),
    "matrix_norm-nuc": (lambda m, x: m.linalg.matrix_norm(x, "nuc"), [TALL]),
    "matrix_norm-2": (lambda m, x: m.linalg.matrix_norm(x, 2), [GENERAL]),
    "norm-flat": (lambda m, x: m.linalg.norm(x), [TALL]),
    "norm-matrix": (lambda m, x: m.linalg.norm(x, 1), [WIDE]),
    "norm-vector": (lambda m, x: m.linalg.norm(x, -math.inf, dim=1), [VECTORS]),
    "inv": (lambda m, a: m.linalg.inv(a), [GENERAL]),
    "inv_ex": (lambda m, a: m.linalg.inv_ex(a), [GENERAL]),
    "det": (lambda m, a: m.linalg.det(a), [GENERAL]),
    "slogdet": (lambda m, a: m.linalg.slogdet(a), [GENERAL]),
    "solve": (lambda m, a, b: m.linalg.solve(a, b), [GENERAL, RHS]),
    "solve-broadcast": (lambda m, a, b: m.linalg.solve(a, b), [GENERAL[0], RHS]),
    "solve-vector": (lambda m, a, b: m.linalg.solve(a, b), [GENERAL, VECTORS]),
    "solve-right": (lambda m, a, b: m.linalg.solve(a, b, left=False), [GENERAL, RHS.transpose(0, 2, 1)]),
    "solve_triangular": (lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True), [GENERAL, RHS]),
    "solve_triangular-lower-right-unit": (lambda m, a, b: m.linalg.solve_triangular(
        a, b, upper=False, left=False, unitriangular=True), [GENERAL, RHS.transpose(0, 2, 1)]),
    "cholesky": (lambda m, a: m.linalg.cholesky(a), [SPD]),
    "cholesky-upper": (lambda m, a: m.linalg.cholesky(a, upper=True), [SPD]),
    "cholesky_ex": (lambda m, a: m.linalg.cholesky_ex(a), [SPD]),
    "matrix_power-3": (lambda m, a: m.linalg.matrix_power(a, 3), [GENERAL]),
    "matrix_power--2": (lambda m, a: m.linalg.matrix_power(a, -2), [GENERAL]),
    "matrix_power-0": (lambda m, a: m.linalg.matrix_power(a, 0), [GENERAL]),
    "cross": (lambda m, a, b: m.linalg.cross(a, b), [GENERAL, GENERAL[:1]]),
    "vecdot": (lambda m, a, b: m.linalg.vecdot(a, b, dim=1), [GENERAL, GENERAL[0]]),
    "multi_dot": (lambda m, a, b, c, d: m.linalg.multi_dot([a, b, c, d]), [VECTORS[0], TALL[0].T, TALL[1], VECTORS[1]]),
    "multi_dot-matrices": (lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), [TALL[0], WIDE, TALL[1]]),
    "diagonal": (lambda m, a: m.linalg.diagonal(a, offset=1), [TALL]),
    "matmul": (lambda m, a, b: m.linalg.matmul(a, b), [GENERAL, RHS]),
    "eigh": (lambda m, a: (lambda r: (r.eigenvalues, _abs_columns(r.eigenvectors)))(m.linalg.eigh(a)), [SPD]),
    "eigh-U": (lambda m, a: (lambda r: (r[0], _abs_columns(r[1])))(m.linalg.eigh(a, UPLO="U")), [GENERAL]),
    "eigvalsh": (lambda m, a: m.linalg.eigvalsh(a), [SPD]),
    "svd-tall": (lambda m, a: (lambda r: (_abs_columns(r.U), r.S, _abs_columns(r.Vh)))(
        m.linalg.svd(a, full_matrices=False)), [TALL]),
    "svd-wide": (lambda m, a: (lambda r: (_abs_columns(r.U), r.S, _abs_columns(r.Vh)))(
        m.linalg.svd(a, full_matrices=False)), [WIDE]),
    "svdvals": (lambda m, a: m.linalg.svdvals(a), [TALL]),
    "qr": (lambda m, a: m.linalg.qr(a), [TALL]),
    "pinv-tall": (lambda m, a: m.linalg.pinv(a), [TALL]),
    "pinv-hermitian": (lambda m, a: m.linalg.pinv(a, hermitian=True), [SPD]),
    "lstsq": (lambda m, a, b: m.linalg.lstsq(a, b), [TALL, RNG.standard_normal((2, 4, 2))]),
    "lstsq-gelsd": (lambda m, a, b: m.linalg.lstsq(a, b, driver="gelsd")[:3], [TALL, RNG.standard_normal((2, 4, 2))]),
    "lstsq-gels-vector": (lambda m, a, b: m.linalg.lstsq(a, b, driver="gels"), [TALL[0], RNG.standard_normal(4)]),
    "lstsq-rank-deficient": (lambda m, a, b: m.linalg.lstsq(a, b, driver="gelss"),
                             [np.ones((4, 3)), RNG.standard_normal((4, 2))]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_dtypes_shapes_and_gradients_are_pytorchs(name):
    fn, arrays = CASES[name]
    check(fn, *arrays)


@pytest.mark.parametrize("name", ["inv", "solve", "cholesky", "eigh", "svd-tall", "qr", "matrix_norm-1"])
def test_float32_results_keep_their_dtype(name):
    fn, arrays = CASES[name]
    check(fn, *arrays, dtype=np.float32, rtol=2e-4, atol=2e-5)


GRADGRAD = {
    "solve-broadcast": (lambda a, b: jg.linalg.solve(a, b), [GENERAL[0], RHS[:, :, :1]]),
    "solve_triangular": (lambda a, b: jg.linalg.solve_triangular(a, b, upper=False), [GENERAL[0], RHS[0]]),
    "cholesky": (lambda a: jg.linalg.cholesky(a + a.mT), [SPD[0] / 2]),
    "eigh": (lambda a: (lambda r: (r[0], r[1] * r[1]))(jg.linalg.eigh(a + a.mT)), [SPD[0] / 2]),
    "svd": (lambda a: (lambda r: (r.U * r.U, r.S, r.Vh * r.Vh))(jg.linalg.svd(a, full_matrices=False)), [TALL[0]]),
    "svd-wide": (lambda a: jg.linalg.svdvals(a), [WIDE]),
    "qr": (lambda a: jg.linalg.qr(a), [TALL[0]]),
    "pinv": (lambda a: jg.linalg.pinv(a), [TALL[0]]),
}


@pytest.mark.parametrize("name", sorted(GRADGRAD))
def test_first_and_second_order_gradients_match_finite_differences(name):
    fn, arrays = GRADGRAD[name]
    inputs = tuple(jg.tensor(a, requires_grad=True) for a in arrays)
    assert jg.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-5)
    assert jg.autograd.gradgradcheck(fn, inputs, eps=1e-6, atol=1e-5)


def test_failures_are_reported_in_info_or_raised_as_pytorch():
    not_pd = np.stack([np.eye(3), np.diag([1.0, -1.0, 1.0])])
    ours, theirs = jg.linalg.cholesky_ex(jg.tensor(not_pd)), torch.linalg.cholesky_ex(torch.tensor(not_pd))
    assert ours.info.tolist() == theirs.info.tolist() == [0, 2]
    assert str(ours.info.dtype) == "jitgrad.int32"
    singular = np.stack([np.eye(2), np.zeros((2, 2))])
    ours, theirs = jg.linalg.inv_ex(jg.tensor(singular)), torch.linalg.inv_ex(torch.tensor(singular))
    assert ours.info.tolist() == theirs.info.tolist() == [0, 1]
    np.testing.assert_allclose(ours.inverse[0].numpy(), np.eye(2))
    for ours, theirs in [(lambda: jg.linalg.cholesky(jg.tensor(not_pd)),
                          lambda: torch.linalg.cholesky(torch.tensor(not_pd))),
                         (lambda: jg.linalg.inv_ex(jg.tensor(singular), check_errors=True),
                          lambda: torch.linalg.inv_ex(torch.tensor(singular), check_errors=True))]:
        with pytest.raises(RuntimeError) as expected:
            theirs()
        with pytest.raises(RuntimeError, match=r"\(Batch element 1\)") as got:
            ours()
        assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("call", [
    lambda m: m.linalg.solve(m.ones(2, 3, dtype=m.float64), m.ones(2, 1, dtype=m.float64)),
    lambda m: m.linalg.solve(m.eye(2), m.ones(2, 1, dtype=m.float64)),
    lambda m: m.linalg.solve(m.eye(3), m.ones(2, 1)),
    lambda m: m.linalg.solve(m.zeros(2, 2), m.ones(2, 1)),
    lambda m: m.linalg.solve(m.stack([m.eye(2), m.zeros(2, 2)]), m.ones(2, 1)),
    lambda m: m.linalg.inv(m.ones(2, 3)),
    lambda m: m.linalg.cholesky(m.ones(3)),
    lambda m: m.linalg.eigh(m.eye(2), UPLO="X"),
    lambda m: m.linalg.vector_norm(m.arange(3)),
    lambda m: m.linalg.vector_norm(m.arange(3), dtype=m.float32),
    lambda m: m.linalg.vector_norm(m.ones(3, dtype=m.float64), dtype=m.float32),
    lambda m: m.linalg.vector_norm(m.ones(3), "fro"),
    lambda m: m.linalg.norm(m.ones(2, 2, 2), 2),
    lambda m: m.linalg.matrix_norm(m.ones(2, 2), 3),
    lambda m: m.linalg.matrix_power(m.ones(2, 3), 2),
    lambda m: m.linalg.multi_dot([m.ones(2)]),
    lambda m: m.linalg.multi_dot([m.ones(2, 2, 2), m.ones(2)]),
    lambda m: m.linalg.multi_dot([m.ones(2), m.ones(2), m.ones(2)]),
    lambda m: m.linalg.solve_triangular(m.eye(2), m.ones(2), upper=True),
])
def test_bad_input_raises_pytorchs_error(call):
    with pytest.raises(Exception) as expected:
        call(torch)
    kind = next(k for k in (IndexError, TypeError, NotImplementedError, RuntimeError, ValueError)
                if isinstance(expected.value, k))   # torch's LinAlgError is a RuntimeError
    with pytest.raises(kind) as got:
        call(jg)
    assert str(got.value).split(":")[0] == str(expected.value).split(":")[0], (str(got.value), str(expected.value))
    if "singular" in str(expected.value):
        assert str(got.value) == str(expected.value)


def test_lapack_functions_run_a_compiled_function_eagerly_with_a_warning():
    """No backend lowers LAPACK: the call runs eagerly, said once (with fullgraph, an error)."""
    from jitgrad.compile import CompileError, CompileWarning

    def f(a):
        return jg.linalg.cholesky(a) * 2

    with pytest.warns(CompileWarning, match="linalg.cholesky cannot run inside a compiled"):
        np.testing.assert_array_equal(jg.compile(f)(jg.tensor(SPD)).numpy(), f(jg.tensor(SPD)).numpy())
    with pytest.raises(CompileError, match="linalg.cholesky cannot run inside a compiled"):
        jg.compile(f, fullgraph=True)(jg.tensor(SPD))


@pytest.mark.parametrize("fn", [lambda m, a: m.linalg.eigvalsh(a), lambda m, a: m.linalg.svdvals(a),
                                lambda m, a: m.linalg.matrix_norm(a, "nuc")])
def test_values_alone_have_exact_gradients_at_repeated_eigenvalues(fn):
    # without the vectors' gradient no gap is divided by: the identity's eigenvalues are all 1
    check(fn, np.stack([np.eye(3), np.diag([2.0, 2.0, 1.0])]))


FORWARD = {
    "solve": (lambda m, a, b: m.linalg.solve(a, b), [GENERAL, RHS]),
    "solve_triangular": (lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True, unitriangular=True),
                         [GENERAL, RHS]),
    "cholesky": (lambda m, a: m.linalg.cholesky(a), [SPD]),
    "eigh": (lambda m, a: (lambda r: (r[0], r[1] * r[1]))(m.linalg.eigh(a)), [SPD]),
    "svd-tall": CASES["svd-tall"],
    "svd-wide": CASES["svd-wide"],
    "svd-square": (lambda m, a: (lambda r: (r.U * r.U, r.S, r.Vh * r.Vh))(m.linalg.svd(a)), [GENERAL]),
    "qr": CASES["qr"],
    "pinv": (lambda m, a: m.linalg.pinv(a), [TALL]),
    "pinv-wide": (lambda m, a: m.linalg.pinv(a), [WIDE]),
}


@pytest.mark.parametrize("name", sorted(FORWARD))
def test_forward_mode_tangents_are_pytorchs(name):
    fn, arrays = FORWARD[name]
    directions = [np.random.default_rng(3).standard_normal(a.shape) for a in arrays]
    directions = [d + d.swapaxes(-1, -2) if name in ("cholesky", "eigh") else d for d in directions]
    results = []
    for m in (jg, torch):
        with m.autograd.forward_ad.dual_level():
            duals = [m.autograd.forward_ad.make_dual(m.tensor(a), m.tensor(d)) for a, d in zip(arrays, directions)]
            outs = fn(m, *duals)
            outs = outs if isinstance(outs, tuple) else (outs,)
            results.append([m.autograd.forward_ad.unpack_dual(o).tangent.numpy() for o in outs])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-7, atol=1e-9)
