"""``jitgrad.func.vmap`` and ``functional_call`` against ``torch.func``: in/out dims over trees, ``None``
dims, per-sample gradients (``vmap(grad(...))`` through ``functional_call``), randomness modes, the
module restored after a call (and after an error), tied weights, strict keys, and PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.func as jf

torch = pytest.importorskip("torch")

from test_transforms_against_torch import JG, TORCH, assert_same_tree  # noqa: E402

A = np.arange(12.0).reshape(3, 4) / 7 - 0.5
B = np.linspace(-1, 1, 4)
C = np.arange(6.0).reshape(2, 3) / 5

VMAPS = {
    "in0_out0": lambda L: L.F.vmap(lambda a, b: (a * b).sin())(L.t(A), L.t(np.tile(B, (3, 1)))),
    "in_none": lambda L: L.F.vmap(lambda a, b: a @ b, in_dims=(0, None))(L.t(A), L.t(B)),
    "in1": lambda L: L.F.vmap(lambda a: a.sum(), in_dims=1)(L.t(A)),
    "in_negative": lambda L: L.F.vmap(lambda a: a * 2, in_dims=-1)(L.t(C)),
    "out1": lambda L: L.F.vmap(lambda a: a.exp(), out_dims=1)(L.t(C)),
    "tree_in_dims": lambda L: L.F.vmap(lambda d: d["x"] + d["y"], in_dims=({"x": 0, "y": 1},))(
        {"x": L.t(A[:, :3]), "y": L.t(A[:3, :3])}),
    "tree_out": lambda L: L.F.vmap(lambda a: {"s": a.sum(), "p": (a * a, a.max())}, out_dims={"s": 0, "p": (1, 0)})(
        L.t(C)),
    "nested": lambda L: L.F.vmap(L.F.vmap(lambda a, b: a * b, in_dims=(0, None)), in_dims=(None, 0))(L.t(B), L.t(C)),
    "kwargs_not_mapped": lambda L: L.F.vmap(lambda a, scale=1.0: a * scale)(L.t(C), scale=L.t(np.array(3.0))),
    "vmap_jacrev": lambda L: L.F.vmap(L.F.jacrev(lambda x: x.sin() * x.sum()))(L.t(C)),
    "out_dims_none": lambda L: L.F.vmap(lambda a, b: (a * b, b.exp()), in_dims=(0, None), out_dims=(0, None))(
        L.t(C), L.t(B[:3])),
    "grad_of_vmap": lambda L: L.F.grad(lambda x: L.F.vmap(lambda r: (r.sin() * r).sum())(x).sum())(L.t(C)),
}


@pytest.mark.parametrize("case", VMAPS)
def test_vmap_matches_torch(case: str) -> None:
    assert_same_tree(VMAPS[case](JG), VMAPS[case](TORCH))


def per_sample_gradients(L):
    """The idiom of torch.func's tutorial: per-sample gradients of a model's loss."""
    L.m.manual_seed(0)
    model = L.m.nn.Sequential(L.m.nn.Linear(3, 4), L.m.nn.Tanh(), L.m.nn.Linear(4, 1)).double()
    with L.m.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(L.t(np.cos(np.arange(p.numel()) + i).reshape(tuple(p.shape))))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, x, y):
        out = L.F.functional_call(model, p, (x.unsqueeze(0),))
        return ((out.squeeze() - y) ** 2)

    return L.F.vmap(L.F.grad(loss), in_dims=(None, 0, 0))(params, L.t(A[:, :3]), L.t(B[:3]))


def test_per_sample_gradients_match_torch() -> None:
    assert_same_tree(per_sample_gradients(JG), per_sample_gradients(TORCH))


VMAP_ERRORS = {
    "batch_sizes": lambda L: L.F.vmap(lambda a, b: a + b)(L.t(B[:3]), L.t(B)),
    "in_dims_structure": lambda L: L.F.vmap(lambda a: a, in_dims=(0, 0))(L.t(B)),
    "in_dim_range": lambda L: L.F.vmap(lambda a: a, in_dims=1)(L.t(B)),
    "in_dims_none": lambda L: L.F.vmap(lambda a: a, in_dims=None)(L.t(B)),
    "random_in_error_mode": lambda L: L.F.vmap(lambda a: a + L.m.rand(()))(L.t(B)),
    "randomness_value": lambda L: L.F.vmap(lambda a: a, randomness="x")(L.t(B)),
    "number_output": lambda L: L.F.vmap(lambda a: 3)(L.t(B)),
    "batched_output_at_out_dim_none": lambda L: L.F.vmap(lambda a: a * 2, out_dims=None)(L.t(B)),
}


@pytest.mark.parametrize("case", VMAP_ERRORS)
def test_vmap_errors_are_torchs(case: str) -> None:
    with pytest.raises(Exception) as want:
        VMAP_ERRORS[case](TORCH)
    with pytest.raises(type(want.value)) as got:
        VMAP_ERRORS[case](JG)
    if case == "in_dims_structure":  # PyTorch prints its TreeSpec objects; jitgrad writes tuple(*, *)
        assert str(got.value).startswith(str(want.value).split(" TreeSpec")[0])
    else:
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("randomness", ["same", "different"])
def test_vmap_randomness(randomness: str) -> None:
    jg.manual_seed(0)
    rows = jf.vmap(lambda a: a + jg.rand(3), randomness=randomness)(jg.zeros(4, 3)).numpy()
    assert (np.ptp(rows, axis=0) == 0).all() == (randomness == "same")


def test_vmap_compiles_and_its_random_modes_run_as_eager() -> None:
    """Under ``jitgrad.compile`` vmap's bookkeeping of the generator is no tensor the trace sees: a
    function mapping ``grad`` compiles (it ran eagerly, blaming a tensor it read), a draw in the
    default mode raises as eager does, and ``different`` draws each slice's own numbers as eager."""
    import warnings

    from jitgrad.compile import CompileWarning
    per_sample = jg.compile(jf.vmap(jf.grad(lambda r: (r.sin() * r).sum())), cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for rows in (A, A[::-1] * 2):
            assert np.array_equal(per_sample(jg.tensor(rows)).numpy(), (np.sin(rows) + rows * np.cos(rows)))
    drawing = jg.compile(jf.vmap(lambda a: a + jg.rand(3)), cache=False)
    with pytest.raises(RuntimeError, match="vmap: called random operation while in randomness error mode"):
        drawing(jg.zeros(4, 3))
    different = jf.vmap(lambda a: a + jg.rand(3), randomness="different")
    compiled = jg.compile(different, cache=False)
    for seed in (0, 1):
        jg.manual_seed(seed)
        expected = different(jg.zeros(4, 3)).numpy()
        jg.manual_seed(seed)
        assert np.array_equal(compiled(jg.zeros(4, 3)).numpy(), expected)


def linear_with_buffer():
    lin = jg.nn.Linear(3, 2)
    lin.register_buffer("offset", jg.ones(2))
    lin.forward = lambda x: x @ lin.weight.T + lin.bias + lin.offset
    return lin


def test_functional_call_uses_the_given_tensors_and_restores_the_module() -> None:
    lin = linear_with_buffer()
    weight, bias = lin.weight, lin.bias
    w2, b2, o2 = jg.randn(2, 3), jg.randn(2), jg.zeros(2)
    x = jg.randn(5, 3)
    got = jf.functional_call(lin, ({"weight": w2, "bias": b2}, {"offset": o2}), (x,))
    np.testing.assert_allclose(got.numpy(), (x @ w2.T + b2).numpy(), rtol=1e-6)
    assert lin.weight is weight and lin.bias is bias and (lin.offset.numpy() == 1).all()
    lin.forward = lambda x: 1 / 0
    with pytest.raises(ZeroDivisionError):
        jf.functional_call(lin, {"weight": w2}, x)
    assert lin.weight is weight
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]


def test_functional_call_ties_shared_weights() -> None:
    net = jg.nn.Sequential(jg.nn.Linear(2, 2, bias=False), jg.nn.Linear(2, 2, bias=False))
    net[1].weight = net[0].weight
    w = jg.eye(2) * 3
    x = jg.ones(1, 2)
    np.testing.assert_allclose(jf.functional_call(net, {"0.weight": w}, (x,)).numpy(), [[9.0, 9.0]])
    np.testing.assert_allclose(jf.functional_call(net, {"0.weight": w}, (x,), tie_weights=False).detach().numpy(),
                               (x @ w.T @ net[1].weight.T).detach().numpy(), rtol=1e-6)


FC_ERRORS = {
    "strict_unexpected": lambda L, lin, x: L.F.functional_call(lin, {"foo": x}, (x,), strict=True),
    "strict_missing": lambda L, lin, x: L.F.functional_call(lin, {"weight": lin.weight}, (x,), strict=True),
    "repeated_keys": lambda L, lin, x: L.F.functional_call(lin, ({"weight": x}, {"weight": x}), (x,)),
}


@pytest.mark.parametrize("case", FC_ERRORS)
def test_functional_call_errors_are_torchs(case: str) -> None:
    with pytest.raises(Exception) as want:
        FC_ERRORS[case](TORCH, torch.nn.Linear(2, 2), torch.ones(2))
    with pytest.raises(type(want.value)) as got:
        FC_ERRORS[case](JG, jg.nn.Linear(2, 2), jg.ones(2))
    assert str(got.value) == str(want.value)
