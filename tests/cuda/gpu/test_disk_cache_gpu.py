"""On a real GPU only (marked ``gpu``): a second process loads its kernels' machine code from the disk
cache instead of compiling them. numba-cuda keeps none under the simulator, where
tests/cuda/test_disk_cache.py checks the stored sources.

Each process runs one eager op and one compiled function in a fresh interpreter with a cache of the
test's own, and reports numba-cuda's counters of the generated kernels (``dispatcher.stats``: a hit
is machine code loaded from the cache's ``__pycache__``, a miss a compile through NVVM).
"""
from __future__ import annotations

import json

import pytest

from helpers import last_json_line, run_python

pytestmark = pytest.mark.gpu

SCRIPT = r'''
import json, sys
import numpy as np
import jitgrad as jg
from jitgrad.compile import cache

x = jg.tensor(np.linspace(-2, 2, 4096, dtype=np.float32), device="cuda")
eager = (x.exp() * 2.0).sum().item()
compiled = jg.compile(lambda x: (x.tanh() * x).sum())(x).item()
kernels = [value for name, module in list(sys.modules.items()) if name.startswith("jitgrad_cuda_")
           for value in vars(module).values() if hasattr(value, "stats") and hasattr(value, "overloads")]
print(json.dumps({"hits": sum(sum(k.stats.cache_hits.values()) for k in kernels),
                  "misses": sum(sum(k.stats.cache_misses.values()) for k in kernels),
                  "kernels": len(kernels), "rejected": cache.stats.rejected, "eager": eager, "compiled": compiled}))
'''


def test_a_second_process_loads_the_kernels_machine_code_from_the_cache(tmp_path):
    env = {"JITGRAD_CACHE_DIR": str(tmp_path / "cache"), "NUMBA_ENABLE_CUDASIM": "0"}
    first = last_json_line(run_python(SCRIPT, env=env))
    assert first["kernels"] >= 3 and first["misses"] >= 3 and first["hits"] == 0
    entries = [json.loads(p.read_text()) for p in (tmp_path / "cache").glob("jitgrad_cuda_*.json")]
    recorded = [name for entry in entries for name in entry["machine_code"]]
    assert any(n.endswith(".nbi") for n in recorded) and any(n.endswith(".nbc") for n in recorded)

    second = last_json_line(run_python(SCRIPT, env=env))
    assert second["rejected"] == []
    assert second["misses"] == 0 and second["hits"] >= first["misses"]  # no kernel went through NVVM
    assert second["eager"] == pytest.approx(first["eager"]) and second["compiled"] == pytest.approx(first["compiled"])


def test_damaged_machine_code_is_rebuilt_not_loaded(tmp_path):
    env = {"JITGRAD_CACHE_DIR": str(tmp_path / "cache"), "NUMBA_ENABLE_CUDASIM": "0"}
    first = last_json_line(run_python(SCRIPT, env=env))
    for data in (tmp_path / "cache" / "cuda" / "__pycache__").glob("*.nbc"):
        data.write_bytes(data.read_bytes()[:-64] + b"\0" * 64)
    second = last_json_line(run_python(SCRIPT, env=env))
    assert any("does not match its recorded hash" in why for why in second["rejected"])
    assert second["hits"] == 0 and second["misses"] == first["misses"]
    assert second["eager"] == pytest.approx(first["eager"])
