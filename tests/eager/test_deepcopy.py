"""``copy.deepcopy`` and ``pickle`` of tensors, as PyTorch's: tensors copied together that shared memory share the copy
(a view and its base stay one memory, with one version counter), the values, ``requires_grad`` and the
gradient are copied, and a tensor with history is refused. Until 2026-11-28 each array was copied
alone (a write into the copied base did not reach the copied view) and the graph behind a non-leaf was
copied with it, and pickling a view or a tensor with history failed on the graph's nodes."""
from __future__ import annotations

import copy
import pickle

import pytest

import jitgrad as jg


def test_a_view_copied_with_its_base_shares_the_copied_memory():
    base = jg.tensor([1.0, 2.0, 3.0])
    view = base[1:]
    copied_base, copied_view = copy.deepcopy([base, view])
    copied_base.add_(10)
    assert copied_view.tolist() == [12.0, 13.0] and base.tolist() == [1.0, 2.0, 3.0]
    assert copied_view._version == copied_base._version


def test_a_leaf_keeps_requires_grad_and_a_copy_of_its_gradient():
    leaf = jg.tensor([1.0, 2.0], requires_grad=True)
    (leaf * 2).sum().backward()
    copied = copy.deepcopy(leaf)
    assert copied.requires_grad and copied.is_leaf and copied.grad.tolist() == [2.0, 2.0]
    copied.grad.add_(1)
    assert leaf.grad.tolist() == [2.0, 2.0]
    transposed = jg.arange(6.0).reshape(2, 3).t()
    assert copy.deepcopy(transposed).tolist() == transposed.tolist()


def test_a_tensor_with_history_is_refused():
    leaf = jg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(leaf * 3)
    assert copy.deepcopy((leaf * 3).detach()).tolist() == [3.0, 6.0]


def test_pickle_keeps_values_sharing_class_and_requires_grad():
    base = jg.tensor([1.0, 2.0, 3.0])
    leaf = jg.tensor([1.0, 2.0], requires_grad=True)
    layer = jg.nn.Linear(2, 2)
    loaded_base, loaded_view, again, product, loaded_layer, transposed = pickle.loads(pickle.dumps(
        [base, base[1:], base, leaf * 2, layer, jg.arange(6.0).reshape(2, 3).t()]))
    loaded_base.add_(5)
    assert loaded_view.tolist() == [7.0, 8.0] and again is loaded_base and base.tolist() == [1.0, 2.0, 3.0]
    assert product.tolist() == [2.0, 4.0] and product.requires_grad and product.is_leaf
    assert type(loaded_layer.weight) is jg.nn.Parameter and loaded_layer.weight.requires_grad
    assert loaded_layer.weight.tolist() == layer.weight.tolist()
    assert transposed.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
