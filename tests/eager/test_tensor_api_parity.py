"""The Tensor methods and ``jitgrad.*`` functions PyTorch users reach for (docs/ops.md, "PyTorch's other
names, in-place forms and composites"): each against PyTorch on the same float64 inputs through one
callable written for both libraries (``m`` is ``jitgrad`` or ``torch``): values, dtypes, shapes and the
gradients of every float input; the in-place forms' version counters and refusals; PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.compile import CompileWarning
from helpers import assert_compiled_eager_and_torch_agree, check_ops_against, values_off_kinks as values

torch = pytest.importorskip("torch")

X = values()
Y = values(seed=1)
UNIT = values(low=-0.9, high=0.9, seed=2)
ABOVE_ONE = values(low=1.2, high=3.0, seed=3)
M33 = values((3, 3), seed=4)
V3 = values((3,), seed=5)
X234 = values((2, 3, 4), seed=6)
SPECIAL = np.array([1.0, -np.inf, np.inf, np.nan, 0.0, -2.5])
WITH_NAN = np.array([[1.0, np.nan, 3.0, 0.5, 2.0], [2.0, np.nan, -1.0, 7.0, np.nan], [0.5, -1.5, 4.0, 2.5, 1.0]])


def check(fn, arrays, differentiable=True):
    check_ops_against(torch, fn, arrays, differentiable, rtol=1e-10, atol=1e-12, grad_rtol=1e-9)


def _in_place(method, *args, **kwargs):
    """``y = x * 1`` (a non-leaf, so the write is allowed) changed by ``method``, then returned."""
    def fn(m, x):
        y = x * 1
        out = getattr(y, method)(*args, **kwargs)
        assert out is y
        return y
    return fn


CASES = {
    # ---- aliases and small wrappers
    "arccos": (lambda m, x: (m.arccos(x), x.arcsin(), x.arctan(), x.arctanh()), [UNIT]),
    "arccosh": (lambda m, x: (m.arccosh(x), x.arcsinh()), [ABOVE_ONE]),
    "arctan2": (lambda m, x, y: (m.arctan2(x, y), x.arctan2(y)), [X, Y]),
    "comparisons": (lambda m, x, y: (m.greater(x, y), x.greater_equal(y), m.less(x, y), x.less_equal(y),
                                     m.not_equal(x, x.round())), [X, Y], False),
    "ravel": (lambda m, x: (m.ravel(x), x.t().ravel()), [X]),
    "mv": (lambda m, a, v: (m.mv(a, v), a.mv(v)), [M33, V3]),
    "positive": (lambda m, x: m.positive(x) * 2, [X]),
    "msort": (lambda m, x: (m.msort(x), x.msort()), [X]),
    # ---- in place
    "arccos_": (_in_place("arccos_"), [UNIT]),
    "cumsum_": (_in_place("cumsum_", 1), [X]),
    "cumprod_": (_in_place("cumprod_", 0), [X]),
    "tril_": (_in_place("tril_"), [M33]),
    "triu_": (_in_place("triu_", 1), [M33]),
    "eq_": (lambda m, x: _in_place("eq_", x.round())(m, x.round() * 1 + x * 0), [X]),
    "ne_": (_in_place("ne_", 0.5), [X]),
    "lt_": (lambda m, x, y: _in_place("lt_", y.detach())(m, x), [X, Y]),
    "le_": (_in_place("le_", 0.0), [X]),
    "gt_": (_in_place("gt_", 0.0), [X]),
    "ge_": (_in_place("ge_", 0.0), [X]),
    "greater_": (_in_place("greater_", 0.0), [X]),
    "logical_not_": (_in_place("logical_not_"), [X], False),   # PyTorch's gradient: test_logical_in_place_...
    "logical_and_": (lambda m, x, y: _in_place("logical_and_", y > 0)(m, x), [X, Y], False),
    "logical_or_": (lambda m, x, y: _in_place("logical_or_", y.round())(m, x.round()), [X, Y], False),
    "logical_xor_": (lambda m, x, y: _in_place("logical_xor_", y > 0)(m, x), [X, Y], False),
    "unsqueeze_": (lambda m, x: _in_place("unsqueeze_", 1)(m, x) * m.arange(3.0), [X]),
    "squeeze_": (lambda m, x: _in_place("squeeze_")(m, x.reshape(1, 2, 1, 3)) * m.arange(3.0), [X]),
    "squeeze_-dim": (lambda m, x: _in_place("squeeze_", 0)(m, x.reshape(1, 6)) * m.arange(6.0), [X]),
    "t_": (lambda m, x: _in_place("t_")(m, x) * m.arange(2.0), [X]),
    "t_-vector": (_in_place("t_"), [V3]),
    "transpose_": (lambda m, x: _in_place("transpose_", 0, 2)(m, x) * m.arange(2.0), [X234]),
    "swapaxes_": (lambda m, x: _in_place("swapaxes_", 0, 1)(m, x) * m.arange(2.0), [X]),
    "scatter_add_": (lambda m, x, y: _in_place("scatter_add_", 1, m.tensor([[2, 0, 2], [1, 1, 0]]), y)(m, x),
                     [X, Y]),
    "fill_diagonal_": (_in_place("fill_diagonal_", 2.5), [M33]),
    "fill_diagonal_-tall": (lambda m, x: _in_place("fill_diagonal_", -1.0, wrap=True)(m, x.reshape(6, 1) * x[0]),
                            [X]),
    "fill_diagonal_-cube": (lambda m, x: _in_place("fill_diagonal_", 7.0)(m, x[:2, :2, :2]), [X234]),
    "addmm_": (lambda m, c, a, b: _in_place("addmm_", a, b, beta=0.5, alpha=2.0)(m, c), [M33, M33 * 2, M33.T]),
    "divide_": (lambda m, x, y: _in_place("divide_", y)(m, x), [X, Y]),
    "addmv_": (lambda m, y, a, v: _in_place("addmv_", a, v, alpha=2.0)(m, y), [V3, M33, V3 * 2]),
    "addr_": (lambda m, c, v, w: _in_place("addr_", v, w, beta=0.5)(m, c), [M33, V3, V3 * 3]),
    "addbmm_": (lambda m, c, a: _in_place("addbmm_", m.stack([a, a * 2]), m.stack([a.t(), a]))(m, c), [M33, M33 * 2]),
    "baddbmm_": (lambda m, c, a: _in_place("baddbmm_", a, a.transpose(1, 2), alpha=0.5)(m, c), [X234[:, :3, :3] * 1,
                                                                                               X234[:, :3]]),
    "adjoint": (lambda m, x: (m.adjoint(x), x.adjoint() * 2), [X234]),
    # ---- compositions
    "logaddexp2": (lambda m, x, y: (m.logaddexp2(x, y), x.logaddexp2(x)), [X, Y]),
    "logical_xor": (lambda m, x, y: (m.logical_xor(x, y > 0), (x > 0).logical_xor(y)), [X, Y], False),
    "isposinf": (lambda m, x: (m.isposinf(x), x.isneginf(), m.isneginf(m.tensor([1, -2]))), [SPECIAL], False),
    "dist": (lambda m, x, y: (m.dist(x, y), x.dist(y, 1), m.dist(x, y, float("inf")), m.dist(x, y[0], 3.5)), [X, Y]),
    "renorm": (lambda m, x: (m.renorm(x, 2, 0, 1.5), x.renorm(1, 1, 2.0)), [X]),
    "renorm_": (_in_place("renorm_", 2, 1, 1.0), [X]),
    "hardshrink": (lambda m, x: (m.hardshrink(x), x.hardshrink(1.0)), [X]),
    "prelu": (lambda m, x, w: (m.prelu(x, w[0]), x.prelu(w[0, :1])), [X, Y]),
    "sum_to_size": (lambda m, x: (x.sum_to_size(1, 3), x.sum_to_size((2, 1)), x.sum_to_size(3)), [X]),
    "unfold": (lambda m, x: (x.unfold(1, 2, 1), x.unfold(0, 2, 3), x.unfold(-1, 3, 2)), [X234]),
    "matrix_power": (lambda m, a: (m.matrix_power(a, 3), a.matrix_power(-2), m.matrix_power(a, 0)), [M33]),
    "cov": (lambda m, x: (m.cov(x), x.cov(correction=0), m.cov(x[0])), [X]),
    "cov-weights": (lambda m, x: m.cov(x, fweights=m.tensor([1, 2, 3]), aweights=m.tensor([0.5, 1.0, 2.0],
                                                                                         dtype=m.float64)), [X]),
    "corrcoef": (lambda m, x: (m.corrcoef(x), x.t().corrcoef()), [M33]),
    "select_scatter": (lambda m, x, y: (m.select_scatter(x, y[1], 0, 1), x.select_scatter(y[:, 0], 1, -1)), [X, Y]),
    "slice_scatter": (lambda m, x, y: (m.slice_scatter(x, y[:, :2], 1, 1), x.slice_scatter(y[:, ::2], 1, step=2)),
                      [X, Y]),
    "diagonal_scatter": (lambda m, x, y: (m.diagonal_scatter(x, y[0, :2]), x.diagonal_scatter(y[0, :1], 2)),
                         [X, Y]),
    "index_put": (lambda m, x, v: (m.index_put(x, (m.tensor([1, 0]), m.tensor([2, 2])), v[0, :2]),
                                   x.index_put((m.tensor([1, 1, 0]),), v[0], accumulate=True)), [X, Y]),
    "index_put_": (lambda m, x, v: _in_place("index_put_", (m.tensor([0, 0]), m.tensor([1, 1])), v[0, 0],
                                             accumulate=True)(m, x), [X, Y]),
    "masked_scatter": (lambda m, x, s: (m.masked_scatter(x, x > 0, s), x.masked_scatter(m.tensor([True, False, True]),
                                                                                          s.reshape(-1))), [X, Y]),
    "masked_scatter_": (lambda m, x, s: _in_place("masked_scatter_", x < 0, s)(m, x), [X, Y]),
    "quantile": (lambda m, x: tuple(m.quantile(x, q, d, k, interpolation=i) for q, d, k, i in (
        (0.3, 1, False, "linear"), (0.3, 2, True, "lower"), (0.7, 0, False, "higher"), (0.5, 1, False, "midpoint"),
        (0.6, 1, False, "nearest"), (0.25, None, False, "linear"), (0.25, None, True, "midpoint"))) + (
        x.quantile(m.tensor([0.0, 0.4, 1.0], dtype=m.float64), dim=2),), [X234]),
    "nanquantile": (lambda m, x: (m.nanquantile(x, 0.3, 1), x.nanquantile(m.tensor([0.5, 0.9], dtype=m.float64), 0),
                                  m.quantile(x, 0.5, 1)), [WITH_NAN]),
    "nanmedian": (lambda m, x: (m.nanmedian(x), *x.nanmedian(1), *m.nanmedian(x, 0, keepdim=True)), [WITH_NAN]),
    "median-ties": (lambda m, x: (m.median(x), m.nanmedian(x)), [np.array([[1.0, 3.0, 1.0], [2.0, 1.0, 5.0]])]),
    "mode": (lambda m, x: (*m.mode(x.round()), *x.round().mode(0, keepdim=True)), [X234]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_torch(name):
    fn, arrays, *differentiable = CASES[name]
    check(fn, arrays, *differentiable)


def test_queries_as_pytorch():
    for m in (jg, torch):
        x, u, b = m.ones(2, 3), m.ones(2, dtype=m.uint8), m.tensor([True])
        assert (x.nelement(), x.is_complex(), m.is_complex(x), x.is_cpu, x.get_device()) == (6, False, False, True, -1)
        assert (x.is_signed(), m.is_signed(m.tensor([1])), u.is_signed(), b.is_signed()) == (True, True, False, False)
        assert (m.tensor([0.5]).is_nonzero(), m.is_nonzero(m.tensor([[0]])), m.tensor(float("nan")).is_nonzero()) \
            == (True, False, True)
        assert m.positive(x) is x
        assert (x.is_same_size(m.ones(2, 3)), m.is_same_size(x, m.ones(3, 2))) == (True, False)
        grid = m.tensor([[1, 2], [3, 4]])   # ``in`` looks at every element (jitgrad's raised until 2026-11-28)
        assert (3 in grid, 7 in grid, m.tensor([1, 2]) in grid, 2.0 in m.tensor([1.5, 2.0])) == (True, False, True, True)
        assert (+grid).tolist() == grid.tolist() and reversed(grid).tolist() == [[3, 4], [1, 2]]


ERRORS = {  # expression (``M`` the module): what PyTorch's and jitgrad's errors say
    "M.ones(2).is_nonzero()": "with more than one value is ambiguous",
    "'a' in M.ones(2)": "Tensor.__contains__ only supports Tensor or scalar",
    "M.ones(0).is_nonzero()": "with no values is ambiguous",
    "M.tensor([True]).positive()": "on a bool tensor is not supported",
    "M.mv(M.ones(2, 3), M.ones(2))": r"size mismatch, got input \(2\), mat \(2x3\), vec \(2\)",
    "M.mv(M.ones(2, 3, 1), M.ones(2))": "vector \\+ matrix @ vector expected, got 1, 3, 1",
    "M.ones(2, 3, requires_grad=True).unsqueeze_(0)": "a leaf Variable that requires grad",
    "M.ones(2, 3, requires_grad=True).cumsum_(0)": "a leaf Variable that requires grad",
    "M.ones(2, 3, requires_grad=True).eq_(1)": "a leaf Variable that requires grad",
    "M.ones(2, 3, requires_grad=True)[0].unsqueeze_(0)": "a view of a leaf Variable that requires grad",
    "M.ones(2, 3, 4).fill_diagonal_(1)": "all dimensions of input must be of equal length",
    "M.ones(3).fill_diagonal_(1)": "dimensions must larger than 1",
    "M.ones(2, 3, 4).t_()": "expects a tensor with <= 2 dimensions",
    "M.ones(3).adjoint()": "only supported on matrices or batches of matrices. Got 1-D tensor",
    "M.index_put_(M.zeros(2), (M.tensor([0]),), M.ones(1, dtype=M.float64))": "dtypes match",
    "M.tensor([1, 2]).cumprod_(0).div_(2)": "can't be cast to the desired output type",
    "M.quantile(M.tensor([1.0, 2.0]), 1.5)": r"q must be in the range \[0, 1\] but got 1.5",
    "M.quantile(M.tensor([1.0, 2.0]), 0.5, interpolation='bad')": "interpolation must be one of linear",
    "M.quantile(M.tensor([1, 2]), 0.5)": "input tensor must be either float or double dtype",
    "M.masked_scatter(M.zeros(2), M.tensor([True, True]), M.ones(1))": "Number of elements of source <",
    "M.zeros(2).masked_scatter(M.tensor([1.0, 0.0]), M.ones(2))": "only supports boolean masks",
    "M.ones(2, 3).sum_to_size(3, 1)": "is not expandable to size",
    "M.ones(3).renorm(2, 0, 1.0)": "input needs at least 2 dimensions",
    "M.index_put(M.zeros(2), (M.tensor([0]),), M.ones(1, dtype=M.float64))": "dtypes match",
    "M.select_scatter(M.zeros(2, 3), M.ones(2), 0, 0)": "expected src to have a size equal to the slice",
    "M.arange(3.0).unfold(0, 4, 1)": "maximum size for tensor at dimension 0 is 3 but size is 4",
}


@pytest.mark.parametrize("expr", sorted(ERRORS))
def test_errors_as_pytorch(expr):
    for m in (jg, torch):
        with pytest.raises(RuntimeError, match=ERRORS[expr]):
            eval(expr, {"M": m})


@pytest.mark.parametrize("method, args", [("unsqueeze_", (0,)), ("t_", ()), ("cumsum_", (0,)), ("eq_", (1.0,)),
                                          ("fill_diagonal_", (3.0,))])
def test_in_place_bumps_the_version_and_refuses_a_saved_value_as_pytorch(method, args):
    for m in (jg, torch):
        leaf = m.ones(2, 2, requires_grad=True)
        y = leaf * 1
        saved = y.sin()   # saves y, the input of sin
        before = y._version
        getattr(y, method)(*args)
        assert y._version == before + 1
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            saved.sum().backward()


def test_a_view_changed_in_place_by_a_view_op_keeps_writing_into_its_base():
    for m in (jg, torch):
        base = m.zeros(2, 3)
        row = base[1]
        row.unsqueeze_(0)
        row.fill_(4.0)
        assert row.shape == (1, 3) and base.sum().item() == 12.0


def test_logical_in_place_forms_give_zero_gradients():
    """PyTorch's ``logical_not_`` (``_and_``, ``_or_``, ``_xor_``) of a float tensor leaves its history
    as it was, so the gradient of the 0s and 1s written is the old value's (2 below): a gradient
    silently wrong, which jitgrad does not copy. Its comparisons' (``eq_``) are zeros, as jitgrad's."""
    for method, args in (("logical_not_", ()), ("logical_xor_", (jg.ones(3),)), ("eq_", (1.0,))):
        leaf = jg.ones(3, requires_grad=True)
        y = leaf * 2
        getattr(y, method)(*args)
        y.sum().backward()
        assert leaf.grad.tolist() == [0.0, 0.0, 0.0]


def test_the_composites_compile():
    """The elementwise and reduction composites as one compiled function (the LLVM backend, ~0.5 s);
    the scatters lower through numba too, but a numba compile costs seconds."""
    def fn(x, y):
        shrunk = x.logaddexp2(y) * x.hardshrink(0.3) + x.prelu(y[0, :1]) + x.isposinf() * 1.0
        return shrunk + x.dist(y) + x.renorm(2, 0, 1.0) + (x.cov() @ y) * x.logical_xor(y > 0)
    assert_compiled_eager_and_torch_agree(fn, X, Y, torch)


def test_the_view_ops_in_place_trace():
    """A trace (no compile) of ``t_``/``unsqueeze_``/``squeeze_``: the graph gives eager's values. The
    write is noted before the version moves on, else the tracer took the view op's result for a stale
    view of the tensor and stopped (the function ran eagerly)."""
    def fn(x, y):
        turned = x * y
        turned.t_()
        turned.unsqueeze_(0)
        return (turned * x.t()).squeeze_(0).t_() + 1.0
    x, y = jg.tensor(X), jg.tensor(Y)
    np.testing.assert_array_equal(jg.fx.trace(fn, x, y)(x, y).numpy(), fn(x, y).numpy())


def test_a_shape_change_in_place_is_refused_while_views_of_the_tensor_live():
    """Views find their elements by replaying their view ops on their root, so after the root's shape
    changed they would read the wrong ones, silently (PyTorch's keep their own strides): refused."""
    base = jg.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    row = base[1]
    with pytest.raises(RuntimeError, match="has views"):
        base.t_()
    del row
    assert base.t_().shape == (3, 2) and base[0].tolist() == [0.0, 3.0]
    view = jg.arange(6.0).reshape(2, 3)   # a view itself: its own views replay from its root, unchanged
    row = view[1]
    view.t_().mul_(2.0)
    assert row.tolist() == [6.0, 8.0, 10.0]


BITWISE = [  # expression (``M`` the module) whose value and dtype are PyTorch's
    "M.bitwise_and(M.tensor([12, -7, 5], dtype=M.int32), M.tensor([10, 3, -2]))",
    "M.tensor([12, -7, 5], dtype=M.int32).bitwise_or(3)",
    "M.bitwise_xor(M.tensor([True, False]), M.tensor([True, True]))",
    "M.bitwise_and(M.tensor([True]), 1)",
    "M.bitwise_not(M.tensor([True, False]))",
    "M.tensor([1, 0], dtype=M.int16).bitwise_not()",
    "M.gcd(M.tensor([12, -7, 0, 0]), M.tensor([10, 3, 0, 5]))",
    "M.tensor([12, -7, 0]).lcm(M.tensor([10, 3, 3]))",
    "M.tensor([5], dtype=M.int8) & 3",
    "~M.tensor([1, 0])",
    "M.tensor([1, 2]) ^ M.tensor([3, 3])",
    "M.tensor([True, False]) ^ True",
    "M.tensor([4, 1]) | M.tensor([True, False])",
    "(lambda x: (x.gcd_(M.tensor([4, 3])), x.bitwise_xor_(1))[1])(M.tensor([6, 9]))",
]


@pytest.mark.parametrize("expr", BITWISE)
def test_bitwise_and_divisors_as_pytorch(expr):
    ours, theirs = (eval(expr, {"M": m}) for m in (jg, torch))
    assert ours.tolist() == theirs.tolist() and str(ours.dtype)[8:] == str(theirs.dtype)[6:]


@pytest.mark.parametrize("expr", ["M.bitwise_and(M.ones(2), M.ones(2))", "M.gcd(M.tensor([True]), M.tensor([True]))",
                                  "M.ones(2).bitwise_not()"])
def test_bitwise_of_floats_is_pytorchs_error(expr):
    for m in (jg, torch):
        with pytest.raises(NotImplementedError, match="_cpu\" not implemented for '(Float|Bool)'"):
            eval(expr, {"M": m})


def test_a_compiled_function_calling_a_bitwise_op_runs_it_eagerly_with_a_warning():
    compiled = jg.compile(lambda x: x.bitwise_and(6) + 1, cache=False)
    with pytest.warns(CompileWarning, match="bitwise_and"):
        assert compiled(jg.tensor([3, 12])).tolist() == [3, 5]


def test_bitwise_not_takes_one_operand():
    """numpy's ``invert(a, b)`` writes into ``b``: a second operand would have changed that tensor."""
    other = jg.tensor([5, 6])
    with pytest.raises(TypeError, match="takes 1 arguments"):
        jg.bitwise_not(jg.tensor([1, 2]), other)
    assert other.tolist() == [5, 6]
