"""A second process runs the kernels a first one compiled without importing numba (issue 18): numba's
object code from the disk cache, linked by jitgrad's ELF loader (by llvmlite's JIT where that loader
does not apply), gives bit-identical results, and the warm-start index gives each call's program
without tracing it.

One pair of fresh interpreters on one small W2-like step (an MLP's loss and gradients); the attacks on
the cached object files are in tests/reliability/test_cache_attacks.py.
"""
from __future__ import annotations

from compile_helpers import MLP_SCRIPT
from jitgrad.backends import elf_loader
from helpers import last_json_line, run_python

STEP = MLP_SCRIPT + """

@jg.compile(fullgraph=True)
def step(x, onehot, w1, b1, w2, b2, w3, b3):
    h = (x @ w1 + b1).tanh()
    h = (h @ w2 + b2).tanh()
    loss = F.cross_entropy(h @ w3 + b3, onehot)
    return loss, jg.autograd.grad(loss, [w1, b1, w2, b2, w3, b3])

results = [step(x, onehot, *params)]
numba_after_first_call = "numba" in sys.modules
results.append(step(x, onehot, *params))          # found by its guards
results.append(step(x[:2], onehot[:2], *params))  # new sizes: retraced, the same kernel
values = [t.numpy().tobytes().hex() for loss, grads in results for t in (loss, *grads)]
print(json.dumps({"values": values, "numba": numba_after_first_call, "numba_at_end": "numba" in sys.modules,
                  "llvmlite_at_end": "llvmlite" in sys.modules, "from_disk": [p.lowered.from_disk for p in step.programs]}))
"""


def test_a_second_process_runs_cached_object_code_without_numba(tmp_path):
    env = {"JITGRAD_CACHE_DIR": str(tmp_path / "cache"), "JITGRAD_COMPILE_BACKEND": "numba_cpu",
           "JITGRAD_LOG": "cache"}
    first = last_json_line(run_python(STEP, env))
    assert first["numba"] and first["from_disk"] == [False, False]
    assert list((tmp_path / "cache" / "objects").glob("jitgrad_object_*.o"))
    second_run = run_python(STEP, env)
    second = last_json_line(second_run)
    assert not second["numba"] and not second["numba_at_end"], second_run.stderr
    if elf_loader.supported():
        assert not second["llvmlite_at_end"], second_run.stderr
    assert second["from_disk"] == [True, True]  # both programs from the warm-start index: nothing traced
    assert second_run.stderr.count("warm-start index: step: used") == 2, second_run.stderr
    assert second["values"] == first["values"]
    assert "could not be loaded" not in second_run.stderr and "not trusted" not in second_run.stderr
