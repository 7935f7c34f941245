"""In-place ops, version counters and views: the errors PyTorch gives, and never a wrong gradient."""
from __future__ import annotations

import re

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd.graph import increment_version


def leaf(*values):
    return jg.tensor(np.array(values, dtype=np.float32), requires_grad=True)


def test_modified_saved_tensor_is_refused_with_pytorchs_message():
    x = leaf(1.0, 2.0, 3.0)
    y = x.exp()
    y.add_(1)
    y.mul_(2)
    with pytest.raises(RuntimeError, match=r"one of the variables needed for gradient computation has been "
                                           r"modified by an inplace operation: \[float32 \[3\]\], which is "
                                           r"output 0 of Exp, is at version 2; expected version 0 "
                                           r"instead"):
        y.sum().backward()


def test_in_place_on_a_leaf_that_requires_grad_is_refused():
    x = leaf(1.0)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place "
                                           "operation."):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x += 1
    with jg.no_grad():
        x -= 0.5  # an optimizer step is fine
    assert x.item() == 0.5 and x.is_leaf and x._version == 1


def test_in_place_on_a_non_leaf_rebases_its_history():
    torch = pytest.importorskip("torch")
    results = {}
    for lib in (jg, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        h = x * 2
        h.mul_(w)
        h += x
        h.clamp_(-1.5, 4.5)
        h.sin().sum().backward()
        results[lib.__name__] = (h.detach().numpy(), x.grad.numpy(), w.grad.numpy(), h.grad_fn.name())
    for ours, theirs in zip(results["jitgrad"], results["torch"]):
        assert np.array_equal(ours, theirs) if isinstance(ours, str) else np.allclose(ours, theirs)


def test_setitem_and_copy_against_pytorch():
    torch = pytest.importorskip("torch")
    results = {}
    for lib in (jg, torch):
        w = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        v = lib.tensor([0.5, 1.5], requires_grad=True)
        z = lib.zeros(3, 2)
        z[1:] = w * 2
        z[0] = v
        buffer = lib.zeros(2, 2)
        buffer.copy_(v)
        ((z * z).sum() + (buffer * w).sum()).backward()
        results[lib.__name__] = (z.detach().numpy(), w.grad.numpy(), v.grad.numpy())
    for ours, theirs in zip(results["jitgrad"], results["torch"]):
        assert np.allclose(ours, theirs)


def test_views_share_memory_and_version():
    base = jg.zeros(2, 3)
    row = base[1]
    row.add_(5)
    assert np.array_equal(base.numpy()[1], [5, 5, 5])
    assert base._version == row._version == 1 and row._base is base
    base.T.mul_(2)
    assert np.array_equal(row.numpy(), [10, 10, 10]) and row._version == 2


def test_a_view_taken_before_an_in_place_change_gets_a_new_history():
    torch = pytest.importorskip("torch")
    grads = {}
    for lib in (jg, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 1
        first = h[0]
        h.mul_(3)
        (first * 2).backward()
        grads[lib.__name__] = x.grad.numpy()
    assert np.allclose(grads["jitgrad"], [6.0, 0.0]) and np.allclose(grads["jitgrad"], grads["torch"])


def test_view_of_a_leaf_after_an_optimizer_step():
    w = leaf(1.0, 2.0)
    row = w[1:]
    with jg.no_grad():
        w -= 0.5
    (row * 3).sum().backward()
    assert np.allclose(w.grad.numpy(), [0.0, 3.0]) and np.allclose(row.detach().numpy(), [1.5])


def test_in_place_through_views_matches_pytorch():
    torch = pytest.importorskip("torch")
    results = {}
    for lib in (jg, torch):
        x = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        w = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        h = x * 2
        first = h[0]
        first.mul_(w)
        h[:, 1] += 3
        h.T[2].clamp_(0, 9)
        (h.exp().sum() + first.sum()).backward()
        results[lib.__name__] = (h.detach().numpy(), x.grad.numpy(), w.grad.numpy())
        assert h.grad_fn.name().endswith("CopySlices")
    for ours, theirs in zip(results["jitgrad"], results["torch"]):
        assert np.allclose(ours, theirs)


def test_in_place_on_a_view_of_a_leaf_is_refused():
    x = leaf(1.0, 2.0)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation."):
        x[0].mul_(2)


def test_shape_and_dtype_rules():
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        jg.zeros(3).add_(jg.ones(2, 3))
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type int64"):
        jg.tensor([1, 2]).mul_(2.5)
    with pytest.raises(RuntimeError, match="read-only"):
        jg.zeros(3).expand(2, 3).add_(1)
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    with pytest.raises(RuntimeError, match="a numpy array that is not writeable"):
        jg.from_numpy(frozen)[0] = 1.0


def _shared_memory_rows() -> jg.Tensor:
    """A (3, 4) tensor whose rows share memory (stride 0 along dim 1), writeable, as from_numpy takes it."""
    return jg.from_numpy(np.lib.stride_tricks.as_strided(np.zeros((3, 1)), (3, 4), (8, 0)))


@pytest.mark.parametrize("write", [lambda x: x.add_(jg.arange(4.0)), lambda x: x.copy_(jg.ones(3, 4)),
                                   lambda x: x.__setitem__(0, 1.0), lambda x: x.zero_()])
def test_a_write_where_elements_share_memory_is_refused_as_in_pytorch(write):
    """Which element's value would land in the shared memory is undefined: PyTorch refuses, and until
    2026-11-28 jitgrad wrote numpy's last one (``add_(arange(4))`` left 3 in every element)."""
    x = _shared_memory_rows()
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        write(x)
    x[:, :1].add_(1.0)    # a slice whose elements have memory of their own takes the write
    assert np.array_equal(x.numpy(), np.ones((3, 4)))
    empty = jg.zeros(0, 2, dtype=jg.float64)   # numpy gives an empty array strides of 0: nothing is shared
    empty.copy_(jg.zeros(0, 2))
    empty.add_(1.0)


def test_increment_version_invalidates_saved_tensors():
    x = leaf(1.0, 2.0)
    y = x * x
    increment_version(x)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        y.sum().backward()


def test_fill_and_zero_cut_the_gradient():
    x = leaf(1.0, 2.0)
    h = x * 3
    h.zero_()
    h.fill_(2.0)
    (h * x).sum().backward()
    assert h.grad_fn.name() == "FillBackward2" and np.allclose(x.grad.numpy(), [2.0, 2.0])


def _no_grad_view_written_in_grad_mode(lib):
    base = lib.ones(3, requires_grad=True) * 1.0
    with lib.no_grad():
        view = base[:2]
    view.mul_(5.0)


def _split_output_written(lib):
    first, _ = (lib.ones(4, requires_grad=True) * 1.0).split(2)
    first.mul_(2.0)


@pytest.mark.parametrize("write", [_no_grad_view_written_in_grad_mode, _split_output_written],
                         ids=["a view made under no_grad", "one of split's views"])
def test_an_in_place_change_whose_history_pytorch_refuses_is_refused_with_its_message(write):
    """Before, the no_grad view's change was not recorded, and the base's gradient came out without it,
    silently."""
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as expected:
        write(torch)
    with pytest.raises(RuntimeError) as got:
        write(jg)
    assert str(got.value) == str(expected.value)


def test_views_made_and_changed_in_one_mode_are_fine():
    base = jg.ones(3, requires_grad=True)
    with jg.no_grad():
        base[:2].mul_(3.0)          # both inside no_grad: an untracked update
    first, second = jg.ones(4).split(2)
    first.mul_(2.0)                 # nothing requires grad
    assert base.tolist() == [3.0, 3.0, 1.0] and first.tolist() == [2.0, 2.0]


def test_retain_grad_follows_an_in_place_change_as_in_pytorch():
    """The retained ``.grad`` is the gradient of the value after the change (it was the one before)."""
    torch = pytest.importorskip("torch")
    found = []
    for lib in (jg, torch):
        a = lib.ones(3, requires_grad=True)
        y = a * 2.0
        y.retain_grad()
        y.mul_(3.0)
        y[1:].add_(1.0)              # through a view: the base's retained gradient moves too
        (y * y).sum().backward()
        found.append((y.grad.tolist(), a.grad.tolist()))
    assert found[0] == found[1]


def test_retain_grad_of_a_view_follows_an_in_place_change_of_its_base():
    """The view's history is rebuilt when it is next used; its retain_grad() moves to the new node."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (jg, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        v = y[1:]
        v.retain_grad()
        y.mul_(2)
        (v * v).sum().backward()
        results.append((v.grad.numpy(), x.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs)


def test_setitem_on_a_leaf_names_the_view_pytorch_writes_through():
    """x[0] = v on a leaf that requires grad writes through a view of it (PyTorch's message says so);
    x[mask] = v and x[...] = v write to the leaf itself."""
    torch = pytest.importorskip("torch")
    for index in (0, slice(1, None), None, (Ellipsis,), (), [0], [True, False, True]):
        messages = []
        for lib in (jg, torch):
            x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
            with pytest.raises(RuntimeError) as error:
                x[lib.tensor(index) if isinstance(index, list) else index] = 2.0
            messages.append(str(error.value))
        assert messages[0] == messages[1], index


def test_modified_saved_input_is_described_as_pytorch_describes_it():
    """PyTorch names the node whose output a saved input now is (after the in-place change, that
    change's node) and nothing for a tensor without history; node names aside (PyTorch 2.13 writes
    Add where we write AddBackward0) and the dtype, the messages agree."""
    torch = pytest.importorskip("torch")

    def message(lib, history):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        c = lib.tensor([3.0, 4.0])
        h = x * 1 if history else c
        y = x * h
        h.add_(1)
        with pytest.raises(RuntimeError) as error:
            y.sum().backward()
        text = re.sub(r"\[\S+ \[2\]\]", "[t]", str(error.value).split(" Hint")[0])
        return re.sub(r"(Backward\d*)?, is at", ", is at", text)

    for history in (True, False):
        assert message(jg, history) == message(torch, history)


def test_detach_in_place_refuses_a_view_as_pytorch_does():
    torch = pytest.importorskip("torch")
    messages = []
    for lib in (jg, torch):
        y = lib.tensor([1.0, 2.0, 3.0], requires_grad=True) * 2
        with pytest.raises(RuntimeError) as error:
            y[1:].detach_()
        y.detach_()
        messages.append((str(error.value), y.requires_grad, y.grad_fn is None))
    assert messages[0] == messages[1]


def test_zero_grad_keeps_a_gradient_that_is_a_view():
    weight = jg.tensor([1.0, 2.0], requires_grad=True)
    buffer = jg.zeros(4)
    weight.grad = buffer[::2]
    (weight * weight).sum().backward()
    jg.optim.SGD([weight], lr=0.1).zero_grad(set_to_none=False)
    assert weight.grad.tolist() == [0.0, 0.0] and buffer.tolist() == [0.0, 0.0, 0.0, 0.0]


def test_setitem_of_a_value_that_does_not_broadcast_is_a_runtime_error_as_in_pytorch():
    torch = pytest.importorskip("torch")
    for lib in (jg, torch):
        for index in (slice(0, 2), [0, 1]):
            with pytest.raises(RuntimeError):
                lib.zeros(3)[index] = lib.tensor([1.0, 2.0, 3.0])
