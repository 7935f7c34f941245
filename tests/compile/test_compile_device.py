"""Which backend a compiled function lowers with, and that the device is part of its guards.

CUDA tensors do not exist in a CPU-only run, so these tests stand one in: a numpy array of a marked
subclass that ``placement.array_device`` (and the guards' reference to it) reports on ``cuda:0``, and
a fake ``jitgrad.backends.numba_cuda`` whose ``lower`` runs the interpreter. The real thing, CPU then
CUDA tensors through one compiled function, is tests/cuda/test_compiled_device.py on the simulator.
"""
from __future__ import annotations

import types

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.compile import backend as backend_module
from jitgrad.compile import CompileWarning, guards, placement
from jitgrad.compile.capture import Unsupported


class MarkedArray(np.ndarray):
    """An array the patched ``array_device`` places on ``cuda:0``."""


def _array_device(data):
    return "cuda:0" if isinstance(data, MarkedArray) else "cpu"


def _on_cuda(t: jg.Tensor) -> jg.Tensor:
    t._data = t._data.view(MarkedArray)
    return t


@pytest.fixture
def fake_cuda(monkeypatch):
    """The CUDA backend replaced by the interpreter on plain arrays; returns the graphs it lowered."""
    lowered = []

    def lower(graph, **options):
        lowered.append(graph)
        run = backend_module.interpret(graph)
        return lambda *arrays: run(*[np.asarray(a) if isinstance(a, np.ndarray) else a for a in arrays])

    module = types.SimpleNamespace(lower=lower, LoweringError=backend_module.LoweringError)
    monkeypatch.setattr(backend_module, "_cuda_module", lambda: module)
    monkeypatch.setattr(placement, "array_device", _array_device)
    monkeypatch.setattr(guards, "array_device", _array_device)
    return lowered


def test_get_backend_knows_cpu_and_cuda_and_refuses_other_devices(fake_cuda):
    assert backend_module.get_backend("cpu").name in ("interpreter", "numba_cpu")
    assert backend_module.get_backend("cuda").name == "numba_cuda"
    assert backend_module.get_backend("cuda:1").name == "numba_cuda"
    with pytest.raises(ValueError, match="device 'tpu' is not supported"):
        backend_module.get_backend("tpu")


def test_the_cuda_backend_missing_says_what_to_install(monkeypatch):
    def missing(name):
        raise ImportError(f"No module named {name!r}")
    monkeypatch.setattr(backend_module.importlib, "import_module", missing)
    with pytest.raises(ImportError, match=r"pip install 'jitgrad\[cuda\]'"):
        backend_module.get_backend("cuda")


def test_the_call_device_is_the_inputs_one(fake_cuda):
    cpu, cuda = jg.ones(2), _on_cuda(jg.ones(2))
    assert placement.call_device([cpu, cpu]) == "cpu"
    assert placement.call_device([cuda]) == "cuda:0"
    assert placement.call_device([]) == "cpu"
    assert placement.call_device([], "cuda") == "cuda"
    assert placement.call_device([cuda], "cuda") == "cuda:0"
    with pytest.raises(Unsupported, match=r"several devices \(cpu, cuda:0\)"):
        placement.call_device([cpu, cuda])
    scalar = jg.tensor(1.0)  # a step's 0-d CPU tensors (an optimizer's step count) join its CUDA program
    assert placement.call_device([scalar, cuda], host_scalars=True) == "cuda:0"
    assert placement.call_device([scalar, cuda], "cuda", host_scalars=True) == "cuda:0"
    assert placement.call_device([scalar], host_scalars=True) == "cpu"
    with pytest.raises(Unsupported, match="several devices"):
        placement.call_device([scalar, cuda])
    with pytest.raises(Unsupported, match="several devices"):
        placement.call_device([scalar, cpu, cuda], host_scalars=True)
    with pytest.raises(RuntimeError, match=r"device='cuda'.*inputs are on cpu.*\.to\('cuda'\)"):
        placement.call_device([cpu], "cuda")
    with pytest.raises(RuntimeError, match="inputs are on cuda:0"):
        placement.call_device([cuda], "cuda:1")


def test_a_device_change_is_a_recompile_named_in_the_log():
    old = guards.tensor_descriptor(jg.ones(3))
    assert old[6] == "cpu"
    new = old[:6] + ("cuda:0",) + old[7:]
    miss = guards.describe_miss((True, None, None, old, True), (True, None, None, new, True), ["", "", "", "x", ""])
    assert miss.reason == "x: device was cpu, now cuda:0"
    assert not miss.retrace  # another backend's kernels: nothing to reuse


def test_cpu_then_cuda_inputs_get_programs_of_their_own_backend(fake_cuda):
    @jg.compile
    def f(x, w):
        return (x * w).tanh().sum()

    x, w = jg.randn(4), jg.randn(4, requires_grad=True)
    cpu_loss = f(x, w)
    cpu_loss.backward()
    expected = w.grad.numpy().copy()
    assert not fake_cuda
    xc, wc = _on_cuda(jg.tensor(x.numpy())), _on_cuda(jg.tensor(w.detach().numpy(), requires_grad=True))
    cuda_loss = f(xc, wc)
    cuda_loss.backward()
    assert fake_cuda, "the CUDA call must lower with the CUDA backend"
    assert [p.backend.name for p in f.programs] == [f.backend.name, "numba_cuda"]
    assert any("device was cpu, now cuda:0" in line for line in f.log)
    np.testing.assert_allclose(cuda_loss.item(), cpu_loss.item(), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(wc.grad._data), expected, rtol=1e-6)
    w.grad = None
    f(x, w)  # the CPU program is still there: no recompile
    assert len(f.programs) == 2 and f.recompiles == 1


def test_mixed_devices_run_eagerly_with_a_warning(fake_cuda):
    @jg.compile
    def f(x, w):
        return x + w

    with pytest.warns(CompileWarning, match="several devices"):
        f(jg.ones(2), _on_cuda(jg.ones(2)))
    assert not fake_cuda


def test_device_argument_refuses_inputs_elsewhere(fake_cuda):
    f = jg.compile(lambda x: x * 2, device="cuda")
    assert f.backend.name == "numba_cuda"
    with pytest.raises(RuntimeError, match=r"inputs are on cpu; move them with \.to\('cuda'\)"):
        f(jg.ones(2))
    np.testing.assert_array_equal(np.asarray(f(_on_cuda(jg.ones(2)))._data), [2.0, 2.0])


def test_aot_eager_runs_a_cuda_call_eagerly(fake_cuda):
    """``backend="aot_eager"`` runs graphs on the interpreter, on the CPU only: a call with CUDA tensors
    runs eagerly with a warning, and nothing is handed to the CUDA backend."""
    f = jg.compile(lambda x: (x * 2).sum(), backend="aot_eager", cache=False)
    with pytest.warns(CompileWarning, match="aot_eager.*on the CPU only.*on cuda"):
        assert f(_on_cuda(jg.ones(3, requires_grad=True))).item() == 6.0
    assert fake_cuda == [] and f.programs == []
