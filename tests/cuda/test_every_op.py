"""Every op sample (tests/op_samples.py) run eagerly on CUDA tensors against the same sample on the CPU,
forward and backward: the outputs (copied back with ``.cpu()``) and every leaf's ``.grad`` (a CUDA
tensor) must be the CPU's. Together with the coverage test below, every op of the registry runs on CUDA
or is excluded here with the reason why.

The samples close over a few constant tensors (``where``'s condition, ``nll_loss``'s classes, an index)
made with ``jg.tensor``/``jg.zeros`` and no ``device=``; jitgrad has no default-device setting, so the
CUDA run makes those constants on the device (as a PyTorch user would write ``device="cuda"``).
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.ops.registry import REGISTRY, observing

from helpers import assert_close
from op_samples import SAMPLES

pytest.importorskip("jitgrad.backends.numba_cuda.eager", reason="the CUDA backend's eager runner is not here")

# Ops no sample run on CUDA reaches, and why. Empty: every registry op runs on CUDA tensors.
EXCLUDED: dict[str, str] = {}


def _on(device: str, factory):
    """``factory`` (jg.tensor, jg.zeros) making its tensors on ``device`` unless told otherwise."""
    def make(*args, **kwargs):
        kwargs.setdefault("device", device)
        return factory(*args, **kwargs)
    return make


def _outputs(out) -> list:
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _floating(sample) -> bool:
    return any(a.dtype.kind == "f" for a in sample.arrays())


def _in_float32(sample) -> bool:
    """Whether the sample also runs in float32: where its op's kernel is generated from the op's scalar
    maths (elementwise ops and reductions), whose float32 spelling (``math.exp`` of a float32, constants
    cast to float32) differs from float64's. The kernel library's float32 kernels are tested against
    numpy in tests/cuda/test_kernels_*.py; running every sample twice would double the simulator's time."""
    return _floating(sample) and REGISTRY[sample.op].kind in ("elementwise", "reduction")


REACHED: set[str] = set()   # ops the sample tests called with CUDA tensors
RAN: list = []              # the (sample, dtype) cases that ran to their end

CASES = [pytest.param(sample, dtype, id=f"{sample.id}-{np.dtype(dtype).name}")
         for sample in SAMPLES for dtype in (np.float64, np.float32) if dtype == np.float64 or _in_float32(sample)]


def _on_cuda(args, output) -> bool:
    """Whether an observed call ran on CUDA: a CUDA tensor among its arguments or outputs."""
    values = [*args, *(output if isinstance(output, (list, tuple)) else (output,))]
    flat = [v for a in values for v in (a if isinstance(a, (list, tuple)) else (a,))]
    return any(getattr(v, "is_cuda", False) for v in flat)


def _run(sample, dtype, device: str, monkeypatch, seen_ops: set | None = None):
    """The sample's outputs (its floating inputs in ``dtype``) and its leaves' ``.grad`` after
    ``backward`` with a seed gradient of the outputs' shapes (the same numbers on both devices)."""
    arrays = [a.astype(dtype) if a.dtype.kind == "f" else a for a in sample.arrays()]
    leaves = [jg.tensor(a, device=device, requires_grad=sample.differentiable and a.dtype.kind == "f")
              for a in arrays]
    with monkeypatch.context() as patch:
        if device == "cuda":
            patch.setattr(jg, "tensor", _on("cuda", jg.tensor))
            patch.setattr(jg, "zeros", _on("cuda", jg.zeros))
        with observing(lambda op, args, attrs, output: seen_ops is None or not _on_cuda(args, output)
                       or seen_ops.add(op.name)):
            outs = _outputs(sample.fn(*leaves))
            grads = None
            if sample.differentiable and any(o.requires_grad for o in outs):
                rng = np.random.default_rng(1)
                differentiable = [o for o in outs if o.requires_grad]
                seeds = [jg.tensor(rng.uniform(0.5, 1.5, o.shape).astype(o.dtype.numpy), device=o.device)
                         for o in differentiable]
                jg.autograd.backward(differentiable, seeds)
                grads = [leaf.grad for leaf in leaves]
    return outs, grads


def _host(t):
    return None if t is None else t.detach().cpu().numpy()


@pytest.mark.parametrize("sample, dtype", CASES)
def test_sample_on_cuda_matches_the_cpu(sample, dtype, monkeypatch):
    """Tolerances as the CPU backend's sample tests (helpers.TOLERANCES by each value's dtype: float32
    looser, integers and booleans exact)."""
    cpu_outs, cpu_grads = _run(sample, dtype, "cpu", monkeypatch)
    cuda_outs, cuda_grads = _run(sample, dtype, "cuda", monkeypatch, REACHED)
    assert len(cuda_outs) == len(cpu_outs)
    for i, (got, want) in enumerate(zip(cuda_outs, cpu_outs)):
        expected_device = "cpu" if sample.op == "to_device" else "cuda"  # that sample copies to the host
        assert got.device.type == expected_device, f"output {i} on {got.device}"
        assert got.dtype == want.dtype, f"output {i}: dtype {got.dtype} != {want.dtype}"
        assert_close(_host(got), _host(want), f"{sample.id} output {i}", dtype=want.dtype.numpy)
    assert (cuda_grads is None) == (cpu_grads is None)
    for i, (got, want) in enumerate(zip(cuda_grads or (), cpu_grads or ())):
        assert (got is None) == (want is None), f"leaf {i}: grad {got} vs {want}"
        if got is not None:
            assert got.is_cuda, f"leaf {i}: .grad on {got.device}"
            assert_close(_host(got), _host(want), f"{sample.id} grad of leaf {i}", dtype=want.dtype.numpy)
    RAN.append((sample, dtype))


def test_every_registry_op_runs_on_cuda_or_is_excluded():
    """No silent gaps: each op of the registry is called with CUDA tensors by some sample (forward or
    backward), or listed in EXCLUDED with its reason. It reads what the sample tests above reached
    (pytest runs a file's tests in order), so it needs all of them to have run."""
    ran = {sample.id for sample, dtype in RAN if dtype == np.float64}
    if ran != {sample.id for sample in SAMPLES}:
        pytest.skip("run every sample of this file (no -k) to check that every op is reached")
    missing = set(REGISTRY) - REACHED - set(EXCLUDED)
    assert not missing, f"ops no CUDA sample reaches and not excluded: {sorted(missing)}"
    assert not set(EXCLUDED) & REACHED, "an excluded op runs on CUDA: take it off the list"


@pytest.mark.parametrize("name, kwargs", [("rand", {}), ("randn", {}),
                                          ("normal", {"mean": 1.5, "std": 0.5}), ("uniform", {"a": -2.0, "b": 3.0})])
@pytest.mark.parametrize("dtype", [jg.float32, jg.float64])
def test_random_factories_on_cuda_draw_the_cpu_generators_numbers(name, kwargs, dtype):
    def draw(device):
        jg.manual_seed(7)
        first = _random(name, (3, 5), dtype, device, kwargs)
        second = _random(name, (4,), dtype, device, kwargs)  # the generator moved on the same way
        return first, second
    for got, want in zip(draw("cuda"), draw("cpu")):
        assert got.is_cuda and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())


def _random(name: str, shape: tuple, dtype, device: str, kwargs: dict):
    """The factory ``name``: rand/randn as factories (and their _like forms), normal/uniform as
    ``nn.init``'s in-place fills of an empty tensor on the device."""
    if name in ("rand", "randn"):
        made = getattr(jg, name)(*shape, dtype=dtype, device=device)
        like = getattr(jg, f"{name}_like")(made)
        assert like.device == made.device
        return jg.cat([made.reshape(-1), like.reshape(-1)])
    return getattr(jg.nn.init, f"{name}_")(jg.empty(*shape, dtype=dtype, device=device), **kwargs)


def test_a_variadic_op_checks_the_device_of_every_tensor():
    """cat/stack see each tensor of their list (0-d ones too): a CPU one beside CUDA ones is PyTorch's
    error, and 0-d CUDA tensors stack on the device."""
    on_cuda, on_cpu = jg.tensor(1.0, device="cuda"), jg.ones(2)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        jg.cat([jg.ones(2, device="cuda"), on_cpu])
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        jg.stack([jg.ones(2, device="cuda"), jg.ones(2, device="cuda"), on_cpu])
    stacked = jg.stack([on_cuda, on_cuda * 2.0])
    assert stacked.is_cuda
    np.testing.assert_array_equal(stacked.cpu().numpy(), [1.0, 2.0])
