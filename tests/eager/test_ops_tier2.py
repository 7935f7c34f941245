"""The second tier of PyTorch ops jitgrad added (docs/ops.md, "PyTorch's tier-2 ops"): each against
PyTorch on the same float64 inputs, through one callable written for both libraries (``m`` is
``jitgrad`` or ``torch``): values, dtypes, shapes and the gradients of every float input for the same
incoming gradients; ``gradcheck`` (finite differences) on the differentiable ones; the edge values
(signed zeros, infinities, NaN, ties) where PyTorch makes a choice; the tensor layout queries against
PyTorch's on views; the random fills' reproducibility; errors; and one compiled function of the new
elementwise composites against eager."""
from __future__ import annotations

import math

import numpy as np
import pytest

import jitgrad as jg
from helpers import assert_compiled_eager_and_torch_agree, check_ops_against, values_off_kinks as values

torch = pytest.importorskip("torch")


# ---- inputs ---------------------------------------------------------------------------------------------
X = values()
Y = values(seed=1)
POSITIVE = values(low=0.3, high=2.0, seed=2)
UNIT = values(low=0.05, high=0.95, avoid=(0.5,), seed=3)
X234 = values((2, 3, 4), seed=4)
V3 = values((3,), seed=5)
W3 = values((3,), seed=6)
M34 = values((3, 4), seed=7)
B243 = values((2, 4, 3), seed=8)
WITH_NAN = np.array([[1.0, np.nan, 3.0, 3.0, 0.5], [2.0, 2.0, -1.0, 7.0, 7.0]])
TIES = np.array([[1.0, 4.0, 3.0, 3.0, 0.5], [2.0, 2.0, -1.0, 7.0, 7.0]])


def check_against_torch(fn, arrays, differentiable=True, rtol=1e-10, atol=1e-12):
    check_ops_against(torch, fn, arrays, differentiable, rtol=rtol, atol=atol, grad_rtol=1e-9)


# ---- every op against PyTorch -----------------------------------------------------------------------
COMPARISONS = {
    "absolute": (lambda m, x: m.absolute(x), [X]),
    "negative": (lambda m, x: x.negative(), [X]),
    "true_divide": (lambda m, x, y: m.true_divide(x, y), [X, POSITIVE]),
    "true_divide-int": (lambda m, x: m.tensor([3, 4]).true_divide(2), [X]),
    "sgn": (lambda m, x: x.sgn(), [X]),
    "sign-bool": (lambda m, x: (m.sign(x > 0), (x > 0).sgn(), (x > 0).sign_()), [X]),
    "fmax": (lambda m, x, y: m.fmax(x, y), [X, Y]),
    "fmin": (lambda m, x, y: x.fmin(y), [X, Y]),
    "fmax-nan-ties": (lambda m, x, y: m.fmax(x, y) + m.fmin(y, x), [np.array([1.0, np.nan, 2.0, np.nan]),
                                                                   np.array([np.nan, 1.0, 2.0, np.nan])]),
    "where-method": (lambda m, x, y: x.where(x > 0, y), [X, Y]),
    "masked_select": (lambda m, x: m.masked_select(x, m.tensor([[True], [False]])), [X]),
    "masked_select-broadcast": (lambda m, x: x.masked_select(x[0] > 0), [X]),
    "count_nonzero": (lambda m, x: m.count_nonzero(x.round()), [X]),
    "count_nonzero-dims": (lambda m, x: x.round().count_nonzero(dim=(0, 2)), [X234]),
    "isclose": (lambda m, x, y: m.isclose(x, y, rtol=0.1, atol=0.5), [X, Y]),
    "signbit": (lambda m, x: m.signbit(x), [np.array([-0.0, 0.0, -1.5, 2.0, np.inf, -np.inf, np.nan, -np.nan])]),
    "signbit-int": (lambda m, x: m.tensor([-2, 0, 3]).signbit(), [X]),
    "heaviside": (lambda m, x: m.heaviside(x.round(), m.tensor(0.25, dtype=m.float64)), [X]),
    "nonzero": (lambda m, x: (x.round() * 0.0 + (x > 0.5)).nonzero(), [X]),
    "nonzero-tuple": (lambda m, x: m.nonzero(x > 0.5, as_tuple=True), [X234]),
}

ELEMENTWISE = {
    "addcmul": (lambda m, x, a, b: m.addcmul(x, a, b, value=0.5), [X, Y, POSITIVE]),
    "addcdiv": (lambda m, x, a, b: x.addcdiv(a, b, value=-2), [X, Y, POSITIVE]),
    "hypot": (lambda m, x, y: m.hypot(x, y), [X, Y]),
    "hypot-big": (lambda m, x, y: m.hypot(x * 1e200, y * 1e200), [X, Y]),
    "hypot-origin": (lambda m, x, y: m.hypot(x, y), [np.array([0.0, 0.0, 3.0]), np.array([0.0, -0.0, 0.0])]),
    "logaddexp": (lambda m, x, y: m.logaddexp(x, y), [X, Y]),
    "logaddexp-far": (lambda m, x, y: x.logaddexp(y * 1000.0), [X, Y]),
    "logit": (lambda m, x: m.logit(x), [UNIT]),
    "logit-eps": (lambda m, x: x.logit(eps=0.2), [values(low=0.05, high=0.95, avoid=(0.2, 0.8))]),
    "xlogy": (lambda m, x, y: m.xlogy(x, y), [X, POSITIVE]),
    "xlogy-number": (lambda m, x: m.xlogy(x, 3.0), [X]),
    "xlogy-zeros": (lambda m, x, y: m.xlogy(x, y), [np.array([0.0, 0.0, 2.0, 1.5, 0.0]), np.array([0.5, 2.0, np.inf, 3.0, -1.0])]),
    "sinc": (lambda m, x: m.sinc(x), [X]),
    "sinc-zero": (lambda m, x: x.sinc(), [np.array([0.0, 1.0, -2.0, 0.5])]),
    "deg2rad": (lambda m, x: m.deg2rad(x * 90.0), [X]),
    "rad2deg": (lambda m, x: x.rad2deg(), [X]),
    "deg2rad-int": (lambda m, x: m.tensor([90, 180]).deg2rad(), [X]),
    "copysign": (lambda m, x, y: m.copysign(x, y), [X, Y]),
    "copysign-zeros": (lambda m, x, y: x.copysign(y), [np.array([0.0, 1.5, -2.0, 3.0, 2.0]),
                                                      np.array([-0.0, 0.0, 0.0, -1.0, -np.nan])]),
    "copysign-number": (lambda m, x: m.copysign(x, -1.0), [X]),
    "float_power": (lambda m, x, y: m.float_power(x, y), [POSITIVE, Y]),
    "float_power-int": (lambda m, x: m.float_power(m.tensor([2, 3]), 2), [X]),
    "addcmul_": (lambda m, x, a: (x * 1.0).addcmul_(a, a, value=2.0), [X, Y]),
    "hypot_": (lambda m, x, y: (x * 1.0).hypot_(y), [X, Y]),
}

COMBINING = {
    "hstack": (lambda m, a, b: m.hstack([a, b]), [X, Y]),
    "hstack-vectors": (lambda m, a, b: m.hstack((a, b)), [V3, W3]),
    "vstack": (lambda m, a, b: m.vstack([a, b]), [X, V3]),
    "dstack": (lambda m, a, b: m.dstack([a, b]), [X, Y]),
    "column_stack": (lambda m, a, b: m.column_stack([a, b.T]), [V3, X]),
    "atleast_3d": (lambda m, a: m.atleast_3d(a), [V3]),
    "meshgrid-ij": (lambda m, a, b: m.meshgrid(a, b, indexing="ij"), [V3, values((2,))]),
    "meshgrid-xy": (lambda m, a, b: m.meshgrid(a, b, a, indexing="xy"), [V3, values((2,))]),
    "cartesian_prod": (lambda m, a, b: m.cartesian_prod(a, b), [V3, values((2,))]),
    "block_diag": (lambda m, a, b, c: m.block_diag(a, b, c[0]), [X, V3, values((2,))]),
    "tile": (lambda m, a: m.tile(a, (2,)), [X]),
    "tile-more": (lambda m, a: a.tile((2, 1, 2)), [X]),
    "repeat_interleave": (lambda m, a: a.repeat_interleave(2, dim=0), [X]),
    "repeat_interleave-flat": (lambda m, a: m.repeat_interleave(a, 3), [X]),
    "repeat_interleave-counts": (lambda m, a: m.repeat_interleave(a, m.tensor([1, 0, 2]), dim=1), [X]),
    "diff": (lambda m, a: m.diff(a, dim=0), [X234]),
    "diff-n-pre-append": (lambda m, a, b: a.diff(2, prepend=b, append=b), [V3, W3]),
    "fliplr": (lambda m, a: a.fliplr(), [X234]),
    "flipud": (lambda m, a: m.flipud(a), [X]),
    "rot90": (lambda m, a: a.rot90(), [X234]),
    "rot90-back": (lambda m, a: m.rot90(a, -1, [2, 0]), [X234]),
    "rot90-2": (lambda m, a: m.rot90(a, 2), [X]),
    "diag_embed": (lambda m, a: m.diag_embed(a), [X]),
    "diag_embed-offset": (lambda m, a: a.diag_embed(-1, 0, 2), [X]),
    "diagflat": (lambda m, a: m.diagflat(a, 1), [X]),
    "diag": (lambda m, a, b: m.diag(a, -1).sum() + b.diag(1), [V3, M34]),
    "take_along_dim": (lambda m, a: m.take_along_dim(a, m.tensor([[2], [0]]), 1), [X]),
    "take_along_dim-broadcast": (lambda m, a: a.take_along_dim(m.tensor([[1, 0, 1]]), 0), [X]),
    "take_along_dim-flat": (lambda m, a: m.take_along_dim(a, m.tensor([5, 0, 5])), [X]),
    "take": (lambda m, a: m.take(a, m.tensor([[-1, 0], [3, 3]])), [X]),
    "hsplit": (lambda m, a: a.hsplit([1]), [X]),
    "hsplit-sections": (lambda m, a: m.hsplit(a, 3), [X]),
    "vsplit": (lambda m, a: m.vsplit(a, 2), [X234]),
    "dsplit": (lambda m, a: m.dsplit(a, [1, 3]), [X234]),
}

PRODUCTS = {
    "dot": (lambda m, a, b: m.dot(a, b), [V3, W3]),
    "vdot": (lambda m, a, b: a.vdot(b), [V3, W3]),
    "inner": (lambda m, a, b: m.inner(a, b), [X, B243]),
    "ger": (lambda m, a, b: m.ger(a, b), [V3, W3]),
    "addmv": (lambda m, c, a, b: m.addmv(c, a, b, beta=0.5, alpha=2.0), [values((2,)), X, W3]),
    "addr": (lambda m, c, a, b: c.addr(a, b[:2], alpha=3.0), [X.T, V3, W3]),
    "addbmm": (lambda m, c, a, b: m.addbmm(c, a, b, beta=0.3), [values((1,)), B243, X234]),
    "tensordot": (lambda m, a, b: m.tensordot(a, b, dims=([1, 2], [2, 1])), [B243, X234]),
    "tensordot-int": (lambda m, a, b: m.tensordot(a, b, 1), [X, M34]),
    "tensordot-0": (lambda m, a, b: m.tensordot(a, b, 0), [V3, W3]),
    "kron": (lambda m, a, b: m.kron(a, b), [X, values((2, 2))]),
    "kron-ranks": (lambda m, a, b: a.kron(b), [V3, X234]),
    "trace": (lambda m, a: a.trace(), [M34]),
    "cross": (lambda m, a, b: m.cross(a, b, dim=2), [B243, X234.transpose(0, 2, 1)]),
    "cross-broadcast": (lambda m, a, b: m.cross(a, b.reshape(1, 1, 3), dim=-1), [B243, W3]),
    "cdist": (lambda m, a, b: m.cdist(a, b), [B243, values((2, 5, 3))]),
    "cdist-1": (lambda m, a, b: m.cdist(a, b, p=1), [X, Y[:1]]),
    "cdist-3": (lambda m, a, b: m.cdist(a, b, p=3), [X, M34.T]),
    "cdist-inf": (lambda m, a, b: m.cdist(a, b, p=math.inf), [X, Y]),
    "cdist-0": (lambda m, a, b: m.cdist(a, b, p=0), [X, Y]),
}

SQUARE = values((2, 3, 3), seed=12) + 3.0 * np.eye(3)   # well conditioned
MIXED_SIGNS = values((3, 3), seed=13)   # a negative determinant: logdet is NaN

MATRIX = {
    "inverse": (lambda m, a: m.inverse(a), [SQUARE]),
    "det": (lambda m, a: a.det(), [SQUARE]),
    "det-negative": (lambda m, a: m.det(a), [MIXED_SIGNS]),
    "logdet": (lambda m, a: m.logdet(a), [SQUARE]),
    "logdet-negative": (lambda m, a: a.logdet(), [MIXED_SIGNS]),
    "slogdet": (lambda m, a: m.slogdet(a), [MIXED_SIGNS]),
}

SPECIAL = {
    "erfc": (lambda m, x: m.erfc(x * 3.0), [X]),
    "erfinv": (lambda m, x: x.erfinv(), [values(low=-0.95, high=0.95)]),
    "lgamma": (lambda m, x: m.lgamma(x), [values(low=-2.5, high=6.0, avoid=(-2.0, -1.0, 0.0))]),
    "digamma": (lambda m, x: x.digamma(), [values(low=-2.5, high=6.0, avoid=(-2.0, -1.0, 0.0))]),
    "polygamma": (lambda m, x: m.polygamma(2, x), [POSITIVE]),
    "polygamma-method": (lambda m, x: x.polygamma(1), [POSITIVE]),
    "lgamma-int": (lambda m, x: m.tensor([1, 2, 5]).lgamma(), [X]),
    "erfc_": (lambda m, x: (x * 1.0).erfc_(), [X]),
}

SCANS = {
    "nansum": (lambda m, x: m.nansum(x, 1), [WITH_NAN]),
    "nansum-all": (lambda m, x: x.nansum(), [WITH_NAN]),
    "nanmean": (lambda m, x: m.nanmean(x, dim=1, keepdim=True), [WITH_NAN]),
    "aminmax": (lambda m, x: m.aminmax(x, dim=1), [TIES]),
    "aminmax-all": (lambda m, x: x.aminmax(), [TIES]),
    "cummax": (lambda m, x: m.cummax(x, 1), [WITH_NAN]),
    "cummin-ties": (lambda m, x: x.cummin(1), [TIES]),
    "cummax-dim0": (lambda m, x: x.cummax(0), [X234]),
    "logcumsumexp": (lambda m, x: m.logcumsumexp(x, 1), [X234]),
    "logcumsumexp-wide-range": (lambda m, x: x.logcumsumexp(1), [TIES * 300.0]),
    "kthvalue": (lambda m, x: m.kthvalue(x, 2, 1), [X234]),
    "kthvalue-keepdim": (lambda m, x: x.kthvalue(1, 0, True), [X234]),
}

INDEXING = {
    "index_add": (lambda m, x, s: m.index_add(x, 0, m.tensor([2, 0]), s, alpha=2.0), [M34, values((2, 4))]),
    "index_add-repeated": (lambda m, x, s: x.index_add(0, m.tensor([1, 1]), s), [M34, values((2, 4))]),
    "index_add_": (lambda m, x, s: (x * 1.0).index_add_(1, m.tensor([3, 0]), s), [M34, values((3, 2))]),
    "index_copy": (lambda m, x, s: m.index_copy(x, 0, m.tensor([2, 0]), s), [M34, values((2, 4))]),
    "index_fill": (lambda m, x: x.index_fill(1, m.tensor([3, 0]), -1.5), [M34]),
    "index_fill-tensor": (lambda m, x, v: x.index_fill(1, m.tensor([3, 0]), v[0]), [M34, V3]),
    "scatter": (lambda m, x, s: x.scatter(0, m.tensor([[2, 0, 1, 1], [0, 1, 2, 0]]), s), [M34, values((2, 4))]),
    "scatter-value": (lambda m, x: m.scatter(x, 1, m.tensor([[2], [0], [3]]), 7.0), [M34]),
}
SCATTER_INDEX = [[2, 0, 2, 2], [2, 0, 0, 2]]
for _reduce in ("sum", "prod", "mean", "amax", "amin"):
    for _include in (True, False):
        INDEXING[f"scatter_reduce-{_reduce}-{_include}"] = (
            lambda m, x, s, r=_reduce, i=_include: x.scatter_reduce(0, m.tensor(SCATTER_INDEX), s, r, include_self=i),
            [M34, values((2, 4), seed=9)])
INDEXING["scatter_reduce-amax-ties"] = (
    lambda m, x: x.scatter_reduce(1, m.tensor([[0, 0]] * 3), m.stack([x[:, 0], x[:, 0] * 1.0], 1), "amax"), [M34])
INDEXING["scatter_reduce-prod-zero"] = (
    lambda m, x: x.scatter_reduce(1, m.tensor([[1, 1]] * 3), m.stack([x[:, 0], x[:, 1] * 0.0], 1), "prod"), [M34])

CASES = {**COMPARISONS, **ELEMENTWISE, **COMBINING, **PRODUCTS, **MATRIX, **SPECIAL, **SCANS, **INDEXING}
VALUES_ONLY = {"heaviside", "sign-bool", "nonzero", "nonzero-tuple", "count_nonzero", "count_nonzero-dims", "isclose", "signbit",
               "signbit-int", "true_divide-int", "deg2rad-int", "float_power-int", "lgamma-int"}


# PyTorch's float64 trigamma, polygamma(1, x), is 4e-10 off near x = 1.7 (mpmath: 0.7932328301639984,
# PyTorch 0.793232830501591); SciPy's, ours, is exact
RTOL = {"polygamma-method": 1e-8}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_dtypes_shapes_and_gradients_are_pytorchs(name):
    fn, arrays = CASES[name]
    check_against_torch(fn, arrays, differentiable=name not in VALUES_ONLY, rtol=RTOL.get(name, 1e-10))


GRADCHECKED = ["addcdiv", "hypot", "logaddexp", "logit", "xlogy", "sinc", "copysign", "fmax", "masked_select",
               "meshgrid-xy", "block_diag", "repeat_interleave", "diff-n-pre-append", "rot90", "diag_embed-offset",
               "take_along_dim-broadcast", "inner", "addbmm", "tensordot", "kron-ranks", "cross", "cdist", "cdist-3",
               "nanmean", "cummax-dim0", "logcumsumexp", "kthvalue", "inverse", "det", "logdet", "erfc", "lgamma",
               "digamma", "polygamma", "index_add", "index_copy", "index_fill-tensor",
               "scatter", "scatter_reduce-prod-True", "scatter_reduce-amin-False", "scatter_reduce-mean-True"]


@pytest.mark.parametrize("name", GRADCHECKED)
def test_gradcheck(name):
    fn, arrays = CASES[name]
    inputs = tuple(jg.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays)
    assert jg.autograd.gradcheck(lambda *xs: fn(jg, *xs), inputs, eps=1e-6, atol=1e-5)


@pytest.mark.parametrize("name, point", [("inverse", SQUARE), ("det", SQUARE), ("logdet", SQUARE),
                                         ("erfc", X), ("erfinv", X * 0.4), ("lgamma", POSITIVE), ("digamma", POSITIVE)])
def test_functions_have_second_order_and_forward_mode_gradients(name, point):
    """The matrix and special functions' backwards are jitgrad ops on the saved input and output, calling
    ``inverse`` or the next function of the family again: second order by gradgradcheck, forward mode
    against PyTorch's."""
    fn = getattr(jg, name)
    assert jg.autograd.gradgradcheck(fn, (jg.tensor(point, requires_grad=True),), eps=1e-6, atol=1e-5)
    tangent = values(point.shape, seed=14)
    tangents = []
    for m in (jg, torch):
        forward_ad = m.autograd.forward_ad
        with forward_ad.dual_level():
            out = getattr(m, name)(forward_ad.make_dual(m.tensor(point), m.tensor(tangent)))
            tangents.append(forward_ad.unpack_dual(out).tangent.numpy())
    np.testing.assert_allclose(*tangents, rtol=1e-9)


def test_special_functions_at_their_poles_and_tails():
    """erfc far in the tail (1 - erf would be 0), lgamma's poles and -inf, digamma's -inf at 0 and NaN
    at the negative integers, erfinv's infinities at +-1: PyTorch's values."""
    check_against_torch(lambda m, x: m.erfc(x), [np.array([10.0, 26.0, -30.0, 0.0, np.inf, np.nan])],
                        differentiable=False, rtol=1e-13)
    poles = np.array([0.0, -1.0, -2.0, np.inf, -np.inf, 1e-300, 1.0, 2.0])
    check_against_torch(lambda m, x: m.lgamma(x), [poles], differentiable=False)
    check_against_torch(lambda m, x: m.digamma(x), [poles[:6]], differentiable=False)
    check_against_torch(lambda m, x: m.erfinv(x), [np.array([-1.0, 1.0, 0.0, 1.5])], differentiable=False)


# ---- edge values -------------------------------------------------------------------------------------
def test_isclose_allclose_and_equal_at_infinities_and_nan():
    a = [np.inf, np.nan, 1e-9, 1e300, 5.0, -np.inf]
    b = [np.inf, np.nan, 0.0, -1e300, np.inf, np.inf]
    for equal_nan in (False, True):
        check_against_torch(lambda m, x, y, e=equal_nan: m.isclose(x, y, equal_nan=e), [np.array(a), np.array(b)],
                            differentiable=False)
    check_against_torch(lambda m, x, y: m.isclose(x, y, atol=1, rtol=0), [np.array([1, 2, 3]), np.array([1, 3, 5])],
                        differentiable=False)
    for m in (jg, torch):
        x = m.tensor([1.0, np.nan])
        assert m.allclose(x, x + 1e-9, equal_nan=True) and not m.allclose(x, x)
        assert not m.equal(x, x) and m.equal(x[:1], x[:1] * 1.0) and not m.equal(x, x[:1])
        assert x.allclose(x + 1e-3, atol=1e-2, equal_nan=True) is True


def test_logaddexp_and_hypot_of_infinities():
    special = np.array([np.inf, -np.inf, np.inf, -np.inf, 1.0])
    other = np.array([np.inf, -np.inf, -np.inf, 2.0, np.nan])
    check_against_torch(lambda m, x, y: m.logaddexp(x, y), [special, other], differentiable=False)
    check_against_torch(lambda m, x, y: m.hypot(x, y), [special, other], differentiable=False)


def test_float16_composites_and_comparisons_with_numbers_are_pytorchs():
    """A float16 tensor compared with a Python number gives bools (it gave float16 0s and 1s, so the
    composites that pick with ``where`` refused float16)."""
    half = np.array([0.5, -1.5, 2.0, 0.0], np.float16)
    other = np.array([1.5, 0.5, -2.0, 3.0], np.float16)
    for fn in (lambda m, x, y: x > 0.5, lambda m, x, y: m.sinc(x), lambda m, x, y: m.copysign(x, y),
               lambda m, x, y: m.heaviside(x, y), lambda m, x, y: m.signbit(x),
               lambda m, x, y: x.scatter_reduce(0, m.tensor([1, 1, 0, 3]), y, "mean")):
        check_against_torch(fn, [half, other], differentiable=False, rtol=2e-3, atol=1e-3)


def test_scans_of_nan_and_zero_length_edges():
    check_against_torch(lambda m, x: m.cummin(x, 0), [np.array([3.0, np.nan, 1.0, np.nan, 0.0])])
    check_against_torch(lambda m, x: m.logcumsumexp(x, 0), [np.array([-np.inf, -np.inf, 0.0, np.inf])],
                        differentiable=False)
    check_against_torch(lambda m, x: m.nansum(x), [np.array([np.nan, np.nan])])


def test_the_layout_queries_are_pytorchs_on_views():
    views = [lambda x: x, lambda x: x[:, 1:, ::2], lambda x: x.transpose(0, 2), lambda x: x[1], lambda x: x[..., 2:3],
             lambda x: x.reshape(6, 4)[2:], lambda x: x.expand(2, 2, 3, 4)]
    for view in views:
        ours, theirs = view(jg.arange(24.0).reshape(2, 3, 4)), view(torch.arange(24.0).reshape(2, 3, 4))
        assert ours.stride() == theirs.stride()
        assert ours.stride(-1) == theirs.stride(-1)
        assert ours.storage_offset() == theirs.storage_offset()
        assert ours.is_contiguous() == theirs.is_contiguous()
        assert (ours.nbytes, ours.itemsize, ours.element_size(), ours.ndimension()) == \
               (theirs.nbytes, theirs.itemsize, theirs.element_size(), theirs.ndimension())
    base = jg.arange(24.0).reshape(2, 3, 4)
    assert base[1, 2:].data_ptr() - base.data_ptr() == (12 + 8) * 4
    assert jg.ones(2, dtype=jg.float64).element_size() == 8 and jg.ones(3, dtype=jg.int8).nbytes == 3


def test_contiguous_and_clone_give_pytorchs_layouts():
    # contiguous() of a transpose was clone(), which keeps the layout: x.transpose(1, 2).contiguous()
    # .view(...) raised (every transformer's attention reshapes so); clone keeps it, as PyTorch's, but
    # makes an expanded or a permuted stepped view row-major: numpy's order "K" kept its strides' order
    views = [lambda x: x.transpose(1, 2), lambda x: x.permute(2, 0, 1), lambda x: x[:, ::2], lambda x: x,
             lambda x: x[:, :1].expand(2, 3, 4), lambda x: x.transpose(1, 2)[:, ::2]]
    for view in views:
        for make in (lambda v, m: v.contiguous(), lambda v, m: v.clone(),
                     lambda v, m: v.clone(memory_format=m.contiguous_format),
                     lambda v, m: v.clone(memory_format=m.preserve_format)):
            ours = make(view(jg.arange(24.0).reshape(2, 3, 4)), jg)
            theirs = make(view(torch.arange(24.0).reshape(2, 3, 4)), torch)
            assert ours.stride() == theirs.stride() and ours.is_contiguous() == theirs.is_contiguous()
    for op in (lambda x, m: m.cat([x, x]), lambda x, m: m.stack([x, x], 2), lambda x, m: x.softmax(-1),
               lambda x, m: x.log_softmax(0), lambda x, m: x.cumsum(1)):   # row-major, as PyTorch's
        ours, theirs = op(jg.arange(6.0).reshape(3, 2).T, jg), op(torch.arange(6.0).reshape(3, 2).T, torch)
        assert ours.stride() == theirs.stride()
    for array in (np.broadcast_to(np.arange(4.0), (3, 4)), np.asfortranarray(np.ones((2, 3)))):
        assert jg.tensor(array).stride() == torch.tensor(array).stride()
    x = jg.arange(24.0, requires_grad=True)
    made = x.reshape(2, 3, 4).transpose(1, 2).contiguous()
    assert made.grad_fn.name() == "CloneBackward0"
    flat = made.view(2, 12)
    flat.backward(jg.arange(24.0).reshape(2, 12))
    expected = torch.arange(24.0).reshape(2, 12).view(2, 4, 3).transpose(1, 2).reshape(-1)
    np.testing.assert_array_equal(x.grad.numpy(), expected.numpy())


def test_non_differentiable_answers_are_pytorchs():
    t = np.array([3, 1, 3, 2, 1])
    check_against_torch(lambda m, x: m.unique(x, return_inverse=True, return_counts=True), [t], differentiable=False)
    check_against_torch(lambda m, x: x.unique(), [t], differentiable=False)
    check_against_torch(lambda m, x: m.unique(x.reshape(-1, 1), dim=0), [t], differentiable=False)
    bounds = np.array([1.0, 3.0, 5.0])
    points = np.array([0.0, 1.0, 2.0, 5.0, 6.0])
    for right in (False, True):
        check_against_torch(lambda m, b, x, r=right: m.bucketize(x, b, right=r), [bounds, points], differentiable=False)
        check_against_torch(lambda m, b, x, r=right: m.searchsorted(b, x, right=r), [bounds, points],
                            differentiable=False)
    check_against_torch(lambda m, b, x: m.searchsorted(b, x, side="right", out_int32=True),
                        [np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[2.0], [3.5]])], differentiable=False)
    assert jg.bucketize(3, jg.tensor(bounds)).tolist() == 1 and jg.nonzero(jg.tensor(3.0)).shape == (1, 0)
    check_against_torch(lambda m, x: m.repeat_interleave(x), [np.array([2, 0, 1])], differentiable=False)
    for reduce in ("prod", "mean", "amax"):
        check_against_torch(lambda m, x, r=reduce: x.to(m.int32).scatter_reduce(1, m.tensor([[0, 0, 1], [2, 2, 2]]),
                                                                                x.to(m.int32) + 1, r),
                            [np.array([[3, -2, 5], [7, 1, -4]])], differentiable=False)


def test_heaviside_has_no_gradient_and_meshgrid_warns_without_indexing():
    x = jg.tensor([0.0, -1.0, 2.0], requires_grad=True)
    assert not jg.heaviside(x, jg.tensor(0.5)).requires_grad
    with pytest.warns(UserWarning, match="indexing"):
        jg.meshgrid(jg.ones(2), jg.ones(3))


def test_random_fills_draw_from_the_generator_and_repeat_with_the_seed():
    def draws():
        return (jg.empty(200).bernoulli_(0.3), jg.empty(200, dtype=jg.float64).exponential_(2.0),
                jg.empty(200, dtype=jg.int64).random_(3, 7), jg.empty(200, dtype=jg.int32).random_(5),
                jg.empty(200).random_(), jg.empty(200).bernoulli_(jg.full((200,), 0.9)),
                jg.bernoulli(jg.linspace(0, 1, 200, dtype=jg.float64)))
    jg.manual_seed(3)
    first = draws()
    jg.manual_seed(3)
    again = draws()
    assert all(jg.equal(a, b) for a, b in zip(first, again))
    coins, waits, dice, small, floats, likely, ramp = first
    assert set(coins.unique().tolist()) == {0.0, 1.0} and 0.15 < coins.mean().item() < 0.45
    assert waits.min().item() >= 0 and 0.35 < waits.mean().item() < 0.65   # mean 1 / lambda
    assert set(dice.unique().tolist()) == {3, 4, 5, 6} and dice.dtype == jg.int64
    assert 0 <= small.min().item() and small.max().item() <= 4 and small.dtype == jg.int32
    assert floats.min().item() >= 0 and floats.max().item() < 2 ** 24 and (floats == floats.floor()).all()
    assert likely.mean().item() > 0.75
    assert ramp.dtype == jg.float64 and ramp[0].item() == 0 and ramp[-1].item() == 1 and 0.3 < ramp.mean().item() < 0.7


def test_value_dependent_ops_refuse_inside_a_trace():
    for fn in (lambda x: x.nonzero(), lambda x: x.unique(), lambda x: x.cummax(0).values,
               lambda x: jg.bucketize(x, jg.tensor([0.0])), lambda x: x.reshape(1, 2).expand(2, 2).det(),
               lambda x: x.lgamma()):
        with pytest.raises(RuntimeError, match="compiled"):
            jg.fx.trace(fn, jg.tensor([1.0, -2.0]))


# ---- errors -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, error, match", [
    (lambda: jg.isclose(jg.tensor([1]), jg.tensor([1.0])), RuntimeError, "Long did not match Float"),
    (lambda: jg.isclose(jg.ones(1), jg.ones(1), rtol=-1), RuntimeError, "rtol must be greater"),
    (lambda: jg.masked_select(jg.ones(2), jg.tensor([1, 0])), RuntimeError, "expected BoolTensor"),
    (lambda: jg.heaviside(jg.ones(2), jg.tensor([1])), RuntimeError, "different dtypes"),
    (lambda: jg.addcdiv(jg.ones(2), jg.tensor([1]), jg.tensor([2])), RuntimeError, "Integer division"),
    (lambda: jg.logaddexp(jg.tensor([1]), jg.tensor([2])), RuntimeError, "floating"),
    (lambda: jg.hypot(jg.tensor([1]), jg.tensor([2])), NotImplementedError, "hypot_cpu"),
    (lambda: jg.ones(2).float_power_(2), RuntimeError, "requires dtype Double"),
    (lambda: jg.meshgrid(jg.ones(2, 2), indexing="ij"), RuntimeError, "0D or 1D"),
    (lambda: jg.meshgrid(jg.ones(2), indexing="yx"), RuntimeError, "indexing must be"),
    (lambda: jg.block_diag(jg.ones(1, 1, 1)), RuntimeError, "2 or fewer dimensions"),
    (lambda: jg.ones(3).fliplr(), RuntimeError, ">= 2-d"),
    (lambda: jg.ones(2, 2).rot90(1, [0, 0]), RuntimeError, "rotation dims to be different"),
    (lambda: jg.ones(2, 3).hsplit(2), RuntimeError, "not divisible"),
    (lambda: jg.ones(3).vsplit(2), RuntimeError, "at least 2 dimension"),
    (lambda: jg.take(jg.ones(3), jg.tensor([0.0])), RuntimeError, "int64"),
    (lambda: jg.dot(jg.ones(3), jg.ones(2)), RuntimeError, "inconsistent tensor size"),
    (lambda: jg.dot(jg.ones(3), jg.ones(3, dtype=jg.float64)), RuntimeError, "same dtype"),
    (lambda: jg.dot(jg.ones(3, 1), jg.ones(3)), RuntimeError, "1D tensors expected"),
    (lambda: jg.ones(3).trace(), RuntimeError, "expected a matrix"),
    (lambda: jg.cross(jg.ones(2, 4), jg.ones(2, 4), dim=1), RuntimeError, "must have length 3"),
    (lambda: jg.cdist(jg.ones(2, 3), jg.ones(2, 4)), RuntimeError, "same number of columns"),
    (lambda: jg.tensordot(jg.ones(2, 3), jg.ones(2, 3), ([1], [0])), RuntimeError, "contracted dimensions"),
    (lambda: jg.nanmean(jg.tensor([1, 2])), RuntimeError, "floating point"),
    (lambda: jg.ones(3).kthvalue(4), RuntimeError, "out of range"),
    (lambda: jg.bucketize(jg.ones(2), jg.ones(2, 2)), RuntimeError, "1 dimension"),
    (lambda: jg.ones(3).index_add(0, jg.tensor([0, 1]), jg.ones(3)), RuntimeError, "Number of indices"),
    (lambda: jg.ones(3).index_add(0, jg.tensor([0]), jg.ones(1, dtype=jg.float64)), RuntimeError, "same scalar"),
    (lambda: jg.ones(3).index_copy(0, jg.tensor([1, 1]), jg.ones(2)), RuntimeError, "repeats"),
    (lambda: jg.ones(3).scatter_reduce(0, jg.tensor([0]), jg.ones(1), "max"), RuntimeError, "reduce argument"),
    (lambda: jg.inverse(jg.zeros(2, 2)), RuntimeError, "singular"),
    (lambda: jg.inverse(jg.ones(2, 3)), RuntimeError, "square matrices"),
    (lambda: jg.det(jg.ones(2, 2, dtype=jg.int64)), RuntimeError, "floating point"),
    (lambda: jg.det(jg.zeros(2, 2, requires_grad=True)).backward(), RuntimeError, "singular matrix"),
    (lambda: jg.polygamma(-1, jg.ones(2)), RuntimeError, "negative n"),
    (lambda: jg.tensor([True]).erfc(), RuntimeError, "Bool"),
    (lambda: jg.ones(3).bernoulli_(1.5), RuntimeError, r"p to be in \[0, 1\]"),
    (lambda: jg.bernoulli(jg.tensor([1.5])), RuntimeError, "p_in <= 1"),
    (lambda: jg.ones(3).exponential_(0.0), RuntimeError, "lambda > 0"),
    (lambda: jg.ones(3).random_(5, 5), RuntimeError, "'from' to be less than 'to'"),
])
def test_bad_input_is_refused_with_a_clear_error(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ---- compiled ---------------------------------------------------------------------------------------------
def new_composites(x, y):
    """The new elementwise composites and a few joins in one loss, inputs kept in each op's domain."""
    m = jg if isinstance(x, jg.Tensor) else torch
    p = (y - 0.1) * 0.5 + 0.05   # in (0, 1)
    parts = [m.hypot(x, y), m.logaddexp(x, y), m.xlogy(x, y), m.sinc(x), m.copysign(x, y - 0.6), m.fmax(x, y),
             m.fmin(x, y), m.addcmul(x, x, y, value=0.5), m.addcdiv(x, x, y + 1.0), m.logit(p), m.deg2rad(x),
             m.rad2deg(y), m.float_power(y, 2.0), m.absolute(x), m.negative(y), m.true_divide(x, y)]
    joined = m.hstack(parts).sum() + (m.diff(m.hstack([x, y]), prepend=x[:1]) * y[0]).sum()
    return joined + m.kron(x[:2], y[:2]).sum() + m.cross(x[:3], y[:3], dim=0).sum()


def test_one_compiled_function_of_the_new_composites_matches_eager():
    """One compile: values and gradients against eager and against PyTorch, no graph left to run eagerly."""
    assert_compiled_eager_and_torch_agree(new_composites, values((5,), seed=10),
                                          values((5,), low=0.2, high=1.0, seed=11), torch)
