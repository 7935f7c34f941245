"""A second process runs the kernels a first one compiled without importing numba (issue 18): numba's
object code from the disk cache, linked by jitgrad's ELF loader (by llvmlite's JIT where that loader
does not apply), gives bit-identical results, and the warm-start index gives each call's program
without tracing it.

One pair of fresh interpreters on one small W2-like step (an MLP's loss and gradients), and one pair
whose second process differs in one thing per function (its hash seed, values its functions read);
the attacks on the cached object files are in tests/reliability/test_cache_attacks.py.
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


STALE = """
import json, os, sys, types
import jitgrad as jg

variant = int(os.environ["VARIANT"])
config = types.ModuleType("config")            # the user's module (a file of theirs in real use)
config.__file__ = "/nonexistent/config.py"
config.A, config.B = [(2.0, 3.0), (2.0, 5.0)][variant]
KEYS = {"alpha", "beta", "gamma", "delta", "epsilon"}   # visited in an order the hash seed sets
WEIGHT = {"alpha": 1.0, "beta": 2.0, "gamma": 3.0, "delta": 4.0, "epsilon": 5.0}
S = [2.0, 7.0][variant]

def helper(x):
    return x * config.B

def two_paths(x):                              # config.A through the function, config.B through helper
    return helper(x) + config.A

def set_order(x):
    return jg.stack([x * WEIGHT[k] for k in KEYS])

@jg.compile
def inner(x):
    return x * S

def wraps(x):                                  # a compiled function, described by the function it wraps
    return inner(x) + 1.0

def unchanged(x):
    return x * 3.0 + 1.0

x = jg.ones(2)
out = {f.__name__: [jg.compile(f)(x).tolist(), f(x).tolist()] for f in (two_paths, set_order, wraps, unchanged)}
print(json.dumps(out))
"""


def test_a_second_process_changed_in_one_thing_runs_nothing_stale(tmp_path):
    """Two processes share a cache; the second has another hash seed and other values in what the
    functions read, and each compiled result equals the same code run eagerly there (each of these
    ran the first process's program before 2026-11-28), while the unchanged function comes from the
    index."""
    env = {"JITGRAD_CACHE_DIR": str(tmp_path / "cache"), "JITGRAD_COMPILE_BACKEND": "", "JITGRAD_LOG": "cache"}
    for variant, seed in ((0, "1"), (1, "2")):
        done = run_python(STALE, {**env, "VARIANT": str(variant), "PYTHONHASHSEED": seed})
        for name, (compiled, eager) in last_json_line(done).items():
            assert compiled == eager, (variant, name, done.stderr)
    assert "warm-start index: unchanged: used" in done.stderr
    assert "warm-start index: two_paths: used" not in done.stderr
