"""The Tensor surface: creation, factories, attributes, requires_grad, detach and hooks, conversions;
checked against numpy and (where it is installed) PyTorch, whose behaviour jitgrad copies.

Torch-dependent tests call ``pytest.importorskip("torch")`` themselves, so the rest runs without it.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import jitgrad
from tensor_api_helpers import both, dtype_name, torch_or_skip


# ---- jitgrad.tensor: dtype inference and copying -------------------------------------------------

INFERRED = [  # (data, dtype name, as PyTorch infers it)
    (1.5, "float32"), ([1.0, 2.0], "float32"), ([[1, 2], [3, 4.5]], "float32"),
    (3, "int64"), ([1, 2, 3], "int64"), (True, "bool"), ([True, False], "bool"),
    ([True, 2], "int64"), (np.float64(2.0), "float64"), (np.float32(2.0), "float32"), ([], "float32"),
]


@pytest.mark.parametrize("data, expected", INFERRED, ids=[repr(d) for d, _ in INFERRED])
def test_tensor_infers_dtype_like_torch(data, expected):
    t = jitgrad.tensor(data)
    assert dtype_name(t.dtype) == expected
    np.testing.assert_array_equal(t.numpy(), np.asarray(data, dtype=expected))


@pytest.mark.parametrize("data, expected", INFERRED, ids=[repr(d) for d, _ in INFERRED])
def test_tensor_dtype_inference_matches_torch(data, expected):
    torch = torch_or_skip()
    assert dtype_name(torch.tensor(data).dtype) == dtype_name(jitgrad.tensor(data).dtype)


@pytest.mark.parametrize("np_dtype", [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64,
                                      np.float16, np.float32, np.float64])
def test_tensor_of_numpy_array_keeps_dtype_and_copies(np_dtype):
    array = np.arange(6).reshape(2, 3).astype(np_dtype)
    t = jitgrad.tensor(array)
    assert t.dtype.numpy == array.dtype and t.shape == array.shape
    np.testing.assert_array_equal(t.numpy(), array)
    assert not np.shares_memory(t.numpy(), array)


def test_tensor_dtype_and_requires_grad_arguments():
    t = jitgrad.tensor([1, 2], dtype=jitgrad.float64, requires_grad=True)
    assert t.dtype == jitgrad.float64 and t.requires_grad and t.is_leaf
    assert jitgrad.tensor([1.7, -2.7], dtype=jitgrad.int64).tolist() == [1, -2]  # truncates, as torch
    assert jitgrad.tensor(2, dtype=jitgrad.float32).dtype == jitgrad.float32


def test_tensor_of_tensor_copies():
    source = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    t = jitgrad.tensor(source)
    assert not t.requires_grad and t.is_leaf
    assert not np.shares_memory(t.numpy(), source.detach().numpy())


def test_from_numpy_shares_memory():
    array = np.arange(4.0)
    t = jitgrad.from_numpy(array)
    assert t.dtype == jitgrad.float64 and not t.requires_grad
    array[0] = 42.0
    assert t.tolist() == [42.0, 1.0, 2.0, 3.0]
    assert np.shares_memory(t.numpy(), array)
    t.numpy()[1] = -1.0
    assert array[1] == -1.0
    with pytest.raises(TypeError):
        jitgrad.from_numpy([1.0, 2.0])


# ---- factories -----------------------------------------------------------------------------------

FACTORIES = [
    "M.zeros(2, 3)", "M.zeros((2, 3))", "M.zeros([4])", "M.zeros(())", "M.zeros(2, dtype=M.int64)",
    "M.ones(3, 1)", "M.ones(2, dtype=M.float64)", "M.ones(2, dtype=M.bool)",
    "M.zeros_like(M.tensor([[1, 2]]))", "M.ones_like(M.tensor([1.0, 2.0], dtype=M.float64))",
    "M.zeros_like(M.tensor([1.0]), dtype=M.int32)", "M.full((2, 2), 1.5)", "M.full((3,), 7)",
    "M.full((2,), True)", "M.full((2,), 2, dtype=M.float64)", "M.arange(5)", "M.arange(5.0)",
    "M.arange(1, 4, 0.5)", "M.arange(2, 9, 3)", "M.arange(-3, 0)", "M.arange(0, 1, 0.25)", "M.eye(3)",
    "M.eye(2, 4)", "M.eye(3, dtype=M.int64)", "M.tensor([[1, 2], [3, 4]])", "M.tensor(5.0)",
]


@pytest.mark.parametrize("expr", FACTORIES)
def test_factory_values_dtype_and_shape_match_torch(expr):
    ours, theirs = both(expr)
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert not ours.requires_grad


@pytest.mark.parametrize("expr", ["M.empty(2, 3)", "M.empty((4,))", "M.empty(2, dtype=M.float64)",
                                  "M.randn(2, 3)", "M.randn(())", "M.rand(4)",
                                  "M.rand(2, 2, dtype=M.float64)"])
def test_uninitialized_and_random_factories_shape_and_dtype_match_torch(expr):
    ours, theirs = both(expr)
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)


def test_factories_without_torch():
    assert jitgrad.zeros(2, 3).numpy().tolist() == np.zeros((2, 3)).tolist()
    assert jitgrad.arange(5).dtype == jitgrad.int64 and jitgrad.arange(5.0).dtype == jitgrad.float32
    np.testing.assert_array_equal(jitgrad.arange(1, 4, 0.5).numpy(), np.arange(1, 4, 0.5, dtype=np.float32))
    np.testing.assert_array_equal(jitgrad.eye(2, 3).numpy(), np.eye(2, 3, dtype=np.float32))
    assert jitgrad.full((2,), 3).dtype == jitgrad.int64 and jitgrad.full((2,), 3.0).dtype == jitgrad.float32
    assert jitgrad.empty(3, 2).shape == (3, 2) and jitgrad.empty(3).dtype == jitgrad.float32


def test_factory_requires_grad():
    for t in (jitgrad.zeros(2, requires_grad=True), jitgrad.ones(2, requires_grad=True),
              jitgrad.randn(2, requires_grad=True), jitgrad.full((2,), 1.0, requires_grad=True),
              jitgrad.arange(3.0, requires_grad=True), jitgrad.eye(2, requires_grad=True)):
        assert t.requires_grad and t.is_leaf and t.grad is None
    with pytest.raises(RuntimeError, match="floating point"):
        jitgrad.arange(3, requires_grad=True)


def test_manual_seed_makes_random_factories_reproducible():
    jitgrad.manual_seed(1234)
    first = (jitgrad.randn(5).tolist(), jitgrad.rand(2, 2).tolist())
    jitgrad.manual_seed(1234)
    second = (jitgrad.randn(5).tolist(), jitgrad.rand(2, 2).tolist())
    assert first == second
    jitgrad.manual_seed(4321)
    assert jitgrad.randn(5).tolist() != first[0]


def test_random_factories_distribution():
    jitgrad.manual_seed(0)
    normal = jitgrad.randn(20000).numpy()
    uniform = jitgrad.rand(20000).numpy()
    assert abs(normal.mean()) < 0.05 and abs(normal.std() - 1) < 0.05
    assert uniform.min() >= 0 and uniform.max() < 1 and abs(uniform.mean() - 0.5) < 0.02


# ---- attributes ----------------------------------------------------------------------------------

def test_attributes_of_a_leaf_and_a_result():
    array = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    x = jitgrad.tensor(array, requires_grad=True)
    assert x.shape == array.shape and isinstance(x.shape, tuple) and x.size() == array.shape
    assert x.size(0) == 2 and x.size(-1) == 3 and x.size(1) == 3
    assert x.ndim == x.dim() == 2 and x.numel() == array.size == 6
    assert x.dtype == jitgrad.float32 and x.device == "cpu" and str(x.device) == "cpu"
    assert x.requires_grad and x.is_leaf and x.grad is None and x.grad_fn is None
    y = x * 2
    assert y.requires_grad and not y.is_leaf and y.grad_fn.name() == "MulBackward0"
    assert jitgrad.tensor(1.0).is_leaf  # a tensor that does not require grad is a leaf too


def test_data_shares_the_array_outside_autograd():
    x = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    d = x.data
    assert not d.requires_grad and d.is_leaf and d.dtype == x.dtype
    assert np.shares_memory(d.numpy(), x.detach().numpy())
    x.data = jitgrad.tensor([5.0, 6.0])
    assert x.tolist() == [5.0, 6.0] and x.requires_grad


def test_data_of_a_tensor_that_requires_grad_is_not_set_to_integers_as_in_pytorch():
    torch = torch_or_skip()
    messages = []
    for M in (jitgrad, torch):
        x = M.tensor([1.0, 2.0], requires_grad=True)
        with pytest.raises(RuntimeError) as error:
            x.data = M.tensor([1, 2])
        messages.append((str(error.value), x.dtype.is_floating_point))
    assert messages[0] == messages[1]


def test_attributes_match_torch():
    ours, theirs = both("M.tensor([[1.0, 2.0, 3.0]], requires_grad=True) * 2")
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.ndim == theirs.ndim
    assert ours.numel() == theirs.numel() and tuple(ours.size()) == tuple(theirs.size())
    assert (ours.is_leaf, ours.requires_grad) == (theirs.is_leaf, theirs.requires_grad)
    assert ours.grad_fn.name() == theirs.grad_fn.name()
    assert str(ours.device) == str(theirs.device)


# ---- requires_grad -------------------------------------------------------------------------------

def test_requires_grad_settable_on_leaves():
    x = jitgrad.tensor([1.0, 2.0])
    x.requires_grad = True
    assert x.requires_grad and x.is_leaf
    x.requires_grad = False
    assert not x.requires_grad
    assert x.requires_grad_() is x and x.requires_grad
    assert x.requires_grad_(False) is x and not x.requires_grad


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_requires_grad_refused_on_non_float_tensors(dtype):
    t = jitgrad.zeros(2, dtype=getattr(jitgrad, dtype))
    message = "only Tensors of floating point .*can require gradients"
    with pytest.raises(RuntimeError, match=re.compile(message, re.I)):
        t.requires_grad = True
    with pytest.raises(RuntimeError, match=re.compile(message, re.I)):
        t.requires_grad_()
    with pytest.raises(RuntimeError, match=re.compile(message, re.I)):
        jitgrad.tensor([1, 2], requires_grad=True)
    t.requires_grad_(False)  # turning it off is always fine
    assert not t.requires_grad


def test_requires_grad_cannot_be_turned_off_on_non_leaves():
    y = jitgrad.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)
    assert y.requires_grad_(True) is y  # asking for what it already has is allowed, as in torch


def test_requires_grad_setter_refuses_true_on_non_leaves():
    y = jitgrad.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad = True


def test_requires_grad_errors_match_torch():
    torch = torch_or_skip()
    for M in (jitgrad, torch):
        with pytest.raises(RuntimeError, match=re.compile("only Tensors of floating point", re.I)):
            M.tensor([1, 2]).requires_grad_()
        with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
            (M.tensor([1.0], requires_grad=True) * 2).requires_grad_(False)


# ---- detach, retain_grad, hooks --------------------------------------------------------------------

def test_detach_shares_memory_and_leaves_the_graph():
    x = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    assert np.shares_memory(d.numpy(), y.detach().numpy())
    assert y.requires_grad and y.grad_fn is not None  # detach leaves the original alone


def test_detach_in_place():
    y = jitgrad.tensor([1.0, 2.0], requires_grad=True) * 3
    assert y.detach_() is y
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    assert y.tolist() == [3.0, 6.0]


def test_retain_grad_fills_a_non_leaf_grad():
    x = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    assert not y.retains_grad and not x.retains_grad
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), 2 * y.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), 18 * x.detach().numpy())
    x.retain_grad()  # a no-op on leaves
    assert not x.retains_grad
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        jitgrad.tensor([1.0]).retain_grad()


def test_register_hook_sees_and_replaces_the_gradient_until_removed():
    x = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    y = x * 2
    h_y = y.register_hook(lambda g: seen.append(g.tolist()))
    h_x = x.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert seen == [[1.0, 1.0]] and x.grad.tolist() == [20.0, 20.0]
    h_y.remove()
    h_x.remove()
    x.grad = None
    y = x * 2
    y.sum().backward()
    assert seen == [[1.0, 1.0]] and x.grad.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        jitgrad.tensor([1.0]).register_hook(lambda g: g)


def test_reading_grad_of_a_non_leaf_warns():
    x = jitgrad.tensor([1.0], requires_grad=True)
    y = x * 2
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed") as record:
        assert y.grad is None
    assert record[0].filename == __file__  # points at the user's line
    y.retain_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert y.grad is None and x.grad is None  # neither a leaf nor a retained non-leaf warns


def test_non_leaf_grad_warning_matches_torch():
    torch = torch_or_skip()
    messages = []
    for M in (jitgrad, torch):
        y = M.tensor([1.0], requires_grad=True) * 2
        with pytest.warns(UserWarning) as record:
            y.grad
        messages.append(str(record[0].message))
    assert messages[0].split(". ")[0] == messages[1].split(". ")[0]


# ---- conversions -----------------------------------------------------------------------------------

def test_numpy_shares_memory_and_is_refused_when_requiring_grad():
    t = jitgrad.tensor([1.0, 2.0])
    assert np.shares_memory(t.numpy(), t.numpy())
    t.numpy()[0] = 9.0
    assert t.tolist() == [9.0, 2.0]
    x = jitgrad.tensor([1.0], requires_grad=True)
    message = "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
    with pytest.raises(RuntimeError, match=re.escape(message)):
        x.numpy()
    assert x.detach().numpy().tolist() == [1.0]


def test_numpy_refusal_message_matches_torch():
    torch = torch_or_skip()
    messages = []
    for M in (jitgrad, torch):
        with pytest.raises(RuntimeError) as info:
            M.tensor([1.0], requires_grad=True).numpy()
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_item_tolist_and_python_numbers():
    assert jitgrad.tensor(2.5).item() == 2.5 and type(jitgrad.tensor(2.5).item()) is float
    assert type(jitgrad.tensor(3).item()) is int and type(jitgrad.tensor(True).item()) is bool
    assert jitgrad.tensor([[7]]).item() == 7  # any one-element tensor
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        jitgrad.tensor([1.0, 2.0]).item()
    data = [[1.5, 2.0], [3.0, -4.0]]
    assert jitgrad.tensor(data).tolist() == data and jitgrad.tensor(5).tolist() == 5
    assert float(jitgrad.tensor([2.5])) == 2.5 and int(jitgrad.tensor(2.9)) == 2
    assert bool(jitgrad.tensor(1.0)) and not bool(jitgrad.tensor([0]))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(jitgrad.tensor([1.0, 2.0]))


def test_clone_copies_and_records_clone_backward():
    x = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    c = x.clone()
    assert c.grad_fn.name() == "CloneBackward0" and not c.is_leaf
    assert c.tolist() == x.tolist()
    assert not np.shares_memory(c.detach().numpy(), x.detach().numpy())
    (c * c).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())
    with jitgrad.no_grad():
        assert x.clone().grad_fn is None and not x.clone().requires_grad


def test_array_protocol():
    t = jitgrad.tensor([[1, 2], [3, 4]])
    array = np.asarray(t)
    assert array.dtype == np.int64 and array.tolist() == [[1, 2], [3, 4]]
    assert np.shares_memory(array, t.numpy())
    assert np.array(t, dtype=np.float64).dtype == np.float64
    assert not np.shares_memory(np.array(t), t.numpy())  # np.array copies by default
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(jitgrad.tensor([1.0], requires_grad=True))


def test_len_and_iteration():
    t = jitgrad.tensor([[1, 2], [3, 4], [5, 6]])
    assert len(t) == 3 and len(jitgrad.zeros(0, 4)) == 0
    rows = list(t)
    assert len(rows) == 3 and all(isinstance(r, jitgrad.Tensor) for r in rows)
    assert [r.tolist() for r in rows] == t.numpy().tolist()
    assert [v.item() for v in jitgrad.tensor([1.5, 2.5])] == [1.5, 2.5]
    with pytest.raises(TypeError, match="0-d"):
        len(jitgrad.tensor(1.0))
    with pytest.raises(TypeError, match="0-d"):
        iter(jitgrad.tensor(1.0))


def test_iteration_keeps_the_graph():
    x = jitgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    first, second, third = x
    (first * 1 + third * 3).backward()
    assert x.grad.tolist() == [1.0, 0.0, 3.0]


def test_len_of_0d_tensor_matches_torch():
    torch = torch_or_skip()
    for M in (jitgrad, torch):
        with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
            len(M.tensor(1.0))
