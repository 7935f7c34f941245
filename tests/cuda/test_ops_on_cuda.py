"""Ops on CUDA tensors against the same ops on the CPU, forward and ``.grad``: they need the CUDA
backend's eager runner (``jitgrad.backends.numba_cuda.eager``), and are skipped without it."""
import numpy as np
import pytest

import jitgrad as jg

pytest.importorskip("jitgrad.backends.numba_cuda.eager", reason="the CUDA backend's eager runner is not here")

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
M = RNG.standard_normal((4, 2)).astype(np.float32)

CASES = {
    "add": lambda a, b, m: a + b,
    "mul_broadcast": lambda a, b, m: a * b[0],
    "exp_sum": lambda a, b, m: a.exp().sum(),
    "matmul": lambda a, b, m: a @ m,
    "relu_mean": lambda a, b, m: jg.relu(a - b).mean(dim=1),
    "softmax": lambda a, b, m: jg.softmax(a, dim=-1) * b,
    "reshape_transpose": lambda a, b, m: a.reshape(4, 3).T * b,
    "scalar": lambda a, b, m: a * 2.0 + jg.tensor(3.0),
}


def _run(case, device):
    a = jg.tensor(A, device=device, requires_grad=True)
    b = jg.tensor(B, device=device, requires_grad=True)
    m = jg.tensor(M, device=device, requires_grad=True)
    out = CASES[case](a, b, m)
    out.sum().backward()
    return out, (a.grad, b.grad, m.grad)


@pytest.mark.parametrize("case", sorted(CASES))
def test_forward_and_grads_match_the_cpu(case):
    cpu_out, cpu_grads = _run(case, "cpu")
    cuda_out, cuda_grads = _run(case, "cuda")
    assert cuda_out.is_cuda and cuda_out.shape == cpu_out.shape and cuda_out.dtype == cpu_out.dtype
    np.testing.assert_allclose(cuda_out.detach().cpu().numpy(), cpu_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    for cpu_grad, cuda_grad in zip(cpu_grads, cuda_grads):
        assert (cpu_grad is None) == (cuda_grad is None)
        if cpu_grad is not None:
            assert cuda_grad.is_cuda
            np.testing.assert_allclose(cuda_grad.cpu().numpy(), cpu_grad.numpy(), rtol=1e-5, atol=1e-6)


def test_gradients_of_several_edges_are_summed_on_the_device_and_accumulate():
    w = jg.tensor(A, device="cuda", requires_grad=True)
    for _ in range(2):
        (w * w + w.exp()).sum().backward()
    expected = 2 * (2 * A + np.exp(A))
    assert w.grad.is_cuda
    np.testing.assert_allclose(w.grad.cpu().numpy(), expected, rtol=1e-5)


def test_a_later_gradient_is_added_into_the_held_cuda_grad():
    """As on the CPU (and in PyTorch): a ``.grad`` held across backwards sees the sum, in its memory."""
    w = jg.tensor(A, device="cuda", requires_grad=True)
    (w * 2).sum().backward()
    held, version = w.grad, w.grad._version
    (w * 3).sum().backward()
    assert held is w.grad and held._version > version
    np.testing.assert_allclose(held.cpu().numpy(), np.full_like(A, 5.0))


def test_in_place_ops_on_a_cuda_view_change_the_base():
    x = jg.tensor(A, device="cuda")
    x[0].add_(1.0)
    x[1] = 5.0
    expected = A.copy()
    expected[0] += 1.0
    expected[1] = 5.0
    np.testing.assert_allclose(x.cpu().numpy(), expected)


def test_in_place_op_in_a_graph_matches_the_cpu():
    def run(device):
        w = jg.tensor(A, device=device, requires_grad=True)
        y = w * 2.0
        y.mul_(w)
        y.sum().backward()
        return y, w.grad
    (cpu_y, cpu_g), (cuda_y, cuda_g) = run("cpu"), run("cuda")
    np.testing.assert_allclose(cuda_y.detach().cpu().numpy(), cpu_y.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(cuda_g.cpu().numpy(), cpu_g.numpy(), rtol=1e-6)


def test_a_0d_cpu_tensor_joins_a_cuda_op():
    out = jg.tensor(A, device="cuda") * jg.tensor(2.0)
    assert out.is_cuda
    np.testing.assert_allclose(out.cpu().numpy(), A * 2.0)


def test_backward_from_a_cuda_loss_seeds_on_the_device():
    w = jg.tensor(A, device="cuda", requires_grad=True)
    (w * 3.0).sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), np.full_like(A, 3.0))
    g, = jg.autograd.grad((w * w).sum(), [w])
    assert g.is_cuda
    np.testing.assert_allclose(g.cpu().numpy(), 2 * A, rtol=1e-6)


def test_gradcheck_runs_on_cuda_inputs():
    x = jg.tensor(RNG.standard_normal((2, 3)), device="cuda", requires_grad=True)
    assert jg.autograd.gradcheck(lambda t: (t * t).sum(dim=0), (x,))


def test_save_and_load_keep_the_device(tmp_path):
    x = jg.tensor(A, device="cuda")
    jg.save({"x": x}, tmp_path / "x.jg")
    loaded = jg.load(tmp_path / "x.jg")["x"]
    assert loaded.is_cuda
    np.testing.assert_array_equal(loaded.cpu().numpy(), A)
    on_cpu = jg.load(tmp_path / "x.jg", map_location="cpu")["x"]
    assert on_cpu.device == "cpu"
    np.testing.assert_array_equal(on_cpu.numpy(), A)


def test_save_on_cpu_hooks_bring_saved_tensors_back_to_the_device():
    w = jg.tensor(A, device="cuda", requires_grad=True)
    with jg.autograd.graph.save_on_cpu():
        y = (w * w).sum()
    y.backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), 2 * A, rtol=1e-6)


def test_a_model_made_on_cuda_matches_the_cpu_and_moves_back():
    jg.manual_seed(0)
    cpu = jg.nn.Sequential(jg.nn.Linear(3, 4), jg.nn.ReLU(), jg.nn.Linear(4, 2))
    jg.manual_seed(0)
    gpu = jg.nn.Sequential(jg.nn.Linear(3, 4, device="cuda"), jg.nn.ReLU(), jg.nn.Linear(4, 2, device="cuda"))
    x = jg.tensor(A[:, :3])
    cpu(x).sum().backward()
    gpu(x.cuda()).sum().backward()
    for p, q in zip(cpu.parameters(), gpu.parameters()):
        assert q.is_cuda and q.grad.is_cuda
        np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().numpy())
        np.testing.assert_allclose(q.grad.cpu().numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)
    jg.optim.SGD(gpu.parameters(), lr=0.1).step()
    jg.optim.SGD(cpu.parameters(), lr=0.1).step()
    moved = gpu.cpu()
    for p, q in zip(cpu.parameters(), moved.parameters()):
        assert q.device == "cpu" and q.grad.device == "cpu"
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert all(p.is_cuda for p in cpu.cuda().parameters())
    bn = jg.nn.BatchNorm1d(3, device="cuda")
    assert bn(x.cuda()).is_cuda and bn.running_mean.is_cuda


def test_indexing_with_a_cuda_index_tensor_matches_the_cpu():
    def run(device):
        x = jg.tensor(A, device=device, requires_grad=True)
        index = jg.tensor([2, 0, 2], device=device)
        y = x[:, index]
        y.sum().backward()
        return y.detach().cpu().numpy(), x.grad.cpu().numpy()
    for cpu, cuda in zip(run("cpu"), run("cuda")):
        np.testing.assert_allclose(cuda, cpu)
