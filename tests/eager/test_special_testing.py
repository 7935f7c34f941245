"""``jitgrad.special`` against ``torch.special`` (values, dtypes, gradients; second order for the SciPy
Functions) and ``jitgrad.testing`` against ``torch.testing``'s behaviour. Tiny inputs, no compiles."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")

REAL = np.array([-3.0, -0.7, 0.0, 0.4, 1.3, 6.0])
PROBABILITIES = np.array([1e-12, 0.02, 0.3, 0.5, 0.9, 0.999])
POSITIVE = np.array([0.3, 0.9, 1.5, 2.0, 4.5, 9.0])
TAIL = np.array([-45.0, -20.0, -8.0, 0.0, 5.0, 30.0])

CASES = {
    "expit": (lambda m, x: m.special.expit(x), REAL),
    "logit": (lambda m, x: m.special.logit(x), PROBABILITIES),
    "logit-eps": (lambda m, x: m.special.logit(x, eps=0.05), PROBABILITIES),
    "erf": (lambda m, x: m.special.erf(x), REAL),
    "erfc": (lambda m, x: m.special.erfc(x), REAL),
    "erfinv": (lambda m, x: m.special.erfinv(x), PROBABILITIES * 2 - 1),
    "gammaln": (lambda m, x: m.special.gammaln(x), POSITIVE),
    "digamma": (lambda m, x: m.special.digamma(x), POSITIVE),
    "psi": (lambda m, x: m.special.psi(x), POSITIVE),
    "polygamma": (lambda m, x: m.special.polygamma(2, x), POSITIVE),
    "multigammaln": (lambda m, x: m.special.multigammaln(x, 3), POSITIVE + 1),
    "xlogy": (lambda m, x: m.special.xlogy(x, x.abs() + 0.5), REAL),
    "xlog1py": (lambda m, x: m.special.xlog1py(x, x.abs()), REAL),
    "xlog1py-number": (lambda m, x: m.special.xlog1py(2.0, x), POSITIVE),
    "xlog1py-tiny-number": (lambda m, x: m.special.xlog1py(x, 1e-20), REAL),
    "log1p": (lambda m, x: m.special.log1p(x), POSITIVE),
    "expm1": (lambda m, x: m.special.expm1(x), REAL),
    "exp2": (lambda m, x: m.special.exp2(x), REAL),
    "sinc": (lambda m, x: m.special.sinc(x), REAL),
    "round": (lambda m, x: m.special.round(x * 3.3, decimals=1), REAL),
    "softmax": (lambda m, x: m.special.softmax(x.reshape(2, 3), 1), REAL),
    "log_softmax": (lambda m, x: m.special.log_softmax(x.reshape(2, 3), 0, dtype=m.float32), REAL),
    "logsumexp": (lambda m, x: m.special.logsumexp(x.reshape(2, 3), 1, keepdim=True), REAL),
    "ndtr": (lambda m, x: m.special.ndtr(x), REAL),
    "log_ndtr": (lambda m, x: m.special.log_ndtr(x), TAIL),
    "ndtri": (lambda m, x: m.special.ndtri(x), PROBABILITIES),
    "i0": (lambda m, x: m.special.i0(x), REAL),
    "i1": (lambda m, x: m.special.i1(x), REAL),
    "entr": (lambda m, x: m.special.entr(x), np.array([-1.0, 0.0, 0.2, 1.0, 3.0])),
    # (PyTorch's P(40, 35) is 1e-9 off SciPy's, which mpmath confirms: a = 12 keeps to where both are exact)
    "gammainc": (lambda m, x: m.special.gammainc(m.tensor([0.5, 2.0, 3.0, 12.0, 1.0, 2.0], dtype=x.dtype), x),
                 np.array([-1.0, 0.0, 2.5, 10.0, 1e-3, 30.0])),
    "gammaincc": (lambda m, x: m.special.gammaincc(m.tensor([0.5, 2.0, 3.0, 12.0, 1.0, 2.0], dtype=x.dtype), x),
                  np.array([-1.0, 0.0, 2.5, 10.0, 1e-3, 30.0])),
}


def _run(module, fn, values, dtype):
    x = module.tensor(values.astype(dtype), requires_grad=True)
    out = fn(module, x)
    out.backward(module.ones_like(out))
    return out, x.grad


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_dtypes_and_gradients_are_torch_specials(name, dtype):
    fn, values = CASES[name]
    ours, our_grad = _run(jg, fn, values, dtype)
    theirs, their_grad = _run(torch, fn, values, dtype)
    rtol = 1e-10 if theirs.dtype == torch.float64 else 2e-6
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-300)
    finite = np.isfinite(their_grad.numpy())   # entr's at 0 (inf) is where the two conventions may differ
    np.testing.assert_allclose(our_grad.numpy()[finite], their_grad.numpy()[finite], rtol=rtol * 10, atol=1e-12)


@pytest.mark.parametrize("name, point", [("log_ndtr", [-9.0, 0.5]), ("ndtri", [0.01, 0.7]), ("i0", [-1.2, 0.4]),
                                         ("i1", [0.0, 2.5])])
def test_scipy_functions_have_second_order_gradients(name, point):
    fn = getattr(jg.special, name)
    x = jg.tensor(point, dtype=jg.float64, requires_grad=True)
    assert jg.autograd.gradcheck(fn, (x,)) and jg.autograd.gradgradcheck(fn, (x,))


def test_incomplete_gammas_have_no_derivative_in_input_as_in_pytorch():
    """PyTorch's igamma has none: its error is raised by a backward that asks for it, and only then."""
    for m in (jg, torch):
        a, x = m.tensor([2.0, 0.5], requires_grad=True), m.tensor([1.5, 0.2], requires_grad=True)
        for fn in (m.special.gammainc, m.special.gammaincc):
            out = fn(a, x).sum()
            assert m.autograd.grad(out, [x], retain_graph=True)[0].shape == (2,)
            with pytest.raises(NotImplementedError, match="the derivative for 'igamma(c)?: input' is not implemented"):
                m.autograd.grad(out, [a])
        with pytest.raises(NotImplementedError, match="igamma_cpu\" not implemented for 'Long'"):
            m.special.gammainc(m.tensor([2]), m.tensor([1]))


def test_ndtr_is_exact_in_the_lower_tail():
    # PyTorch's ndtr is 0 at x = -20 and 2% off at x = -8 in float64; jitgrad's takes erfc's exact tail
    scipy_special = pytest.importorskip("scipy.special")
    np.testing.assert_allclose(jg.special.ndtr(jg.tensor(TAIL)).numpy(), scipy_special.ndtr(TAIL), rtol=1e-13)


def test_xlog1py_at_zero_nan_and_minus_one_is_pytorchs():
    def edges(m):
        return (m.special.xlog1py(0.0, m.tensor([NAN, 1.0])).tolist(),
                m.special.xlog1py(m.tensor([0.0, 0.0, 2.0]), m.tensor([-1.0, NAN, -1.0])).tolist())
    np.testing.assert_equal(edges(jg), edges(torch))


def test_xlog1py_of_an_integer_other_computes_in_the_inputs_dtype():
    """``log1p`` of an integer ``other`` was taken in the default float32 whatever ``input``'s dtype: a
    float64 input got a value and a gradient with float32's precision (PyTorch promotes both first)."""
    x, other = jg.tensor([0.5, 2.0, -1.5], dtype=jg.float64, requires_grad=True), jg.tensor([1, 3, 7])
    out = jg.special.xlog1py(x, other)
    out.sum().backward()
    log1p = np.log1p(np.array([1.0, 3.0, 7.0]))
    assert out.dtype == x.grad.dtype == jg.float64
    np.testing.assert_allclose(out.detach().numpy(), x.detach().numpy() * log1p, rtol=1e-14)
    np.testing.assert_allclose(x.grad.numpy(), log1p, rtol=1e-14)


def test_integer_inputs_promote_and_multigammaln_checks_its_domain():
    assert str(jg.special.ndtr(jg.tensor([0, 1])).dtype) == "jitgrad.float32"
    assert str(jg.special.entr(jg.tensor([0, 1])).dtype) == "jitgrad.float32"
    # PyTorch documents the result there as undefined (2.13 returns numbers); jitgrad refuses it
    with pytest.raises(RuntimeError, match="All elements must be greater than"):
        jg.special.multigammaln(jg.tensor([0.5]), 3)


def test_scipy_functions_run_a_compiled_function_eagerly_with_a_warning():
    """No backend lowers SciPy's functions: the call runs eagerly, said once (with fullgraph, an error)."""
    from jitgrad.compile import CompileError, CompileWarning

    def f(x):
        return jg.special.ndtri(x) * 2

    with pytest.warns(CompileWarning, match="special.ndtri cannot run inside a compiled"):
        np.testing.assert_array_equal(jg.compile(f)(jg.tensor([0.5, 0.9])).numpy(), f(jg.tensor([0.5, 0.9])).numpy())
    with pytest.raises(CompileError, match="special.ndtri cannot run inside a compiled"):
        jg.compile(f, fullgraph=True)(jg.tensor([0.5]))


# ---- jitgrad.testing --------------------------------------------------------------------------------
NAN, INF = float("nan"), float("inf")
CLOSE_CASES = [
    (lambda m: (m.tensor([1.0, 2.0, 3.0]), m.tensor([1.0, 2.5, 3.0])), {}),
    (lambda m: (m.tensor([[1.0, 2.0], [3.0, 4.0]]), m.tensor([[1.0, 2.0], [3.0, NAN]])), {}),
    (lambda m: (m.tensor([1, 2, 3]), m.tensor([1, 3, 3])), {}),
    (lambda m: (m.tensor([True]), m.tensor([False])), {}),
    (lambda m: (m.tensor(1.0), m.tensor(2.0)), {}),
    (lambda m: (1.0, 1.5), {}),
    (lambda m: (1, 2), {}),
    (lambda m: (m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0, 3.0])), {}),
    (lambda m: (m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0], dtype=m.float64)), {}),
    (lambda m: (m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0 + 1e-9], dtype=m.float64)), {"check_dtype": False}),
    (lambda m: (m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0])), {"rtol": 1e-3}),
    (lambda m: (m.tensor([1.0, 2.0]), 1.0), {}),
    (lambda m: (m.tensor([1.0, 2.0]), [1.0, 2.0]), {}),
    (lambda m: ([m.tensor([1.0, 2.0])], [m.tensor([1.0, 3.0])]), {}),
    (lambda m: ({"a": [m.tensor([1.0, 2.0])]}, {"a": [m.tensor([1.0, 3.0])]}), {}),
    (lambda m: (m.tensor([1.0, 2.0]), m.tensor([1.0, 3.0])), {"msg": "custom"}),
    (lambda m: (m.tensor([1.0, 2.0]), m.tensor([1.0, 3.0])), {"msg": lambda text: "X" + text[:10]}),
    (lambda m: (m.tensor([NAN, INF]), m.tensor([NAN, INF])), {"equal_nan": True}),
    (lambda m: (m.tensor([NAN]), m.tensor([NAN])), {}),
    (lambda m: (m.tensor([0.0, 1.0]), m.tensor([1e-6, 1.01])), {"rtol": 0.02, "atol": 1e-5}),
    (lambda m: (m.tensor([0.0], dtype=m.float16), m.tensor([1e-3], dtype=m.float16)), {}),
    (lambda m: ([1.0, 2.0], [1.0, 2.0, 3.0]), {}),
    (lambda m: (1, 1.0), {}),
    (lambda m: (1, 1.0), {"check_dtype": False}),
]


@pytest.mark.parametrize("case, options", CLOSE_CASES)
def test_assert_close_passes_and_fails_with_torch_testings_messages(case, options):
    try:
        torch.testing.assert_close(*case(torch), **options)
    except Exception as error:   # noqa: BLE001 - jitgrad must raise the same kind, same text
        with pytest.raises(type(error)) as got:
            jg.testing.assert_close(*case(jg), **options)
        expected = str(error).replace("torch.Tensor", "jitgrad.tensor.Tensor").replace("torch.", "jitgrad.")
        assert str(got.value) == expected
    else:
        jg.testing.assert_close(*case(jg), **options)


@pytest.mark.parametrize("dtype, low, high, expected", [
    ("float32", None, None, (-9, 9)), ("float64", 0.5, 0.75, (0.5, 0.75)), ("int64", None, None, (-9, 9)),
    ("uint8", None, None, (0, 9)), ("int32", 2.5, 4.5, (3, 4)), ("bool", None, None, (0, 1))])
def test_make_tensor_draws_in_pytorchs_ranges(dtype, low, high, expected):
    jg.manual_seed(0)
    ours = jg.testing.make_tensor(400, dtype=getattr(jg, dtype), device="cpu", low=low, high=high)
    theirs = torch.testing.make_tensor(400, dtype=getattr(torch, dtype), device="cpu", low=low, high=high)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1] and tuple(ours.shape) == (400,)
    values = ours.numpy().astype(float)
    assert expected[0] <= values.min() and values.max() <= expected[1]
    if dtype != "float64":   # integers: every value drawn; floats: the range is covered
        assert values.min() < expected[0] + 1 and values.max() > expected[1] - 1
    jg.manual_seed(0)
    assert (jg.testing.make_tensor((400,), dtype=getattr(jg, dtype), device="cpu", low=low, high=high) == ours).all()


def test_make_tensor_requires_grad_and_refuses_what_pytorch_refuses():
    x = jg.testing.make_tensor(2, 3, dtype=jg.float64, device="cpu", requires_grad=True, exclude_zero=True)
    assert x.requires_grad and x.is_leaf and tuple(x.shape) == (2, 3) and (x != 0).all()
    for kwargs in [dict(dtype="int64", requires_grad=True), dict(dtype="int64", low=3, high=3),
                   dict(dtype="float32", low=3, high=1), dict(dtype="float32", low=NAN)]:
        with pytest.raises(ValueError) as expected:
            torch.testing.make_tensor(2, **{**kwargs, "dtype": getattr(torch, kwargs["dtype"])}, device="cpu")
        with pytest.raises(ValueError) as got:
            jg.testing.make_tensor(2, **{**kwargs, "dtype": getattr(jg, kwargs["dtype"])}, device="cpu")
        assert str(got.value) == str(expected.value).replace("torch", "jitgrad")
