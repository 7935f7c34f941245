"""jitgrad.compile on the CPU goes through the LLVM generator (llvm_cpu) when it covers a graph, and to
numba otherwise, saying which op sent it there; llvm_cpu's object code goes into the disk cache, and
neither a first nor a second process of a covered function imports numba, and a second one (its calls
from the warm-start index) imports neither a code generator, ``jitgrad.fx`` nor llvmlite (issue 18)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.backends import elf_loader
from jitgrad.compile import get_backend
from compile_helpers import MLP_SCRIPT
from helpers import assert_close, last_json_line, run_python

STEP = MLP_SCRIPT + """

def loss_of(x, onehot, w1, b1, w2, b2, w3, b3):
    h = (x @ w1 + b1).tanh()
    h = (h @ w2 + b2).tanh()
    return F.cross_entropy(h @ w3 + b3, onehot)

@jg.compile(fullgraph=True)
def step(x, onehot, *weights):
    loss = loss_of(x, onehot, *weights)
    return loss, jg.autograd.grad(loss, list(weights))

results = [step(x, onehot, *params)]
numba_after_first_call = "numba" in sys.modules
results.append(step(x[:2], onehot[:2], *params))  # new sizes: retraced, the same kernel
generator = sorted(m for m in ("jitgrad.backends.llvm_cpu.codegen", "jitgrad.backends.llvm_cpu.compiler",
                               "jitgrad.backends.numba_cpu.compiler") if m in sys.modules)
tracing = sorted(m for m in sys.modules if m == "jitgrad.fx" or m.startswith("jitgrad.fx.") or m in (
    "jitgrad.compile.capture", "jitgrad.compile.lowering", "jitgrad.compile.loss_program",
    "jitgrad.compile.templates", "jitgrad.compile.side_effects", "jitgrad.compile.interpreted_graph"))
eager = loss_of(x, onehot, *params)
eager_grads = jg.autograd.grad(eager, params)
error = max(float(np.abs(a.detach().numpy() - b.numpy()).max()) for a, b in zip((eager, *eager_grads),
                                                                       (results[0][0], *results[0][1])))
values = [t.numpy().tobytes().hex() for loss, grads in results for t in (loss, *grads)]
print(json.dumps({"values": values, "numba": numba_after_first_call, "numba_at_end": "numba" in sys.modules,
                  "llvmlite_at_end": "llvmlite" in sys.modules, "generator": generator, "tracing": tracing,
                  "from_disk": [p.lowered.from_disk for p in step.programs],
                  "sources": [p.lowered.source[:40] for p in step.programs], "error": error}))
"""


def test_a_covered_step_never_imports_numba_and_warm_starts_from_its_object_code(tmp_path):
    env = {"JITGRAD_CACHE_DIR": str(tmp_path / "cache"), "JITGRAD_LOG": "cache,backend"}
    env.pop("JITGRAD_COMPILE_BACKEND", None)
    first_run = run_python(STEP, {**env, "JITGRAD_COMPILE_BACKEND": ""})
    first = last_json_line(first_run)
    assert not first["numba_at_end"], first_run.stderr
    assert "does not cover" not in first_run.stderr
    assert first["error"] < 1e-5 and first["from_disk"] == [False, False]
    assert list((tmp_path / "cache" / "objects").glob("jitgrad_object_*.o"))
    second_run = run_python(STEP, {**env, "JITGRAD_COMPILE_BACKEND": ""})
    second = last_json_line(second_run)
    assert not second["numba_at_end"], second_run.stderr
    assert second["from_disk"] == [True, True]   # both programs from the warm-start index, untraced
    assert "jitgrad.backends.llvm_cpu.codegen" in first["generator"]
    assert second["generator"] == [], second["generator"]   # a warm process imports no code generator
    if elf_loader.supported():   # nor LLVM: elf_loader links the objects, host_cpu reads the CPU
        assert not second["llvmlite_at_end"]
    assert "jitgrad.fx.tracer" in first["tracing"] and "jitgrad.compile.capture" in first["tracing"]
    assert second["tracing"] == [], second["tracing"]   # nor graph mode, nor jitgrad.compile's tracing half
    assert second_run.stderr.count("runs without tracing") == 2, second_run.stderr
    assert second["values"] == first["values"]
    assert "could not be loaded" not in second_run.stderr and "not trusted" not in second_run.stderr


def test_the_default_cpu_backend_tries_llvm_then_numba(monkeypatch):
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "")
    assert get_backend("cpu").name == "llvm_cpu+numba_cpu"
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "numba_cpu")
    assert get_backend("cpu").name == "numba_cpu"
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "llvm_cpu")
    assert get_backend("cpu").name == "llvm_cpu"


def test_an_op_the_generator_does_not_cover_goes_to_numba_with_a_log_line(monkeypatch, capsys):
    """The default lowering hands a graph llvm_cpu does not cover to numba's ``lower`` (a stand-in
    here that runs the graph as the interpreter does, so that no numba compile is paid for), saying
    which op sent it; a covered graph never reaches it."""
    from jitgrad import fx
    from jitgrad.backends import llvm_cpu
    from jitgrad.compile.backend import interpret, llvm_then_numba
    from jitgrad.fx import passes

    monkeypatch.setenv("JITGRAD_LOG", "backend")
    handed = []
    numba = SimpleNamespace(lower=lambda graph, **options: handed.append(graph) or interpret(graph))
    lower = llvm_then_numba(llvm_cpu, numba)
    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)

    def graph_of(program):
        return passes.PassManager().run(fx.trace(program, jg.tensor(x)).graph)

    running = lower(graph_of(lambda t: (t.cumsum(1) * 2.0).tanh()))
    assert_close(running(x)[0], np.tanh(np.cumsum(x, axis=1) * 2.0))
    assert len(handed) == 1
    stderr = capsys.readouterr().err
    assert "llvm_cpu does not cover op 'cumsum'" in stderr and "numba_cpu compiles the graph" in stderr
    covered = lower(graph_of(lambda t: (t * 2.0).tanh().sum()))
    assert_close(covered(x)[0], np.tanh(x * 2.0).sum())
    assert len(handed) == 1 and "jitgrad_kernel" in covered.source


def test_llvm_cpu_alone_runs_an_uncovered_function_eagerly(monkeypatch):
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "llvm_cpu")
    x = jg.tensor(np.arange(6.0).reshape(2, 3))

    @jg.compile
    def running(x):
        return x.cumsum(1)

    with pytest.warns(jg.compile.CompileWarning if hasattr(jg.compile, "CompileWarning") else Warning):
        result = running(x)
    assert_close(result.numpy(), np.cumsum(x.numpy(), axis=1))


def test_a_chain_of_elementwise_ops_and_two_pass_reductions_equals_eager(monkeypatch):
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "llvm_cpu")
    x = jg.tensor(np.linspace(-2.0, 2.0, 20, dtype=np.float32).reshape(4, 5), requires_grad=True)

    @jg.compile(fullgraph=True)
    def step(x):
        loss = (jg.sin(x) * 1.5 + x.exp().mean(1, keepdim=True)).tanh().var()
        return loss, jg.autograd.grad(loss, [x])

    loss, (grad,) = step(x)
    eager = (jg.sin(x) * 1.5 + x.exp().mean(1, keepdim=True)).tanh().var()
    eager_grad, = jg.autograd.grad(eager, [x])
    assert_close(loss.numpy(), eager.detach().numpy())
    assert_close(grad.numpy(), eager_grad.numpy())
    assert "jitgrad_kernel" in step.programs[0].lowered.source


@pytest.mark.parametrize("reduce", [
    lambda x: (x * 2.0)[:, :1].sum(), lambda x: (x * 2.0)[:, 1:].mean(), lambda x: (x * 2.0)[::2].amax(),
    lambda x: (x * 2.0).t()[1:].sum(), lambda x: (x + 1.0)[:, :2].sum() * x[:, 2:].sum(),
], ids=["columns", "mean", "strided rows", "transposed", "two views"])
def test_a_reduction_over_a_strided_view_reads_its_strides(monkeypatch, reduce):
    """Until 2026-11-28 a whole reduction of a view that is not C-contiguous ran as one flat loop over
    the first elements of its memory: ``(x * 2)[:, :1].sum()`` summed x's first row and more."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "llvm_cpu")
    x = jg.tensor(np.arange(15.0).reshape(5, 3) ** 1.5)
    compiled = jg.compile(reduce, cache=False, fullgraph=True)
    assert_close(compiled(x).numpy(), reduce(x).numpy())
    assert "jitgrad_kernel" in compiled.programs[0].lowered.source


def test_logsumexp_rows_with_nan_and_infinities_are_torchs(monkeypatch):
    """The generator folds logsumexp's shift with NaN skipped (the row's exps bring it back), as numba's
    kernels do: a NaN row is NaN, a row with +inf is inf, a row of -inf is -inf (PyTorch's values), the
    others eager's."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "llvm_cpu")
    x = np.random.default_rng(3).standard_normal((5, 6))
    x[0, 1], x[1, 2], x[2, :], x[3, 0], x[3, 4] = np.nan, np.inf, -np.inf, np.inf, np.nan

    @jg.compile(fullgraph=True)
    def rows(x):
        return x.logsumexp(1)

    got = rows(jg.tensor(x)).numpy()
    np.testing.assert_allclose(got, jg.tensor(x).logsumexp(1).numpy(), rtol=1e-12)
    assert np.isnan(got[[0, 3]]).all() and got[1] == np.inf and got[2] == -np.inf
    assert "jitgrad_kernel" in rows.programs[0].lowered.source


def test_llvm_object_code_in_the_disk_cache_is_verified_before_it_is_loaded(tmp_path, capsys, monkeypatch):
    """A stored object is loaded by a later lowering (from_disk); one altered on disk fails its
    checksum, is said in the log and compiled afresh, with the right result."""
    from jitgrad import fx
    from jitgrad.backends import llvm_cpu
    from jitgrad.compile.cache import DiskCache
    from jitgrad.fx import passes

    monkeypatch.setenv("JITGRAD_LOG", "cache")
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    graph = passes.PassManager().run(fx.trace(lambda t: (t.sin() * 3.0).sum(1), jg.tensor(x)).graph)
    cache = DiskCache(tmp_path / "cache")
    first = llvm_cpu.lower(graph, cache=cache)
    objects = list((tmp_path / "cache" / "objects").glob("jitgrad_object_*.o"))
    assert len(objects) == 1 and not first.from_disk
    llvm_cpu.clear_cache()
    again = llvm_cpu.lower(graph, cache=cache)
    assert again.from_disk
    assert_close(again(x)[0], (np.sin(x) * 3.0).sum(1))
    code = bytearray(objects[0].read_bytes())
    code[len(code) // 2] ^= 0xFF
    objects[0].write_bytes(bytes(code))
    llvm_cpu.clear_cache()
    capsys.readouterr()
    with pytest.warns(RuntimeWarning, match="does not match its recorded hash"):
        rebuilt = llvm_cpu.lower(graph, cache=cache)
    assert not rebuilt.from_disk and "does not match its recorded hash" in capsys.readouterr().err
    assert_close(first(x)[0], (np.sin(x) * 3.0).sum(1))   # a kernel forgotten by the process still runs
    assert_close(rebuilt(x)[0], (np.sin(x) * 3.0).sum(1))


def test_a_target_outside_the_classes_raises_index_error_from_the_kernel():
    """The kernel raises as numba's does (its GIL taken back, the error set) and stays usable."""
    from jitgrad import fx
    from jitgrad.backends import llvm_cpu
    from jitgrad.fx import passes

    scores = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3)
    good = np.array([0, 2, 1, 2])
    loss = lambda s, t: jg.nn.functional.cross_entropy(s, t)  # noqa: E731
    graph = passes.PassManager().run(fx.trace(loss, jg.tensor(scores), jg.tensor(good)).graph)
    kernel = llvm_cpu.lower(graph)
    with pytest.raises(IndexError, match="out of bounds for the number of classes"):
        kernel(scores, np.array([0, 3, 1, 2]))
    assert_close(kernel(scores, good)[0], loss(jg.tensor(scores), jg.tensor(good)).numpy())


def test_fastmath_marks_every_float_instruction_and_keeps_nan_and_infinities():
    """``fastmath=True`` is numba's flags (LLVM's ``fast`` but ``nnan`` and ``ninf``, with which LLVM
    assumed no NaN or infinity occurs: until 2026-11-28 isnan(nan) was False and nan_to_num kept NaN);
    without it no float instruction has any."""
    from jitgrad import fx
    from jitgrad.backends import llvm_cpu
    from jitgrad.fx import passes

    x = np.linspace(-2.0, 2.0, 12).reshape(3, 4)
    x[1, 1], x[2, 0] = np.nan, np.inf

    def program(t):
        return (t.exp() / (1.0 + t * t)).sum(1), jg.isnan(t), jg.isinf(t), jg.nan_to_num(t), t.amax(1)
    graph = passes.PassManager().run(fx.trace(program, jg.tensor(x)).graph)
    fast, exact = llvm_cpu.lower(graph, fastmath=True), llvm_cpu.lower(graph)
    assert "fdiv reassoc contract arcp afn nsz " in fast.source and "nnan" not in fast.source
    assert " fast " not in fast.source and "reassoc" not in exact.source
    with np.errstate(invalid="ignore"):
        expected = [value.numpy() for value in program(jg.tensor(x))]
    for kernel in (fast, exact):
        for got, want in zip(kernel(x), expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-12)
