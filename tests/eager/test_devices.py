"""The device class and the device surface of CPU tensors, in the normal suite (no numba needed):
``jitgrad.device`` as ``torch.device``, ``.device``/``.to``/``.cpu`` on the CPU, and what happens
when CUDA is asked for where it is not available. tests/cuda tests CUDA tensors themselves."""
import pickle
import subprocess
import sys

import numpy as np
import pytest

import jitgrad as jg


def test_device_parses_and_prints_as_torch_device():
    d = jg.device("cuda:0")
    assert (d.type, d.index) == ("cuda", 0)
    assert repr(d) == "device(type='cuda', index=0)" and str(d) == "cuda:0"
    assert jg.device("cuda", 0) == d == "cuda:0" and d != "cuda" and d != "cpu"
    assert repr(jg.device("cuda")) == "device(type='cuda')" and jg.device("cuda") == "cuda"
    assert jg.device("cpu") == "cpu" and str(jg.device("cpu")) == "cpu"
    assert jg.device(d) == d and hash(jg.device("cuda", 0)) == hash(d)
    assert len({jg.device("cpu"), jg.device("cpu"), d}) == 2
    assert pickle.loads(pickle.dumps(d)) == d
    assert d != 0 and d != "not a device"


@pytest.mark.parametrize("text, error", [
    ("gpu", "Expected one of cpu, cuda device type at start of device string: gpu"),
    ("cuda:x", "Invalid device string: 'cuda:x'"),
])
def test_device_refuses_bad_strings(text, error):
    with pytest.raises(RuntimeError, match=error):
        jg.device(text)
    with pytest.raises(RuntimeError, match="must not include an index"):
        jg.device("cuda:0", 0)


def test_cpu_tensors_report_the_cpu_and_stay_put():
    x = jg.ones(2, 3)
    assert x.device == jg.device("cpu") and x.device == "cpu" and not x.is_cuda
    assert x.to("cpu") is x and x.cpu() is x and x.to(jg.device("cpu")) is x
    assert x.to("cpu", jg.float64).dtype == jg.float64
    assert x.to(dtype=jg.float64, device="cpu").dtype == jg.float64
    copied = x.to("cpu", copy=True)
    assert copied is not x and not np.shares_memory(copied.numpy(), x.numpy())
    assert jg.zeros(2, device="cpu").device == "cpu" and jg.ones_like(x, device="cpu").device == "cpu"
    assert "device" not in repr(x)


def test_a_copy_to_the_cpu_is_differentiable_as_pytorchs_to_copy():
    x = jg.tensor([1.0, 2.0], requires_grad=True)
    y = x.to("cpu", copy=True)
    assert y.grad_fn.name() == "ToCopyBackward0"
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_a_cpu_only_program_never_imports_numba_cuda():
    code = ("import sys, jitgrad as jg\n"
            "x = jg.ones(3, requires_grad=True); (x * 2).sum().backward()\n"
            "x.to('cpu'); repr(x); jg.device('cuda')\n"
            "print('numba.cuda' in sys.modules, jg.device.__module__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "jitgrad.device"]


@pytest.mark.skipif(jg.cuda.is_available(), reason="CUDA is available here: tests/cuda tests it")
def test_asking_for_cuda_without_it_says_how_to_get_the_simulator():
    assert jg.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match="NUMBA_ENABLE_CUDASIM=1"):
        jg.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match="NUMBA_ENABLE_CUDASIM=1"):
        jg.ones(2).cuda()


def test_only_cuda_0_exists():
    with pytest.raises(RuntimeError, match="invalid device ordinal 1"):
        jg.ones(2, device="cuda:1")
