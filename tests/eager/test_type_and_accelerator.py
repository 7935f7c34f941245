"""Two spellings PyTorch's tutorials use: ``Tensor.type`` (``(pred == y).type(torch.float).sum()``) and
``torch.accelerator`` (to choose a device), compared with PyTorch where it is installed."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad


@pytest.mark.parametrize("values,name", [([1, 2], "LongTensor"), ([1.0], "FloatTensor"), ([True], "BoolTensor")])
def test_type_names_and_casts(values, name):
    x = jitgrad.tensor(values)
    assert x.type() == f"jitgrad.{name}"
    assert (x == 1).type(jitgrad.float).dtype == jitgrad.float32
    assert x.type("jitgrad.DoubleTensor").dtype == jitgrad.float64
    assert x.type("torch.LongTensor").dtype == jitgrad.int64
    with pytest.raises(RuntimeError, match="invalid type: 'torch.NoSuchTensor'"):
        x.type("torch.NoSuchTensor")
    torch = pytest.importorskip("torch")
    assert torch.tensor(values).type() == f"torch.{name}"


def test_type_is_differentiable():
    x = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    x.type(jitgrad.float64).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


def test_accelerator_without_a_gpu(monkeypatch):
    monkeypatch.setattr(jitgrad.cuda, "is_available", lambda: False)
    assert not jitgrad.accelerator.is_available()
    assert jitgrad.accelerator.current_accelerator() is None
    assert jitgrad.accelerator.device_count() == 0
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available."):
        jitgrad.accelerator.current_device_index()
    jitgrad.accelerator.synchronize()
    device = jitgrad.accelerator.current_accelerator().type if jitgrad.accelerator.is_available() else "cpu"
    assert jitgrad.ones(2).to(device).device.type == "cpu"


def test_accelerator_with_one(monkeypatch):
    monkeypatch.setattr(jitgrad.cuda, "is_available", lambda: True)
    assert jitgrad.accelerator.current_accelerator() == jitgrad.device("cuda")
    assert jitgrad.accelerator.current_device_index() == 0
