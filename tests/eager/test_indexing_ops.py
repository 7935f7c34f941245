"""What the generated sample tests do not reach for gather, scatter_add, embedding, cumsum, masked_fill,
sort/argsort/topk and isnan/isinf: PyTorch's errors for bad input, ties and NaN in a sort, the
embedding's padding row (no gradient, which finite differences cannot check), the public
``scatter_add`` (an ``add`` of the op's result), and ``cross_entropy`` with ``ignore_index`` any class
or none, with and without weights, eager and compiled, against PyTorch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn.functional as F
from jitgrad.compile import CompileWarning

torch = pytest.importorskip("torch")

X = np.random.default_rng(11).standard_normal((3, 4))


def test_bad_indices_give_pytorchs_errors():
    x = jg.tensor(X)
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1 with size 4"):
        jg.gather(x, 1, jg.tensor([[5], [0], [0]]))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds"):
        x.gather(0, jg.tensor([[-1, 0, 0, 0]]))
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        jg.gather(x, 1, jg.tensor([[0.0]] * 3))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        jg.gather(x, 1, jg.tensor([0, 1]))
    with pytest.raises(IndexError, match="Dimension out of range"):
        jg.gather(x, 2, jg.tensor([[0]]))
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(jg.tensor([3]), x)
    with pytest.raises(RuntimeError, match="scatter\\(\\): Expected self.dtype to be equal to src.dtype"):
        jg.zeros(3, 4, dtype=jg.float32).scatter_add(1, jg.tensor([[0]] * 3), x)


def test_bad_arguments_of_topk_and_masked_fill_give_pytorchs_errors():
    x = jg.tensor(X)
    for k in (5, -1):
        with pytest.raises(RuntimeError, match="selected index k out of range"):
            x.topk(k)
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks"):
        x.masked_fill(x, 1.0)
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        x.masked_fill(x > 0, jg.ones(2))


def test_sort_is_stable_and_puts_nan_above_every_number_as_pytorch_does():
    values = np.array([[1.0, 2.0, 1.0, np.nan, 2.0, 0.5], [3.0, 3.0, 3.0, -1.0, np.nan, np.nan]])
    for descending in (False, True):
        ours = jg.tensor(values).sort(1, descending=descending)
        theirs = torch.sort(torch.tensor(values), dim=1, descending=descending, stable=True)
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(jg.tensor(values).argsort(1, descending=descending).numpy(),
                                      theirs.indices.numpy())
    # topk: PyTorch does not say which of equal elements it returns; jitgrad returns the first ones
    top = jg.tensor(values).topk(2, 1)
    np.testing.assert_array_equal(top.indices.numpy(), [[3, 1], [4, 5]])  # NaN first, then the first 2.0


def test_sort_and_topk_of_a_0d_tensor_and_integers():
    assert jg.tensor(3.0).sort().values.item() == 3.0 and jg.tensor(3.0).topk(1).indices.item() == 0
    ints = jg.tensor([3, 1, 2], dtype=jg.int32)
    assert ints.sort(descending=True).values.tolist() == [3, 2, 1] and ints.argsort().tolist() == [1, 2, 0]
    assert jg.tensor([True, True]).cumsum(0).dtype == jg.int64
    assert ints.cumsum(0).tolist() == [3, 4, 6] and ints.cumsum(0).dtype == jg.int64


def test_isnan_and_isinf_have_no_gradient_and_pytorchs_values():
    x = jg.tensor([1.0, np.nan, np.inf, -np.inf], requires_grad=True)
    assert x.isnan().tolist() == [False, True, False, False] and not x.isnan().requires_grad
    assert jg.isinf(x).tolist() == [False, False, True, True]
    assert jg.tensor([1, 2]).isnan().tolist() == [False, False]


def test_the_embeddings_padding_row_gets_no_gradient_as_in_pytorch():
    tokens, seed = np.array([[1, 3, 1], [0, 2, 3]]), np.random.default_rng(2).standard_normal((2, 3, 3))
    for padding_idx in (3, -3, None):
        ours = jg.tensor(X.T[:, :3].copy(), requires_grad=True)
        F.embedding(jg.tensor(tokens), ours, padding_idx=padding_idx).backward(jg.tensor(seed))
        theirs = torch.tensor(X.T[:, :3].copy(), requires_grad=True)
        torch.nn.functional.embedding(torch.tensor(tokens), theirs, padding_idx=padding_idx).backward(
            torch.tensor(seed))
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)


def test_public_scatter_add_matches_pytorch_values_and_gradients():
    index = np.array([[2, 0, 2], [0, 0, 1]])
    src = np.random.default_rng(3).standard_normal((2, 3))
    results = []
    for lib in (jg, torch):
        x, s = lib.tensor(X, requires_grad=True), lib.tensor(src, requires_grad=True)
        out = x.scatter_add(0, lib.tensor(index), s)
        (out * lib.tensor(X)).sum().backward()
        results.append([t.detach().numpy() for t in (out, x.grad, s.grad)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    zero_d = [lib.tensor(2.0).scatter_add(0, lib.tensor(0), lib.tensor(1.5)).item() for lib in (jg, torch)]
    assert zero_d[0] == zero_d[1] == 3.5
    assert jg.gather(jg.tensor(3.0), 0, jg.tensor(0)).item() == 3.0
    wider = np.random.default_rng(3).standard_normal((2, 4))  # only the part the index covers is read
    np.testing.assert_allclose(jg.tensor(X).scatter_add(0, jg.tensor(index), jg.tensor(wider)).numpy(),
                               torch.tensor(X).scatter_add(0, torch.tensor(index), torch.tensor(wider)).numpy())


CROSS_ENTROPY_CASES = [(ignore_index, weighted, reduction) for ignore_index in (-100, -1, 0, 2, 7)
                       for weighted in (False, True) for reduction in ("mean", "sum", "none")]


@pytest.mark.parametrize("ignore_index, weighted, reduction", CROSS_ENTROPY_CASES)
def test_cross_entropy_ignores_any_index_eager_and_compiled(ignore_index, weighted, reduction, monkeypatch):
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "interpreter")
    logits = np.random.default_rng(4).standard_normal((5, 3, 2))
    targets = np.array([[0, 2], [2, 2], [1, 0], [0, 1], [2, 0]])
    if ignore_index in (-100, -1, 7):  # a target outside the classes that is ignored
        targets[1, 0] = targets[3, 1] = ignore_index
    weight = np.array([0.5, 2.0, 1.5]) if weighted else None

    def loss_of(lib, x):
        w = None if weight is None else lib.tensor(weight)
        return lib.nn.functional.cross_entropy(x, lib.tensor(targets), weight=w, ignore_index=ignore_index,
                                               reduction=reduction)
    theirs = torch.tensor(logits, requires_grad=True)
    expected = loss_of(torch, theirs)
    expected.sum().backward()
    compiled = jg.compile(lambda x: loss_of(jg, x), cache=False)
    for fn in (lambda x: loss_of(jg, x), compiled, compiled):
        ours = jg.tensor(logits, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error", CompileWarning)
            loss = fn(ours)
        loss.sum().backward()
        np.testing.assert_allclose(loss.detach().numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("kind", ["get", "set", "mask"])
def test_index_changed_in_place_before_backward_keeps_the_gradient(kind):
    """The backward scatters by the index as it was: PyTorch refuses the change (version counter); we
    copy the index, so the gradient is the one PyTorch gives when the index is left alone."""

    def run(lib, change):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = lib.tensor([7.0, 8.0], requires_grad=True)
        index = lib.tensor([True, False, True]) if kind == "mask" else lib.tensor([0, 1])
        if kind == "set":
            y = x * 1
            y[index] = w * 1
        else:
            y = x[index] * w
        if change:
            index[0], index[1] = index[1].item(), index[0].item()
        (y * lib.tensor([1.0, 2.0, 3.0] if kind == "set" else [1.0, 2.0])).sum().backward()
        return x.grad.numpy(), w.grad.numpy()

    for ours, theirs in zip(run(jg, True), run(torch, False)):
        np.testing.assert_array_equal(ours, theirs)


def test_a_0d_integer_tensor_indexes_as_an_integer_a_view():
    """x[torch.tensor(1)] is x[1] in PyTorch: a view (SelectBackward0), so a change through it is seen
    by x; it was a copy, and the change silently lost."""
    results = []
    for lib in (jg, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = x * 1
        y = h[lib.tensor(1)]
        name = y.grad_fn.name()
        y.mul_(5)
        (h * h).sum().backward()
        results.append((h.detach().numpy().copy(), x.grad.numpy(), name, y._is_view()))
    (h, g, *rest), (h_t, g_t, *rest_t) = results
    np.testing.assert_allclose(h, h_t)
    np.testing.assert_allclose(g, g_t)
    assert rest == rest_t == ["SelectBackward0", True]
