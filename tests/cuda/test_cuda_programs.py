"""What the CUDA programs promise besides their values: eager views share memory, in-place writes reach
through views, one module serves every size, reductions are deterministic, and errors name the op."""
from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from jitgrad.backends.numba_cuda import LoweringError, lower, structural_key
from jitgrad.backends.numba_cuda.eager import run_op, write_into
from jitgrad.backends.numba_cuda.kernels import linalg
from jitgrad.backends.numba_cuda.launch import THREADS
from jitgrad.ops.registry import REGISTRY

from cuda_programs import optimized_graph


def test_eager_views_share_the_input_memory_and_in_place_writes_reach_them():
    x = np.arange(24.0).reshape(2, 3, 4)
    device = cuda.to_device(x)
    row = run_op(REGISTRY["getitem"], (device,), {"index": (0, slice(1, None))})
    transposed = run_op(REGISTRY["permute"], (device,), {"dims": (2, 0, 1)})
    write_into(row, run_op(REGISTRY["add"], (row, 100.0), {}))
    expected = x.copy()
    expected[0, 1:] += 100.0
    assert np.array_equal(device.copy_to_host(), expected)
    assert np.array_equal(transposed.copy_to_host(), expected.transpose(2, 0, 1))


def test_a_reshape_of_a_strided_view_copies_and_elementwise_reads_any_strides():
    x = np.arange(12.0).reshape(3, 4)
    transposed = run_op(REGISTRY["transpose"], (cuda.to_device(x),), {"dim0": 0, "dim1": 1})
    flat = run_op(REGISTRY["reshape"], (transposed,), {"shape": (12,)})
    assert np.array_equal(flat.copy_to_host(), x.T.reshape(12))
    assert np.array_equal(run_op(REGISTRY["mul"], (transposed, 2.0), {}).copy_to_host(), x.T * 2.0)


def test_one_module_serves_every_size_and_every_number():
    def program(x):
        return (x * 3.0 + 1.0).sum(dim=1)
    small, large = [np.ones((2, 5))], [np.ones((3, 70))]
    graph_small, graph_large = optimized_graph(program, small), optimized_graph(program, large)
    assert structural_key(graph_small) == structural_key(graph_large)
    assert lower(graph_small).source == lower(graph_large).source
    got = lower(graph_large)(cuda.to_device(large[0]))[0].copy_to_host()
    assert np.allclose(got, np.full(3, 280.0))


def test_a_full_reduction_is_the_same_at_every_run_and_uses_two_kernels():
    x = np.random.default_rng(0).standard_normal(300).astype(np.float32)
    program = lower(optimized_graph(lambda t: t.sum(), [x]))
    device = cuda.to_device(x)
    runs = [program(device)[0].copy_to_host() for _ in range(2)]
    assert runs[0].tobytes() == runs[1].tobytes()
    assert np.isclose(runs[0], x.astype(np.float64).sum(), rtol=1e-5)
    assert [name for name, _, _ in program.launches] == ["fused_0_parts", "fused_0_join"]
    assert program.launches[0][1] > 1  # several blocks fold partial results


def test_launches_list_the_kernel_library_launches_with_their_grid_and_block():
    """``program.launches`` (what ``jitgrad.compile.explain`` shows) lists every kernel a call launched,
    those the kernel library's host functions launch (matmul, softmax) as well as the generated ones."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 5)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)
    program = lower(optimized_graph(lambda x, y: (x @ y).softmax(dim=1) * 2.0, [a, b]))
    got = program(cuda.to_device(a), cuda.to_device(b))[0].copy_to_host()
    logits = a.astype(np.float64) @ b
    expected = 2.0 * np.exp(logits - logits.max(1, keepdims=True)) / np.exp(logits - logits.max(1, keepdims=True)).sum(
        1, keepdims=True)
    assert np.allclose(got, expected, rtol=1e-5)
    launches = program.launches
    names = [name for name, _, _ in launches]
    assert names.index("batched_gemm_tiles") < names.index("softmax_rows") < len(names) - 1  # then the `* 2.0`
    assert launches[names.index("batched_gemm_tiles")][1:] == ((1, 1, 1), (linalg.SIDE, linalg.SIDE))
    assert launches[names.index("softmax_rows")][1:] == (3, THREADS)  # a block per row
    assert set(names) <= {name for name, _, _ in program.kernels}


def test_an_op_without_a_cuda_lowering_is_named():
    """Every registry op has a CUDA lowering today; an op naming an intrinsic this backend lacks (a new op
    whose CUDA code is not written yet) must say so by name, eagerly and when lowering a graph."""
    from jitgrad.fx.graph import Graph
    from jitgrad.fx.passes.fusion import group_fusions
    from jitgrad.fx.passes.memory import plan_memory
    from jitgrad.ops.lowering import intrinsic
    from jitgrad.ops.meta_rules import like
    from jitgrad.ops.registry import OpDef

    op = OpDef("shuffle_rows", ("self",), lambda a: a[::-1], meta=like(0), lower=intrinsic("shuffle_rows"))
    a = cuda.to_device(np.ones((2, 3)))
    with pytest.raises(NotImplementedError, match="Could not run 'shuffle_rows' with arguments from the 'CUDA' "
                                                  "backend"):
        run_op(op, (a,), {})
    graph = Graph()
    x = graph.placeholder("x", {"shape": (2, 3), "dtype": np.dtype(np.float64)})
    graph.output((graph.call_function(op, (x,), {}, meta={"shape": (2, 3), "dtype": np.dtype(np.float64)}),))
    with pytest.raises(LoweringError, match=r"no lowering for op 'shuffle_rows' \(IR node %shuffle_rows"):
        lower(plan_memory(group_fusions(graph)))


def test_a_python_number_input_is_a_kernel_argument_cast_in_the_kernel():
    """A number passed at each call (``fx.numbers``) reaches the kernel as a float64 argument, cast there
    to the dtype it meets, so float32 code stays float32 and a new number reuses the kernel."""
    from jitgrad.fx.graph import Graph
    from jitgrad.fx.node_meta import call_meta
    from jitgrad.fx.numbers import number_meta
    from jitgrad.fx.passes.fusion import group_fusions
    from jitgrad.fx.passes.memory import plan_memory

    graph = Graph()
    x = graph.placeholder("x", {"shape": (3, 5), "dtype": np.dtype(np.float32)})
    scale = graph.placeholder("scale", number_meta(2.5))
    mul = graph.call_function(REGISTRY["mul"], (x, scale), {}, meta=call_meta(REGISTRY["mul"], (x, scale), {}))
    attrs = {"dim": (1,), "keepdim": False}
    total = graph.call_function(REGISTRY["sum"], (mul,), attrs, meta=call_meta(REGISTRY["sum"], (mul,), attrs))
    graph.output((total,))
    program = lower(plan_memory(group_fusions(graph)))
    values = np.random.default_rng(1).uniform(size=(3, 5)).astype(np.float32)
    for number in (2.5, -4.0):
        got = program(cuda.to_device(values), number)[0].copy_to_host()
        assert got.dtype == np.float32
        assert np.allclose(got, (values * np.float32(number)).sum(1), rtol=1e-6)
    assert "scale_float32 = numba.float32(scale)" in program.source


def test_an_integer_division_by_zero_raises_as_on_the_cpu():
    """A kernel cannot raise: the division sets a flag the program reads after its launches."""
    a, b = cuda.to_device(np.array([7, -7, 5])), cuda.to_device(np.array([2, 2, 0]))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        run_op(REGISTRY["floor_divide"], (a, b), {})
    good = cuda.to_device(np.array([2, 2, 3]))
    assert run_op(REGISTRY["floor_divide"], (a, good), {}).copy_to_host().tolist() == [3, -4, 1]
    assert run_op(REGISTRY["remainder"], (a, good), {}).copy_to_host().tolist() == [1, 1, 2]
    assert run_op(REGISTRY["fmod"], (a, good), {}).copy_to_host().tolist() == [1, -1, 2]   # the dividend's sign
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        run_op(REGISTRY["fmod"], (a, b), {})


def test_the_compile_layer_gets_this_backend_for_cuda():
    from jitgrad.compile.backend import get_backend
    from jitgrad.backends import numba_cuda

    backend = get_backend("cuda")
    assert backend.name == "numba_cuda" and backend.lower is numba_cuda.lower
    assert numba_cuda.LoweringError in backend.lowering_errors


def test_a_kernel_numba_refuses_is_a_lowering_error_naming_it():
    """numba.cuda compiles at the first launch: its error becomes a LoweringError naming the kernel."""
    from jitgrad.backends.numba_cuda.launch import Launcher
    from numba.core.errors import TypingError

    class Refusing:
        def __getitem__(self, config):
            def launch(*args):
                raise TypingError("No implementation of function Function(<built-in function tanh>)")
            return launch

    with pytest.raises(LoweringError, match="could not compile the generated kernel fused_0.*tanh"):
        Launcher()(Refusing(), "fused_0", 1, ())


def test_an_eager_number_is_an_argument_so_new_values_reuse_the_program():
    from jitgrad.backends.numba_cuda import eager

    x = cuda.to_device(np.arange(4.0))
    before = len(eager._PROGRAMS)
    for lr in (0.1, 0.01, 0.001):
        assert np.allclose(run_op(REGISTRY["mul"], (x, lr), {}).copy_to_host(), np.arange(4.0) * lr)
    assert len(eager._PROGRAMS) - before <= 1
