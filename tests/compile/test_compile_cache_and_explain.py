"""The disk cache across processes (and what it does with a corrupt entry), explain and output_code."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import jitgrad as jg
from jitgrad.compile import cache as cache_module

SCRIPT = textwrap.dedent("""
    import json
    import jitgrad as jg
    from jitgrad.compile import cache

    @jg.compile
    def loss(x, w):
        return ((x * w).tanh() * 3.0).sum()

    x = jg.tensor([0.5, -1.0, 2.0], dtype=jg.float64)
    w = jg.tensor([1.0, 2.0, 3.0], dtype=jg.float64, requires_grad=True)
    out = loss(x, w)
    out.backward()
    print(json.dumps({"hits": cache.stats.hits, "writes": cache.stats.writes, "rejected": cache.stats.rejected,
                      "loss": float(out), "grad": w.grad.tolist()}))
""")


def _run(directory: Path) -> dict:
    env = {**os.environ, "JITGRAD_CACHE_DIR": str(directory)}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_hits_the_disk_cache_and_a_corrupt_entry_is_recompiled(tmp_path):
    directory = tmp_path / "cache"
    first = _run(directory)
    written = first["writes"]
    assert first["hits"] == 0 and written >= 1  # the fused loss-and-gradient kernel, or forward and backward
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    second = _run(directory)
    assert second["hits"] == written and second["writes"] == 0
    assert (second["loss"], second["grad"]) == (first["loss"], first["grad"])
    entries = sorted(directory.glob("*.jgc"))
    entries[0].write_bytes(entries[0].read_bytes()[:-7] + b"garbage")
    third = _run(directory)
    assert third["hits"] == written - 1 and third["writes"] == 1 and "checksum mismatch" in third["rejected"][0]
    assert (third["loss"], third["grad"]) == (first["loss"], first["grad"])


def test_a_stale_entry_is_not_trusted(tmp_path, monkeypatch):
    disk = cache_module.DiskCache(tmp_path)
    graph = jg.fx.trace(lambda x: x.exp(), jg.ones(2)).graph
    key = disk.key(graph, "interpreter", {})
    assert disk.store(key, {"anything": 1})
    assert disk.load(key) == {"anything": 1}
    monkeypatch.setattr(cache_module, "versions", lambda: {"jitgrad": "0.0.0-other", "numba": "0"})
    assert disk.load(disk.key(graph, "interpreter", {})) is None


def loss(x, w):
    return ((x @ w).exp() * 2.0).sum()


def test_explain_shows_ir_fusion_memory_and_source(monkeypatch, capsys):
    monkeypatch.setenv("JITGRAD_LOG", "output_code")
    compiled = jg.compile(loss, cache=False)
    x, w = jg.randn(2, 3), jg.randn(3, 4, requires_grad=True)
    text = str(compiled.explain(x, w))
    for part in ("loss (forward): IR before passes", "loss (forward): IR after passes", "fusion groups",
                 "memory plan", "peak_live_bytes", "generated source", "loss (backward): IR after passes",
                 "saved for backward"):
        assert part in text, part
    assert "def forward" in capsys.readouterr().err  # JITGRAD_LOG=output_code printed it while compiling


def test_explain_says_why_a_call_runs_eagerly():
    def branchy(x):
        return x if x.sum() > 0 else -x
    compiled = jg.compile(branchy)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = str(compiled.explain(jg.ones(2)))
    assert "runs eagerly" in text and "bool() on a traced tensor" in text
