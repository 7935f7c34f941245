"""explain and output_code; the interpreter and the disk cache."""
from __future__ import annotations

import jitgrad as jg


def test_the_interpreter_keeps_nothing_on_disk(tmp_path, monkeypatch):
    """Only numba's machine code is worth a disk entry (tests/reliability/test_cache_attacks.py); the
    interpreter's graphs are rebuilt from the trace in no time."""
    monkeypatch.setenv("JITGRAD_CACHE_DIR", str(tmp_path / "cache"))
    f = jg.compile(lambda x, w: ((x * w).tanh() * 3.0).sum())
    w = jg.randn(3, dtype=jg.float64, requires_grad=True)
    f(jg.randn(3, dtype=jg.float64), w).backward()
    assert w.grad is not None
    assert not any((tmp_path / "cache").glob("*.json"))


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


def test_explain_reports_the_memory_the_kernel_allocates():
    """``relu`` is a scalar of the loop that sums it: the product's buffer and the result's, 100 bytes
    of float32, where every value in memory of its own would take 196 (tests/backends/test_memory_plan.py
    checks that a kernel allocates its plan as it is)."""
    compiled = jg.compile(lambda x, w: (x @ w).relu().mean(), cache=False)
    text = str(compiled.explain(jg.randn(4, 3), jg.randn(3, 6)))
    assert "unplanned_bytes=196, planned_bytes=100, peak_live_bytes=100, buffers=2" in text


def test_explain_says_why_a_call_runs_eagerly():
    def branchy(x):
        return x if x.sum() > 0 else -x
    compiled = jg.compile(branchy)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = str(compiled.explain(jg.ones(2)))
    assert "runs eagerly" in text and "bool() on a traced tensor" in text
