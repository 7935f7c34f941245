"""Forward-mode AD, generated from ``op_samples.SAMPLES`` like the gradient tests: for every differentiable
registry op, the tangent ``unpack_dual(f(make_dual(x, v))).tangent`` equals the central finite difference
along ``v`` (float64), ``J @ v`` with ``J`` built row by row with reverse mode, and PyTorch's
``torch.autograd.forward_ad`` where PyTorch is installed; reverse mode through a tangent matches finite
differences of the tangent. Then the API: levels, ``make_dual``/``unpack_dual`` and their errors."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.autograd.forward_ad as fwAD
from helpers import assert_close, numerical_gradient
from jitgrad.ops.registry import REGISTRY, defop
from op_samples import SAMPLES, Sample

GRAD_SAMPLES = [s for s in SAMPLES if s.differentiable]


def by_id(samples):
    return pytest.mark.parametrize("sample", samples, ids=[s.id for s in samples])


def seed_of(sample: Sample) -> int:
    return zlib.crc32(b"jvp-" + sample.id.encode())


def float_positions(arrays) -> list[int]:
    return [i for i, a in enumerate(arrays) if a.dtype.kind == "f"]


def tangents_for(sample: Sample, arrays) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(seed_of(sample) + 1)
    return {i: rng.uniform(-1.0, 1.0, size=arrays[i].shape) for i in float_positions(arrays)}


def forward_jvp(sample: Sample, arrays, tangents: dict[int, np.ndarray], requires_grad: bool = False):
    """The inputs, the output and its tangent, with the inputs in ``tangents`` made dual. A tangent
    of None (the output does not depend on the dual inputs: ``expand_as``'s second) reads as zeros."""
    inputs = [jg.tensor(a, requires_grad=requires_grad and a.dtype.kind == "f") for a in arrays]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x, jg.tensor(tangents[i])) if i in tangents else x for i, x in enumerate(inputs)]
        out = sample.fn(*duals)
        primal, tangent = fwAD.unpack_dual(out)
    if tangent is None:
        assert len(tangents) < len(float_positions(arrays)), f"{sample.id}: the output got no tangent"
        tangent = jg.zeros_like(out)
    assert tangent.shape == out.shape and tangent.dtype == out.dtype, \
        f"{sample.id}: tangent {tangent.dtype}{list(tangent.shape)} for output {out.dtype}{list(out.shape)}"
    return inputs, primal, tangent


def value_of(sample: Sample, arrays) -> np.ndarray:
    return sample.fn(*[jg.tensor(a) for a in arrays]).detach().numpy()


# ---- coverage -----------------------------------------------------------------------------------------
def test_every_differentiable_registry_op_has_a_jvp_rule_and_a_sample():
    missing = sorted(name for name, op in REGISTRY.items() if op.differentiable and op.jvp is None)
    assert not missing, f"differentiable ops without a jvp= rule in their defop: {missing}"
    unsampled = sorted(name for name, op in REGISTRY.items()
                       if op.differentiable and not any(s.op == name for s in GRAD_SAMPLES))
    assert not unsampled, f"differentiable ops without a gradient sample: {unsampled}"


# ---- generated from the samples -----------------------------------------------------------------------
@by_id(GRAD_SAMPLES)
def test_jvp_matches_finite_differences(sample):
    arrays = sample.arrays(seed_of(sample))
    v = tangents_for(sample, arrays)
    _, primal, tangent = forward_jvp(sample, arrays, v)
    assert_close(primal.detach().numpy(), value_of(sample, arrays), rtol=0, atol=0, what=f"{sample.id} primal")

    def moved(sign):
        return value_of(sample, [a + sign * sample.eps * v[i] if i in v else a for i, a in enumerate(arrays)])
    expected = (moved(1.0) - moved(-1.0)) / (2.0 * sample.eps)
    assert_close(tangent.detach().numpy(), expected, rtol=1e-5, atol=sample.atol, what=sample.id)


def reverse_jacobians(sample: Sample, arrays) -> list[np.ndarray]:
    """For each float input, d output / d input as a matrix, one row per output element (reverse mode)."""
    inputs = [jg.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    wrt = [inputs[i] for i in float_positions(arrays)]
    out = sample.fn(*inputs)
    rows: list[list[np.ndarray]] = [[] for _ in wrt]
    for k in range(out.numel()):
        seed = np.zeros(out.numel())
        seed[k] = 1.0
        grads = jg.autograd.grad(out, wrt, grad_outputs=jg.tensor(seed.reshape(out.shape), dtype=out.dtype),
                                 retain_graph=True, allow_unused=True)
        for row, g, t in zip(rows, grads, wrt):
            row.append(np.zeros(t.numel()) if g is None else g.numpy().reshape(-1))
    return [np.array(r).reshape(out.numel(), t.numel()) for r, t in zip(rows, wrt)]


@by_id(GRAD_SAMPLES)
def test_jvp_matches_reverse_mode_jacobian(sample):
    """All float inputs dual, then each alone (the others without a tangent: the rules' None path)."""
    arrays = sample.arrays(seed_of(sample))
    v = tangents_for(sample, arrays)
    positions = float_positions(arrays)
    jacobians = reverse_jacobians(sample, arrays)
    shape = value_of(sample, arrays).shape
    _, _, tangent = forward_jvp(sample, arrays, v)
    rtol = 1e-10 if sample.atol <= 1e-6 else 1e-6  # to_dtype's samples compute in float32
    expected = sum(j @ v[i].reshape(-1) for j, i in zip(jacobians, positions))
    assert_close(tangent.detach().numpy(), np.reshape(expected, shape), rtol=rtol, atol=1e-12, what=sample.id)
    if len(positions) > 1:
        for j, i in zip(jacobians, positions):
            _, _, tangent = forward_jvp(sample, arrays, {i: v[i]})
            assert_close(tangent.detach().numpy(), (j @ v[i].reshape(-1)).reshape(shape), rtol=rtol,
                         atol=1e-12, what=f"{sample.id}, only input {i} dual")


@by_id(GRAD_SAMPLES)
def test_jvp_matches_torch(sample):
    torch = pytest.importorskip("torch")
    arrays = sample.arrays(seed_of(sample))
    v = tangents_for(sample, arrays)
    _, _, tangent = forward_jvp(sample, arrays, v)
    with torch.autograd.forward_ad.dual_level():
        inputs = [torch.autograd.forward_ad.make_dual(torch.tensor(a), torch.tensor(v[i])) if i in v
                  else torch.tensor(a) for i, a in enumerate(arrays)]
        expected = torch.autograd.forward_ad.unpack_dual(sample.torch_callable(*inputs)).tangent
    rtol = 1e-7 if sample.atol <= 1e-6 else 1e-6
    assert_close(tangent.detach().numpy(), expected.numpy(force=True), rtol=rtol, atol=1e-10, what=sample.id)


@by_id(GRAD_SAMPLES)
def test_reverse_mode_through_jvp_matches_finite_differences(sample):
    """JVP rules are jitgrad ops, so ``grad`` of ``sum(tangent * w)`` with respect to the primals works
    (reverse over forward, how a Hessian-vector product is computed) and matches finite differences."""
    arrays = sample.arrays(seed_of(sample))
    v = tangents_for(sample, arrays)
    positions = float_positions(arrays)
    shape = value_of(sample, arrays).shape
    w = np.random.default_rng(seed_of(sample) + 2).uniform(-1.5, 1.5, size=shape)

    def weighted_tangent(a):
        return float((forward_jvp(sample, a, v)[2].detach().numpy() * w).sum())

    inputs, _, tangent = forward_jvp(sample, arrays, v, requires_grad=True)
    wrt = [inputs[i] for i in positions]
    total = (tangent * jg.tensor(w)).sum()
    if total.requires_grad:
        grads = jg.autograd.grad(total, wrt, allow_unused=True)
        actual = [np.zeros(t.shape) if g is None else g.numpy() for g, t in zip(grads, wrt)]
    else:  # the tangent does not depend on the primals (a linear op)
        actual = [np.zeros(t.shape) for t in wrt]
    expected = numerical_gradient(weighted_tangent, arrays, positions, sample.eps)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert_close(a, e, rtol=1e-5, atol=max(sample.atol, 1e-5), what=f"{sample.id} input {i}")


# ---- levels and dual tensors --------------------------------------------------------------------------
def test_make_dual_and_unpack_dual():
    x = jg.tensor([1.0, 2.0, 3.0])
    v = jg.tensor([1.0, 0.0, -1.0])
    with fwAD.dual_level() as level:
        assert level == 0
        dual = fwAD.make_dual(x, v)
        unpacked = fwAD.unpack_dual(dual)
        assert isinstance(unpacked, tuple) and unpacked._fields == ("primal", "tangent")
        assert unpacked.tangent is v and unpacked.primal.tolist() == [1.0, 2.0, 3.0]
        assert fwAD.unpack_dual(unpacked.primal).tangent is None
        assert fwAD.unpack_dual(x) == (x, None)
        y = (dual * dual).sum()
        assert fwAD.unpack_dual(y).tangent.item() == pytest.approx(2 * (1.0 - 3.0))
    assert fwAD.unpack_dual(dual) == (dual, None)  # the level is gone and its tangents with it
    assert fwAD.state.level is None


def test_make_dual_outside_a_level_is_refused():
    with pytest.raises(RuntimeError, match="Trying to create a dual Tensor for forward AD but no level exists"):
        fwAD.make_dual(jg.tensor([1.0]), jg.tensor([1.0]))


def test_nested_levels_are_refused_and_the_outer_one_survives():
    with fwAD.dual_level():
        dual = fwAD.make_dual(jg.tensor([1.0]), jg.tensor([2.0]))
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            with fwAD.dual_level():
                pass
        assert fwAD.unpack_dual(dual * 3.0).tangent.tolist() == [6.0]


def test_level_closes_on_error():
    with pytest.raises(ValueError, match="boom"):
        with fwAD.dual_level():
            fwAD.make_dual(jg.tensor([1.0]), jg.tensor([2.0]))
            raise ValueError("boom")
    assert fwAD.state.level is None


def test_make_dual_checks_its_arguments():
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match=r"Tensor is of size \[3\] while the given forward gradient is of "
                                                r"size \[2\]"):
            fwAD.make_dual(jg.tensor([1.0, 2.0, 3.0]), jg.tensor([1.0, 2.0]))
        with pytest.raises(ValueError, match="Expected primal to be floating point"):
            fwAD.make_dual(jg.tensor([1, 2]), jg.tensor([1.0, 2.0]))
        dual = fwAD.make_dual(jg.tensor([1.0]), jg.tensor([1.0]))
        with pytest.raises(RuntimeError, match="already has a forward gradient at the same level 0"):
            fwAD.make_dual(dual, jg.tensor([1.0]))
        with pytest.raises(RuntimeError, match="level 1 is not the open dual level"):
            fwAD.make_dual(jg.tensor([1.0]), jg.tensor([1.0]), level=1)
        cast = fwAD.make_dual(jg.tensor([1.0], dtype=jg.float32), jg.tensor([1.0], dtype=jg.float64))
        assert fwAD.unpack_dual(cast).tangent.dtype == jg.float32


def test_tangents_are_broadcast_and_promoted_to_the_output():
    with fwAD.dual_level():
        x = fwAD.make_dual(jg.ones(3, 1, dtype=jg.float32), jg.full((3, 1), 2.0, dtype=jg.float32))
        y = x + jg.zeros(4, dtype=jg.float64)
        tangent = fwAD.unpack_dual(y).tangent
    assert tangent.shape == (3, 4) and tangent.dtype == jg.float64
    assert (tangent.numpy() == 2.0).all()


def test_tangents_flow_under_no_grad_and_skip_non_differentiable_outputs():
    with fwAD.dual_level():
        x = fwAD.make_dual(jg.tensor([[1.0, 5.0], [4.0, 2.0]]), jg.tensor([[1.0, 2.0], [3.0, 4.0]]))
        with jg.no_grad():
            assert fwAD.unpack_dual(x.exp()).tangent is not None
        assert fwAD.unpack_dual(x > 2.0).tangent is None
        assert fwAD.unpack_dual(x.argmax(1)).tangent is None
        values, indices = x.max(1)
        assert fwAD.unpack_dual(values).tangent.tolist() == [2.0, 3.0]
        assert fwAD.unpack_dual(indices).tangent is None


def test_rule_ops_compute_no_tangents_of_their_own():
    """A tangent is a plain tensor: the rule runs with propagation suspended."""
    with fwAD.dual_level():
        y = fwAD.make_dual(jg.tensor([0.5]), jg.tensor([1.0])).sin()
        tangent = fwAD.unpack_dual(y).tangent
        assert fwAD.unpack_dual(tangent).tangent is None


def test_a_differentiable_op_without_a_jvp_rule_refuses():
    op = defop("cube_without_jvp", ("self",), lambda a: a * a * a, "CubeWithoutJvpBackward0",
               self=lambda grad, self: grad * 3.0 * self * self)
    try:
        assert op(jg.tensor([2.0])).tolist() == [8.0]  # fine without a level
        with fwAD.dual_level():
            assert op(jg.tensor([2.0])).tolist() == [8.0]  # and without a dual input
            with pytest.raises(NotImplementedError, match="forward AD with cube_without_jvp"):
                op(fwAD.make_dual(jg.tensor([2.0]), jg.tensor([1.0])))
    finally:
        del REGISTRY["cube_without_jvp"]


def test_a_jvp_rule_reading_an_unknown_name_says_so():
    op = defop("scaled_example", ("self",), lambda a, k: a * k, "ScaledExampleBackward0",
               self=lambda grad, k: grad * k, jvp=lambda self_t, factor: self_t * factor)
    try:
        with fwAD.dual_level():
            with pytest.raises(TypeError, match="reads 'factor'"):
                op(fwAD.make_dual(jg.tensor([2.0]), jg.tensor([1.0])), k=3.0)
    finally:
        del REGISTRY["scaled_example"]


def test_make_dual_keeps_the_reverse_mode_link():
    x = jg.tensor([1.0, 2.0], requires_grad=True)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, jg.tensor([1.0, 1.0]))
        assert type(dual.grad_fn).__name__ == "ViewBackward0"
        (dual * dual).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_hessian_vector_product_by_reverse_over_forward():
    x0 = np.array([0.3, -0.7, 1.1])
    v = np.array([1.0, 2.0, -1.0])
    x = jg.tensor(x0, requires_grad=True)
    with fwAD.dual_level():
        y = (fwAD.make_dual(x, jg.tensor(v)).sin() * 2.0).exp().sum()
        jvp = fwAD.unpack_dual(y).tangent
    (hvp,) = jg.autograd.grad(jvp, x)
    # f = sum exp(2 sin x): diagonal Hessian, f'' = exp(2 sin x) (4 cos^2 x - 2 sin x)
    expected = np.exp(2 * np.sin(x0)) * (4 * np.cos(x0) ** 2 - 2 * np.sin(x0)) * v
    assert_close(hvp.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_tangent_entries_go_with_their_tensors():
    with fwAD.dual_level():
        x = fwAD.make_dual(jg.tensor([1.0]), jg.tensor([1.0]))
        for _ in range(50):
            x.exp()
        assert len(fwAD.state.level._tangents) == 1  # internal on purpose: no public view of a level's store


def test_forward_over_reverse_through_a_formula_reading_result():
    x = jg.tensor([0.5, 1.0], requires_grad=True)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, jg.tensor([1.0, 1.0]))
        (g,) = jg.autograd.grad(dual.exp().sum(), dual, create_graph=True)  # g = exp(x), read from result
        tangent = fwAD.unpack_dual(g).tangent
    assert tangent is not None and np.allclose(tangent.detach().numpy(), np.exp([0.5, 1.0]))


def test_outputs_made_outside_the_registry_get_tangents_through_run_jvp():
    """How a custom Function's ``jvp`` plugs in: ``input_tangents`` then ``run_jvp``."""
    x = jg.tensor([1.0, 2.0])
    assert fwAD.input_tangents((x,)) is None  # no level
    with fwAD.dual_level():
        assert fwAD.input_tangents((x, 3.0)) is None  # no input has a tangent
        dual = fwAD.make_dual(x, jg.tensor([1.0, -1.0]))
        tangents = fwAD.input_tangents((3.0, dual))
        assert tangents[0] is None and tangents[1].tolist() == [1.0, -1.0]
        out = jg.tensor([[0.0, 0.0], [0.0, 0.0]])
        fwAD.run_jvp(lambda: tangents[1] * 2.0, (out,))  # broadcast to the output's shape
        assert fwAD.unpack_dual(out).tangent.tolist() == [[2.0, -2.0], [2.0, -2.0]]


def test_carry_tangent():
    with fwAD.dual_level():
        source = fwAD.make_dual(jg.tensor([1.0]), jg.tensor([5.0]))
        target = fwAD.make_dual(jg.tensor([1.0]), jg.tensor([7.0]))
        fwAD.carry_tangent(source, target)
        assert fwAD.unpack_dual(target).tangent.tolist() == [5.0]
        fwAD.carry_tangent(jg.tensor([1.0]), target)
        assert fwAD.unpack_dual(target).tangent is None


def test_inplace_op_updates_the_tangent():
    with fwAD.dual_level():
        x = fwAD.make_dual(jg.tensor([1.0, 2.0]), jg.tensor([1.0, 1.0]))
        x.mul_(3.0)
        assert fwAD.unpack_dual(x).tangent.tolist() == [3.0, 3.0]


def test_dual_level_decorates():
    @fwAD.dual_level()
    def directional_derivative(x, v):
        return fwAD.unpack_dual((fwAD.make_dual(x, v) ** 2).sum()).tangent

    assert directional_derivative(jg.tensor([1.0, 2.0]), jg.tensor([1.0, 1.0])).item() == 6.0
    assert fwAD.state.level is None
