"""The workload suite (benchmarks/suite.py, suite_workloads.py): every workload's jitgrad columns (eager,
the compiled whole step, the compiled loss) agree with its float64 PyTorch reference, and a wrong
column is caught. The compiled columns run on the interpreter backend: this is the suite's plumbing
and the workloads' definitions; numba's code for them is tests/backends' and the suite run's own
verification."""
from __future__ import annotations

import importlib.util

import pytest

import suite
import suite_workloads
import timing
import verify

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="the suite's reference is PyTorch in float64: pip install torch==2.13.0")

JITGRAD_COLUMNS = ("jitgrad", "jitgrad_compiled", "jitgrad_loss")


@pytest.fixture(autouse=True)
def interpreter_backend(monkeypatch):
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "interpreter")


@pytest.mark.parametrize("workload", suite_workloads.WORKLOADS, ids=lambda w: w.key)
def test_jitgrad_columns_agree_with_the_reference(workload):
    inputs = workload.make_inputs(True)
    steps = {key: workload.builders[key](inputs) for key in (*JITGRAD_COLUMNS, suite_workloads.REFERENCE)}
    assert verify.check(workload, steps, inputs, reference=suite_workloads.REFERENCE) == []


def test_a_wrong_column_is_reported_and_not_timed(monkeypatch, tmp_path, capsys):
    """``suite.main`` leaves a column that disagrees with the reference out of the times and exits 1."""
    workload = suite_workloads.SUITE_BY_KEY["K1"]
    right = workload.builders["jitgrad"]

    def off_by_a_little(inputs):
        step = right(inputs)
        return lambda: (lambda loss, grads: (loss * 1.01, grads))(*step())
    monkeypatch.setitem(workload.builders, "jitgrad", off_by_a_little)
    monkeypatch.setattr(timing, "measure", lambda steps, rounds, batch_seconds, warmup=3: {})
    assert suite.main(["--quick", "--only", "K1", "--libraries", "jitgrad", "--rounds", "1",
                       "--out-dir", str(tmp_path)]) == 1
    assert "jitgrad eager failed verification against PyTorch eager float64 (reference)" in capsys.readouterr().out


def test_a_partial_run_never_replaces_the_days_full_results():
    """A run of some workloads, or a quick one, is named for what it ran (it once overwrote the full run)."""
    import datetime
    day = datetime.date(2026, 11, 27)
    def named(*argv):
        return suite.run_name(suite.parse_args(list(argv)), day)
    assert named() == "suite-2026-11-27"
    assert named("--only", "k2", "K10") == "suite-2026-11-27-K2-K10"
    assert named("--quick") == "suite-2026-11-27-quick"
