"""CUDA tensors with no kernel run: the device API, factories, copies between devices, the errors
PyTorch gives, and the engine's device metadata and streams (a copy's backward is a copy, so a graph
of copies needs no kernel)."""
import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd import engine


def test_the_cuda_module_reports_one_gpu():
    assert jg.cuda.is_available()
    assert jg.cuda.device_count() == 1
    assert jg.cuda.current_device() == 0
    jg.cuda.synchronize()
    stream = jg.cuda.current_stream()
    assert isinstance(stream, jg.cuda.Stream)
    assert stream == jg.cuda.current_stream()
    other = jg.cuda.Stream()
    assert other != stream
    with jg.cuda.stream(other):
        assert jg.cuda.current_stream() == other
    assert jg.cuda.current_stream() == stream
    other.synchronize()


@pytest.mark.parametrize("make", [
    lambda d: jg.zeros(2, 3, device=d), lambda d: jg.ones((2, 3), device=d), lambda d: jg.empty(2, 3, device=d),
    lambda d: jg.full((2, 3), 1.5, device=d), lambda d: jg.arange(6, device=d), lambda d: jg.eye(3, device=d),
    lambda d: jg.tensor([[1.0, 2.0], [3.0, 4.0]], device=d), lambda d: jg.as_tensor([1, 2], device=d),
    lambda d: jg.randn(2, 3, device=d), lambda d: jg.rand(4, device=d),
])
def test_every_factory_makes_a_cuda_tensor_with_the_cpu_values(make):
    jg.manual_seed(0)
    cpu = make("cpu")
    jg.manual_seed(0)
    cuda = make("cuda")
    assert cuda.device == jg.device("cuda", 0) and cuda.is_cuda
    assert cpu.device == "cpu" and not cpu.is_cuda
    assert cuda.dtype == cpu.dtype and cuda.shape == cpu.shape
    if make(jg.device("cpu")).numel() and "empty" not in repr(make):
        np.testing.assert_array_equal(cuda.cpu().numpy(), cpu.numpy())


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "randn_like", "rand_like"])
def test_like_factories_keep_the_device_unless_told(name):
    x = jg.ones(2, 3, device="cuda")
    assert getattr(jg, name)(x).device == "cuda:0"
    assert getattr(jg, name)(x, device="cpu").device == "cpu"
    assert jg.full_like(x, 2.0).device == "cuda:0"
    assert getattr(jg, name)(jg.ones(2), device="cuda").is_cuda


def test_to_cuda_and_back_round_trips_values_and_dtypes():
    x = jg.tensor([[1.5, -2.0, 3.25]])
    y = x.to("cuda")
    assert y.device == jg.device("cuda:0") and str(y.device) == "cuda:0"
    assert x.cuda().is_cuda and x.to(jg.device("cuda")).is_cuda and x.to(device=0).is_cuda
    back = y.cpu()
    assert back.device == "cpu"
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    assert y.to("cuda") is y and x.to("cpu") is x and back.cpu() is back
    cast = x.to("cuda", jg.float64)
    assert cast.is_cuda and cast.dtype == jg.float64
    assert y.to(jg.ones(1, dtype=jg.float64)).device == "cpu"
    assert x.to(cast).dtype == jg.float64 and x.to(cast).is_cuda


def test_host_reads_copy_and_numpy_refuses():
    y = jg.tensor([[1.0, 2.0]], device="cuda")
    assert y.tolist() == [[1.0, 2.0]]
    assert jg.tensor(7.0, device="cuda").item() == 7.0
    assert f"{jg.tensor(0.5, device='cuda'):.2f}" == "0.50"
    with pytest.raises(TypeError, match=r"^can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu\(\) "
                                        r"to copy the tensor to host memory first.$"):
        y.numpy()
    with pytest.raises(TypeError, match="can't convert cuda:0"):
        np.asarray(y)


def test_repr_names_the_device_as_pytorch_does():
    assert repr(jg.tensor([1.0, 2.0], device="cuda")) == "tensor([1., 2.], device='cuda:0')"
    assert repr(jg.tensor([1, 2], dtype=jg.int32, device="cuda")) == \
        "tensor([1, 2], device='cuda:0', dtype=jitgrad.int32)"
    assert repr(jg.ones(2, device="cuda", requires_grad=True)) == \
        "tensor([1., 1.], device='cuda:0', requires_grad=True)"
    assert repr(jg.tensor([1.0, 2.0])) == "tensor([1., 2.])"


def test_mixing_devices_in_an_op_is_pytorchs_error():
    message = r"^Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!$"
    with pytest.raises(RuntimeError, match=message):
        jg.ones(3, device="cuda") + jg.ones(3)
    with pytest.raises(RuntimeError, match=message):
        jg.ones(3) * jg.ones(3, device="cuda")
    with pytest.raises(RuntimeError, match=message):
        jg.ones(2, 3, device="cuda") - jg.ones(3)


def test_assigning_a_grad_on_another_device_is_refused():
    w = jg.ones(3, device="cuda", requires_grad=True)
    with pytest.raises(RuntimeError, match="assigned grad has data located on a different device"):
        w.grad = jg.ones(3)
    c = jg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="assigned grad has data located on a different device"):
        c.grad = jg.ones(3, device="cuda")
    w.grad = jg.zeros(3, device="cuda")
    assert w.grad.is_cuda


def test_gradient_of_a_cuda_leaf_is_a_cuda_tensor_through_copies():
    w = jg.tensor([1.0, 2.0, 3.0], device="cuda", requires_grad=True)
    y = w.cpu()
    assert y.grad_fn.name() == "ToCopyBackward0"
    y.backward(jg.tensor([0.5, 1.0, 2.0]))
    assert w.grad.is_cuda
    np.testing.assert_array_equal(w.grad.cpu().numpy(), [0.5, 1.0, 2.0])


def test_gradient_of_a_cpu_leaf_comes_back_to_the_cpu():
    x = jg.tensor([1.0, -1.0], requires_grad=True)
    y = x.cuda()
    y.backward(jg.tensor([3.0, 4.0], device="cuda"))
    assert x.grad.device == "cpu"
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])


def test_input_metadata_records_the_device():
    x = jg.ones(2, requires_grad=True)
    y = x.cuda()
    assert y.grad_fn.input_metadata(0).device == jg.device("cuda", 0)
    z = y.cpu()
    assert z.grad_fn.input_metadata(0).device == "cpu"
    w = jg.ones(2, device="cuda", requires_grad=True)
    assert w.cpu().grad_fn.next_functions[0][0].input_metadata(0).device == "cuda:0"


def test_a_gradient_on_the_wrong_device_is_refused():
    x = jg.ones(2, requires_grad=True)
    y = x.cuda()
    with pytest.raises(RuntimeError, match="invalid gradient at index 0 - expected device cuda:0 but got cpu"):
        y.backward(jg.ones(2))


def test_the_engine_queues_cuda_nodes_on_their_device_and_syncs_leaf_streams(monkeypatch):
    synced = []
    stream = jg.cuda.Stream()
    monkeypatch.setattr(type(stream.numba_stream), "synchronize",
                        lambda self: synced.append(self), raising=False)
    w = jg.ones(3, device="cuda", requires_grad=True)
    loss = w.cpu()
    pushed = []
    original = engine.ReadyQueues.push

    def push(self, task, fn, inputs):
        pushed.append((fn.name(), str(inputs.device())))
        original(self, task, fn, inputs)
    monkeypatch.setattr(engine.ReadyQueues, "push", push)
    with jg.cuda.stream(stream):
        loss.backward(jg.ones(3))
    assert ("ToCopyBackward0", "cpu") in pushed and ("AccumulateGrad", "cuda:0") in pushed
    assert any(s is stream.numba_stream for s in synced)
    assert w.grad.is_cuda


def test_tensor_of_a_cuda_tensor_is_a_copy_on_its_device():
    x = jg.tensor([1.0, 2.0], device="cuda")
    y = jg.tensor(x)
    assert y.is_cuda and y.tolist() == [1.0, 2.0]
    assert jg.tensor(x, device="cpu").device == "cpu"
    assert jg.as_tensor(x) is x and jg.as_tensor(x, device="cpu").device == "cpu"


def test_deepcopy_and_pickle_of_a_cuda_tensor_copy_its_values_on_the_device():
    """Until 2026-11-28 a deep copy called the device array's copy_to_device on itself, which returns
    None: the copy held no data."""
    import copy
    import pickle

    x = jg.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    copied, loaded = copy.deepcopy(x), pickle.loads(pickle.dumps(x))
    copied.detach().add_(1)
    assert copied.device.type == loaded.device.type == "cuda" and copied.requires_grad and loaded.requires_grad
    assert copied.tolist() == [2.0, 3.0] and loaded.tolist() == [1.0, 2.0] and x.tolist() == [1.0, 2.0]
