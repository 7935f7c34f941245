"""Ops that take ``dim`` at their edges, against PyTorch: a 0-d tensor takes dim 0 or -1 (its one
"dimension" is the whole of it), with or without keepdim. For every such op: the values, dtypes and
shapes, the node name, the gradient, the gradient of the gradient (where PyTorch's is differentiable),
the forward-mode tangent, and integer and bool inputs; where PyTorch refuses (narrow, split, cat...),
an exception of the same type that says why. op_samples.py has 0-d samples of these ops too, so that
gradcheck and the lowering tests cover them."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd import forward_ad as jg_forward_ad

torch = pytest.importorskip("torch")
torch_forward_ad = torch.autograd.forward_ad

VALUE = 0.7
TANGENT = 0.75


class Lib:
    """One library, so that a case is written once for both."""

    def __init__(self, module, functional, forward_ad) -> None:
        self.module, self.functional, self.forward_ad = module, functional, forward_ad
        self.autograd = module.autograd

    def tensor(self, value, dtype="float64", requires_grad=False):
        return self.module.tensor(value, dtype=getattr(self.module, dtype), requires_grad=requires_grad)


TORCH = Lib(torch, torch.nn.functional, torch_forward_ad)
JITGRAD = Lib(jg, jg.nn.functional, jg_forward_ad)


def flatten(result):
    return [t for r in result for t in flatten(r)] if isinstance(result, (tuple, list)) else [result]


def reduction(name: str, dim, keepdim: bool, **kwargs):
    """``name(x, dim, keepdim=keepdim, **kwargs)`` in either library; max/min's named tuple as a tuple."""
    def case(m, x):
        out = getattr(m, name)(x, dim, keepdim=keepdim, **kwargs)
        return tuple(out) if name in ("max", "min") else out
    return case


def reductions():
    cases = {}
    for dim in (0, -1):
        for keepdim in (False, True):
            tag = f"dim={dim},keepdim={keepdim}"
            for name in ("sum", "mean", "prod", "amax", "amin", "logsumexp", "all", "any", "argmax", "argmin",
                         "max", "min"):
                cases[f"{name}({tag})"] = reduction(name, dim, keepdim)
            for name in ("sum", "mean", "amax", "amin", "logsumexp"):
                cases[f"{name}(({dim},),keepdim={keepdim})"] = reduction(name, (dim,), keepdim)
            for name in ("var", "std"):
                for correction in (0, 1):
                    cases[f"{name}({tag},correction={correction})"] = reduction(name, dim, keepdim,
                                                                                correction=correction)
    return cases


def other_ops():
    cases = {}
    for dim in (0, -1):
        for name in ("softmax", "log_softmax"):
            cases[f"{name}({dim})"] = lambda m, x, name=name, dim=dim: getattr(m, name)(x, dim)
            cases[f"F.{name}({dim})"] = lambda m, x, name=name, dim=dim: \
                getattr(TORCH.functional if m is torch else JITGRAD.functional, name)(x, dim)
        cases.update({
            f"x.sum({dim})": lambda m, x, dim=dim: x.sum(dim),
            f"x.max({dim})": lambda m, x, dim=dim: tuple(x.max(dim)),
            f"squeeze({dim})": lambda m, x, dim=dim: m.squeeze(x, dim),
            f"unsqueeze({dim})": lambda m, x, dim=dim: m.unsqueeze(x, dim),
            f"flatten({dim},{dim})": lambda m, x, dim=dim: m.flatten(x, dim, dim),
            f"transpose({dim},{dim})": lambda m, x, dim=dim: m.transpose(x, dim, dim),
            f"transpose(0,{dim})": lambda m, x, dim=dim: m.transpose(x, 0, dim),
            f"stack([x,x],{dim})": lambda m, x, dim=dim: m.stack([x, x * 2], dim),
        })
    cases["sum(())"] = lambda m, x: m.sum(x, ())
    cases["var()"] = lambda m, x: m.var(x)
    cases["std(correction=0)"] = lambda m, x: m.std(x, correction=0)
    cases["argmax(keepdim=True)"] = lambda m, x: m.argmax(x, keepdim=True)
    return cases


CASES = {**reductions(), **other_ops()}
INTEGER_CASES = [name for name in CASES if not name.startswith(("softmax", "log_softmax", "F.", "x.softmax",
                                                                  "mean", "var", "std", "logsumexp"))]


def run(lib: Lib, case, value, dtype: str) -> dict:
    """What one library does with ``case`` on a 0-d tensor: values, node names, gradients of first
    and second order, tangents."""
    floating = dtype.startswith("float")
    x = lib.tensor(value, dtype, requires_grad=floating)
    outputs = flatten(case(lib.module, x))
    found = {"values": [(tuple(o.shape), str(o.dtype).split(".")[-1], o.detach().numpy()) for o in outputs],
             "nodes": [None if o.grad_fn is None else type(o.grad_fn).__name__ for o in outputs]}
    differentiable = [o for o in outputs if o.requires_grad]
    if differentiable:
        loss = sum((o * (1.5 + i)).sum() for i, o in enumerate(differentiable))
        (grad,) = lib.autograd.grad(loss, x, create_graph=True)
        found["grad"] = grad.detach().numpy()
        if grad.requires_grad:
            (second,) = lib.autograd.grad((grad * grad).sum(), x, allow_unused=True)
            found["second"] = np.zeros(()) if second is None else second.numpy()
    if floating:
        with lib.forward_ad.dual_level():
            dual = lib.forward_ad.make_dual(lib.tensor(value, dtype), lib.tensor(TANGENT, dtype))
            tangents = [lib.forward_ad.unpack_dual(o).tangent for o in flatten(case(lib.module, dual))]
        found["tangents"] = [None if t is None else t.numpy() for t in tangents]
    return found


def assert_same(ours: dict, theirs: dict) -> None:
    if "second" in ours and "second" not in theirs:
        # PyTorch's gradient is a constant there (prod of one element; var without degrees of freedom,
        # NaN): jitgrad's is a function whose derivative is zero (or NaN, like the gradient itself).
        assert np.all((ours.pop("second") == 0) | np.isnan(ours["grad"]))
    assert ours.keys() == theirs.keys(), (ours.keys(), theirs.keys())
    for (shape, dtype, value), their in zip(ours["values"], theirs["values"]):
        assert (shape, dtype) == their[:2]
        np.testing.assert_allclose(value, their[2], rtol=1e-12, atol=1e-15)
    assert ours["nodes"] == theirs["nodes"]
    for key in ("grad", "second"):
        if key in theirs:
            np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-12, atol=1e-15, err_msg=key)
    if "tangents" in theirs:
        assert [t is None for t in ours["tangents"]] == [t is None for t in theirs["tangents"]]
        for t, their_t in zip(ours["tangents"], theirs["tangents"]):
            if t is not None:
                np.testing.assert_allclose(t, their_t, rtol=1e-12, atol=1e-15)


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(CASES))
def test_float_0d_input(name):
    """Forward, backward, double backward and forward mode, as PyTorch (var and std with correction 1
    on one element: NaN, as in PyTorch, not an error)."""
    assert_same(run(JITGRAD, CASES[name], VALUE, "float64"), run(TORCH, CASES[name], VALUE, "float64"))


@pytest.mark.parametrize("dtype", ["int64", "bool"])
@pytest.mark.parametrize("name", sorted(INTEGER_CASES))
def test_integer_and_bool_0d_input(name, dtype):
    if name.startswith(("argmax", "argmin")) and dtype == "bool":
        pytest.skip("PyTorch has no argmax of bools; jitgrad gives the index")
    value = True if dtype == "bool" else 3
    assert_same(run(JITGRAD, CASES[name], value, dtype), run(TORCH, CASES[name], value, dtype))


REFUSED = {   # PyTorch refuses these on a 0-d tensor; jitgrad must too, with the same exception type
    "narrow(0,0,1)": lambda m, x: m.narrow(x, 0, 0, 1),
    "narrow(-1,0,1)": lambda m, x: x.narrow(-1, 0, 1),
    "split(1,0)": lambda m, x: m.split(x, 1, 0),
    "chunk(1,-1)": lambda m, x: x.chunk(1, -1),
    "cat([x,x],0)": lambda m, x: m.cat([x, x], 0),
    "cat([x,x],-1)": lambda m, x: m.cat([x, x], -1),
    "select(0,0)": lambda m, x: m.select(x, 0, 0),
    "size(0)": lambda m, x: x.size(0),
    "sum(1)": lambda m, x: m.sum(x, 1),
    "sum((0,-1))": lambda m, x: m.sum(x, (0, -1)),
    "max(-2)": lambda m, x: m.max(x, -2),
    "argmax(1)": lambda m, x: m.argmax(x, 1),
    "softmax(1)": lambda m, x: m.softmax(x, 1),
    "transpose(0,1)": lambda m, x: m.transpose(x, 0, 1),
    "flatten(1)": lambda m, x: m.flatten(x, 1),
    "unsqueeze(2)": lambda m, x: m.unsqueeze(x, 2),
    "nll_loss": lambda m, x: (TORCH.functional if m is torch else JITGRAD.functional).nll_loss(
        x, m.tensor(0)),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_pytorch_refuses_on_a_0d_input(name):
    with pytest.raises(Exception) as theirs:
        REFUSED[name](torch, TORCH.tensor(VALUE, requires_grad=True))
    with pytest.raises(type(theirs.value)) as ours:
        REFUSED[name](jg, JITGRAD.tensor(VALUE, requires_grad=True))
    message = str(ours.value)
    assert "0-d" in message or "Dimension out of range" in message or "multiple times" in message, message
    assert "axis" not in message and "tuple index" not in message and "iteration" not in message, message


def test_nll_loss_of_one_sample_takes_a_0d_target():
    """Unbatched input (C,) with a 0-d class index, which cross_entropy already took."""
    for reduction in ("mean", "sum", "none"):
        found = []
        for lib in (TORCH, JITGRAD):
            x = lib.tensor([0.3, -1.2, 0.5, 2.0], requires_grad=True)
            loss = lib.functional.nll_loss(x.log_softmax(0), lib.module.tensor(2), reduction=reduction)
            (grad,) = lib.autograd.grad(loss, x)
            found.append((tuple(loss.shape), loss.detach().numpy(), grad.numpy()))
        (shape, value, grad), (their_shape, their_value, their_grad) = found[1], found[0]
        assert shape == their_shape
        np.testing.assert_allclose(value, their_value, rtol=1e-6)
        np.testing.assert_allclose(grad, their_grad, rtol=1e-6)


@pytest.mark.parametrize("values", [[1.0, 1.0, 1.0], [0.5]], ids=["equal", "single"])
def test_std_of_equal_elements_has_gradient_zero(values):
    """std is 0 there and its derivative 1 / (2 std) infinite: PyTorch takes the gradient as 0."""
    found = []
    for lib in (TORCH, JITGRAD):
        x = lib.tensor(values, requires_grad=True)
        (grad,) = lib.autograd.grad(x.std(correction=0), x, create_graph=True)
        (second,) = lib.autograd.grad(grad.sum(), x, allow_unused=True)
        found.append((grad.detach().numpy(), None if second is None else second.numpy()))
    (grad, second), (their_grad, their_second) = found[1], found[0]
    np.testing.assert_array_equal(grad, their_grad)
    np.testing.assert_array_equal(second, their_second)


@pytest.mark.parametrize("values", [np.zeros((2, 0)), np.full((2, 2), -np.inf)], ids=["empty", "all -inf"])
def test_logsumexp_of_nothing_is_minus_inf_without_a_warning(values):
    """numpy's log(0) warned (a RuntimeWarning from jitgrad's forward) where PyTorch is silent."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = JITGRAD.tensor(values).logsumexp(1).numpy()
    np.testing.assert_array_equal(got, TORCH.tensor(values).logsumexp(1).numpy())


@pytest.mark.parametrize("chunks", [1, 3])
def test_chunk_of_an_empty_dimension_gives_as_many_empty_pieces_as_pytorch(chunks):
    """``x.chunk(3, 1)`` of a (2, 0) tensor is three (2, 0) pieces in PyTorch: one, and an IndexError
    for ``[1]``, until 2026-11-28."""
    expected = [tuple(piece.shape) for piece in torch.zeros(2, 0).chunk(chunks, 1)]
    assert [tuple(piece.shape) for piece in jg.zeros(2, 0).chunk(chunks, 1)] == expected


@pytest.mark.parametrize("call", [
    lambda L: L.zeros(0, 4).aminmax(dim=1).max,          # refused as if dim 1 were empty, until 2026-11-28
    lambda L: L.zeros(0, 4).aminmax(dim=-1, keepdim=True).min,
    lambda L: L.zeros(3, 0).split(0, 1)[0],              # split_size 0 was refused whatever the size
    lambda L: L.nn.functional.glu(L.zeros(3, 0), 1),     # glu split by 0, and was refused
])
def test_an_empty_tensor_over_a_dimension_pytorch_accepts(call):
    assert tuple(call(jg).shape) == tuple(call(torch).shape)
