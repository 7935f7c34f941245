"""einsum: values and gradients against PyTorch for the common forms, gradients and second derivatives
against finite differences (no PyTorch needed), the ops it is built of, PyTorch's errors for malformed
equations, and a clear refusal of diagonals."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

CASES = [("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
         ("ij,kj->ik", [(2, 3), (4, 3)]), ("i,j->ij", [(2,), (3,)]), ("i,i->", [(3,), (3,)]), ("i,i", [(3,), (3,)]),
         ("ij,ij->", [(2, 3), (2, 3)]), ("ij,ij->ij", [(2, 3), (2, 3)]), ("ij->ji", [(2, 3)]), ("ij->j", [(2, 3)]),
         ("ij->", [(2, 3)]), ("ij", [(2, 3)]), ("ji", [(2, 3)]), ("ij,j->i", [(2, 3), (3,)]),
         ("j,jk->k", [(3,), (3, 4)]), ("bij,bj->bi", [(2, 3, 4), (2, 4)]), ("bi,bj->bij", [(2, 3), (2, 4)]),
         ("...ij,...jk", [(2, 2, 3), (2, 3, 4)]), ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 4)]),
         ("ij,jk->ik", [(2, 3), (1, 4)]), ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]), ("ij,kl->ijkl", [(2, 3), (2, 2)]),
         ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("abc->cba", [(2, 3, 4)]), ("ij,ji->", [(2, 3), (3, 2)]),
         ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]), ("ij,i->", [(2, 3), (2,)]), ("ij,jk->", [(2, 3), (3, 4)]),
         ("Ab,bC->AC", [(2, 3), (3, 2)]), ("...i,...i->...", [(2, 3), (4, 1, 3)]), ("ij,jk->ki", [(2, 3), (3, 4)]),
         (" i j , j k -> i k ", [(2, 3), (3, 4)]), (",ij->ij", [(), (2, 3)])]


def _operands(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


@pytest.mark.parametrize("equation, shapes", CASES, ids=[f"{e.replace(' ', '')}-{i}" for i, (e, _) in enumerate(CASES)])
def test_values_gradients_and_node_match_pytorch(equation, shapes):
    torch = pytest.importorskip("torch")
    arrays = _operands(shapes)
    ours = [jg.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = jg.einsum(equation, *ours), torch.einsum(equation, *theirs)
    assert tuple(out.shape) == tuple(expected.shape)
    if equation not in ("...ij,...jk->...ik", "...i,...i->...", "ij,jk->ki"):   # ours end with a permute
        assert out.grad_fn.name() == expected.grad_fn.name()
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    seed = np.random.default_rng(1).standard_normal(tuple(expected.shape))
    grads = jg.autograd.grad(out, ours, jg.tensor(seed))
    expected_grads = torch.autograd.grad(expected, theirs, torch.tensor(seed))
    for g, e in zip(grads, expected_grads):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("equation, shapes", [("ij,jk->ik", [(2, 3), (3, 2)]), ("bij,bkj->bik", [(2, 2, 3), (2, 2, 3)]),
                                              ("i,j->ij", [(2,), (3,)]), ("ij->j", [(2, 3)]),
                                              ("ij,jk,k->i", [(2, 3), (3, 2), (2,)])])
def test_first_and_second_order_gradients_against_finite_differences(equation, shapes):
    inputs = tuple(jg.tensor(a, requires_grad=True) for a in _operands(shapes, 2))
    fn = lambda *ops: jg.einsum(equation, *ops) ** 2   # noqa: E731 - squared so the second order is not zero
    assert jg.autograd.gradcheck(fn, inputs)
    assert jg.autograd.gradgradcheck(fn, inputs)


def test_the_ops_it_is_built_of():
    """PyTorch's last nodes (a view after a product, a mul, a permute, a sum), and ours below them."""
    a, b = jg.ones(2, 3, requires_grad=True), jg.ones(3, 4, requires_grad=True)
    product = jg.einsum("ij,jk->ik", a, b).grad_fn
    assert product.name() == "ViewBackward0" and product.next_functions[0][0].name() == "MmBackward0"
    assert jg.einsum("i,i->", a[0], a[0]).grad_fn.next_functions[0][0].name() == "DotBackward0"
    assert jg.einsum("i,j->ij", a[0], b[0]).grad_fn.name() == "MulBackward0"
    assert jg.einsum("ij->ji", a).grad_fn.name() == "PermuteBackward0"
    assert jg.einsum("ij->j", a).grad_fn.name() == "SumBackward1"
    assert jg.einsum("ij,jk->ik", [a, b]).shape == (2, 4)   # operands as one list, as PyTorch takes them


def test_empty_dimensions_broadcast_as_in_pytorch():
    assert jg.einsum("bij,bkj->bik", jg.zeros(0, 3, 2), jg.zeros(0, 2, 2)).shape == (0, 3, 2)
    assert jg.einsum("bij,bkj->bik", jg.zeros(1, 3, 2), jg.zeros(0, 2, 2)).shape == (0, 3, 2)
    assert jg.einsum("ij,jk->ik", jg.zeros(2, 0), jg.zeros(0, 4)).tolist() == [[0.0] * 4] * 2


MALFORMED = [("ij,jk->ik", [(2, 3)], "einsum(): fewer operands were provided than specified in the equation"),
             ("ij", [(2, 3), (3, 4)], "einsum(): more operands were provided than specified in the equation"),
             ("ij->ik", [(2, 3)], "einsum(): output subscript k does not appear in the equation for any input operand"),
             ("ijk,jk->ik", [(2, 3), (3, 4)], "einsum(): the number of subscripts in the equation (3) does not match "
              "the number of dimensions (2) for operand 0 and no ellipsis was given"),
             ("ij,jk->iik", [(2, 3), (3, 4)], "einsum(): output subscript i appears more than once in the output"),
             ("i1,jk->ik", [(2, 3), (3, 4)], "einsum(): invalid subscript given at index 1 in the equation string, "
              "subscripts must be in [a-zA-Z]"),
             ("ij,jk->ik->", [(2, 3), (3, 4)], "einsum(): invalid subscript given at index 9 in the equation string, "
              "subscripts must be in [a-zA-Z]"),
             ("ij,ik->ij", [(2, 3), (3, 4)], "einsum(): subscript i has size 3 for operand 1 which does not broadcast "
              "with previously seen size 2"),
             ("ij.,jk", [(2, 3), (3, 4)], "einsum(): found '.' for operand 0 that is not part of any ellipsis"),
             ("i...j...", [(2, 3)], "einsum(): found '.' for operand 0 for which an ellipsis was already found"),
             ("ijk...", [(2, 3)], "einsum(): the number of subscripts in the equation (3) is more than the number "
              "of dimensions (2) for operand 0")]


@pytest.mark.parametrize("equation, shapes, message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_equations_raise_pytorchs_errors(equation, shapes, message):
    with pytest.raises(RuntimeError) as caught:
        jg.einsum(equation, *(jg.zeros(*s) for s in shapes))
    assert str(caught.value) == message
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as theirs:
        torch.einsum(equation, *(torch.zeros(*s) for s in shapes))
    assert str(theirs.value) == message


def test_what_it_does_not_support_is_refused_clearly():
    with pytest.raises(RuntimeError, match="subscript i appears more than once in operand 0.*diagonal"):
        jg.einsum("ii->i", jg.zeros(3, 3))
    with pytest.raises(TypeError, match="operand 1 must be a Tensor.*sublist"):
        jg.einsum("ij,jk", jg.zeros(2, 3), [0, 1])
    with pytest.raises(ValueError, match="must specify the equation string and at least one operand"):
        jg.einsum("ij")
