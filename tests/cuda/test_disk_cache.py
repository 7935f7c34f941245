"""The disk cache of CUDA modules (``compiler.py``, ``jitgrad/compile/cache.py``'s ``cuda`` kind) under the
simulator: a module's source is stored, verified and executed from the cache in a later process, eager
ops and compiled functions share the entry, and a tampered, foreign or symlinked entry is refused with
the warning and rebuilt, never run. numba-cuda keeps no machine code under the simulator; that a real
GPU's second process loads its kernels' machine code is tests/cuda/gpu/test_disk_cache_gpu.py's.

Kept cheap (the simulator run is CI's longest side run): one elementwise op on 3 elements, one
subprocess; the other "new processes" are this one with the in-memory modules forgotten.
"""
from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from helpers import last_json_line, run_python
from jitgrad.backends.numba_cuda import compiler
from jitgrad.backends.numba_cuda.eager import one_node_graph
from jitgrad.compile import cache as cache_module
from jitgrad.compile.cache import DiskCache
from jitgrad.ops.registry import REGISTRY

X = np.array([0.5, -1.0, 2.0], dtype=np.float32)


def _new_process_lower(directory: Path):
    """``exp`` of X lowered as the eager path does, as a new process would: no module in memory, a
    cache object of its own (so its one warning is said again), the program run once."""
    from numba import cuda

    compiler.clear_cache()
    for name in [n for n in sys.modules if n.startswith("jitgrad_cuda_")]:
        del sys.modules[name]
    graph, _ = one_node_graph(REGISTRY["exp"], (X,), {})
    program = compiler.lower(graph, share_views=True, cache=DiskCache(directory, "cuda"))
    (out,) = program(cuda.to_device(X))
    np.testing.assert_allclose(out.copy_to_host(), np.exp(X), rtol=1e-6)
    return program


@pytest.fixture
def stored(tmp_path):
    """A cache holding the entry of exp's module, and that entry's name."""
    directory = tmp_path / "cache"
    assert not _new_process_lower(directory).from_disk
    (entry,) = directory.glob("jitgrad_cuda_*.json")
    return directory, entry.name[:-len(".json")]


def test_a_second_process_runs_the_stored_module_and_compiled_code_shares_it(stored):
    """The child's compiled function of one exp (its argument named as eager's placeholder, ``x``:
    names are part of the code) and its eager exp run the module the parent stored, executed from its
    verified file; no second module of exp is written."""
    directory, name = stored
    entry = json.loads((directory / f"{name}.json").read_text())
    assert set(entry) == {"key", "source", "machine_code"} and entry["machine_code"] == {}
    assert dict(entry["key"]["options"])["target"] == "cuda"
    script = f'''
import json, sys
import jitgrad as jg
from jitgrad.compile import cache
x = jg.tensor({X.tolist()!r}, device="cuda")
compiled = jg.compile(lambda x: x.exp())(x).cpu().numpy().tolist()
hits_compiled = cache.stats.hits
eager = x.exp().cpu().numpy().tolist()
module = sys.modules["{name}"]
print(json.dumps({{"eager": eager, "compiled": compiled, "hits_compiled": hits_compiled,
                  "file": module.fused_0.py_func.__code__.co_filename, "rejected": cache.stats.rejected}}))
'''
    child = last_json_line(run_python(script, env={"NUMBA_ENABLE_CUDASIM": "1", "JITGRAD_CACHE_DIR": str(directory)}))
    np.testing.assert_allclose(child["eager"], np.exp(X), rtol=1e-6)
    np.testing.assert_allclose(child["compiled"], np.exp(X), rtol=1e-6)
    assert child["hits_compiled"] >= 1 and child["rejected"] == []
    assert Path(child["file"]) == directory / "cuda" / f"{name}.py"
    modules_of_exp = [p.name for p in (directory / "cuda").glob("*.py") if "exp" in p.read_text()]
    assert modules_of_exp == [f"{name}.py"]
    assert _new_process_lower(directory).from_disk


def _refused_and_rebuilt(directory: Path, reason: str) -> None:
    rejected_before = len(cache_module.stats.rejected)
    with pytest.warns(RuntimeWarning, match="not trusted and is rebuilt"):
        assert not _new_process_lower(directory).from_disk
    assert reason in cache_module.stats.rejected[rejected_before]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _new_process_lower(directory).from_disk  # repaired: the next process uses it


def _plant_code(directory: Path, name: str, planted: Path) -> None:
    module = directory / "cuda" / f"{name}.py"
    module.write_text(module.read_text() + f"\nopen({str(planted)!r}, 'w').close()\n")


def _forge_key(directory: Path, name: str, planted: Path) -> None:
    entry_path = directory / f"{name}.json"
    entry = json.loads(entry_path.read_text())
    entry["key"]["options"] = [["target", "cpu"]]
    entry_path.write_text(json.dumps(entry))


def _symlink_module(directory: Path, name: str, planted: Path) -> None:
    module = directory / "cuda" / f"{name}.py"
    elsewhere = planted.with_suffix(".py")
    elsewhere.write_text(module.read_text())
    module.unlink()
    module.symlink_to(elsewhere)


def _plant_numba_index(directory: Path, name: str, planted: Path) -> None:
    """A pickled index numba would load at the kernel's first launch on a GPU: not recorded, refused."""
    folder = directory / "cuda" / "__pycache__"
    folder.mkdir(mode=0o700, exist_ok=True)
    (folder / f"{name}.fused_0-5.py311.nbi").write_bytes(b"\x80\x04planted")


@pytest.mark.parametrize("tamper, reason", [
    (_plant_code, "is not the source generated for this kernel"),
    (_forge_key, "was written for another kernel or version"),
    (_symlink_module, "cannot be opened as a regular file"),
    (_plant_numba_index, "numba's files for"),
], ids=["edited-source", "foreign-entry", "symlinked-source", "planted-numba-index"])
def test_a_tampered_entry_is_refused_with_the_warning_and_rebuilt(stored, tmp_path, tamper, reason):
    directory, name = stored
    planted = tmp_path / "planted"
    tamper(directory, name, planted)
    _refused_and_rebuilt(directory, reason)
    assert not planted.exists()
