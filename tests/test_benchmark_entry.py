"""``python -m benchmarks`` (benchmarks/run.py): its plumbing, with the clock replaced, and the references
of the training-step workloads it adds (W5, W6) against jitgrad and PyTorch."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import chart
import jitgrad.nn
import run
import timing
import training_workloads
import verify
from timing import Measurement

# Fake per-step times: the ratios in the file must be these divided, whatever the machine's speed.
FAKE_SECONDS = {"jitgrad": 4e-3, "jitgrad_compiled": 3e-3, "torch": 2e-3, "numpy": 1e-3}


@pytest.fixture
def fake_clock(monkeypatch):
    """Verification runs the real steps; the timing does not (a test must not time anything)."""
    def measure(steps, rounds, batch_seconds, warmup=3, cpu_time=False):
        return {name: Measurement(FAKE_SECONDS[name], 0.01, 7, rounds) for name in steps}
    monkeypatch.setattr(timing, "measure", measure)


def test_quick_run_writes_the_results_file_and_the_chart(tmp_path, monkeypatch, fake_clock, capsys):
    monkeypatch.delattr(jitgrad.nn, "Conv2d", raising=False)   # W6 reported as skipped, as before Conv2d
    status = run.main(["--quick", "--only", "W1", "W6", "--libraries", "jitgrad", "torch", "--rounds", "1",
                       "--out-dir", str(tmp_path)])
    assert status == 0
    (written,) = tmp_path.glob("*.json")
    doc = json.loads(written.read_text())
    assert doc["schema"] == 1 and doc["settings"]["mode"] == "quick"
    assert "cores" in doc["machine"]["cpu"] and doc["versions"]["jitgrad"]
    assert set(doc["machine"]["load average (1, 5, 15 min)"]) == {"start", "end"}
    w1, w6 = doc["workloads"]
    assert w6 == {"key": "W6", "title": "CNN training step", "description": w6["description"],
                  "skipped": "jitgrad.nn.Conv2d does not exist yet"}
    assert w1["errors"] == {}
    torch_installed = importlib.util.find_spec("torch") is not None
    assert set(w1["times"]) == {"jitgrad", "numpy"} | ({"torch"} if torch_installed else set())
    assert w1["times"]["jitgrad"]["median_s"] == 4e-3 and w1["times"]["jitgrad"]["vs_numpy"] == 4.0
    expected = [{"name": "jitgrad eager / PyTorch eager", "jitgrad": "jitgrad", "peer": "torch", "ratio": 2.0}]
    assert w1["ratios"] == (expected if torch_installed else [])
    out = capsys.readouterr().out
    assert "W6 CNN training step: skipped: jitgrad.nn.Conv2d does not exist yet" in out
    png = written.with_suffix(".png")
    if chart.available():
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert not png.exists() and "no chart: matplotlib is not installed" in out


def test_the_compiled_training_step_is_verified_and_paired_with_pytorch(tmp_path, fake_clock, monkeypatch):
    """W5's ``jitgrad_compiled`` column is the whole step (Adam inside) under one ``jitgrad.compile``:
    verification runs its compiled program (a step left after the two calls that compile it would start
    from other weights than numpy's and disagree), and it is the jitgrad side of "compiled / PyTorch
    eager". The program runs on the interpreter backend: this is the harness's plumbing, and numba's
    compile of a step is tests/compile's (8 s of the suite saved)."""
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "interpreter")
    assert run.main(["--quick", "--only", "W5", "--libraries", "jitgrad_compiled", "torch", "--rounds", "1",
                     "--out-dir", str(tmp_path)]) == 0
    (w5,) = json.loads(next(tmp_path.glob("*.json")).read_text())["workloads"]
    assert w5["errors"] == {}
    assert w5["times"]["jitgrad_compiled"]["label"] == "jitgrad @compile (step)"
    if importlib.util.find_spec("torch") is not None:
        assert w5["ratios"] == [{"name": "jitgrad compiled / PyTorch eager", "jitgrad": "jitgrad_compiled",
                                 "peer": "torch", "ratio": 1.5}]


def test_python_dash_m_benchmarks_is_the_entry_point():
    """``python -m benchmarks`` from the repository root reaches run.py's options (``--help`` times nothing)."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m benchmarks") and "--quick" in done.stdout


def test_no_matplotlib_still_writes_the_json(tmp_path, monkeypatch, fake_clock, capsys):
    monkeypatch.setattr(chart, "available", lambda: False)
    assert run.main(["--quick", "--only", "W1", "--libraries", "jitgrad", "--out-dir", str(tmp_path)]) == 0
    assert [p.suffix for p in tmp_path.iterdir()] == [".json"]
    assert "no chart" in capsys.readouterr().out


def test_a_wrong_result_is_reported_and_fails_the_run(tmp_path, monkeypatch, fake_clock):
    """A column that disagrees with the numpy reference is left out of the times and the exit status is 1."""
    w5 = training_workloads.W5
    right = w5.builders["jitgrad"]

    def off_by_a_little(inputs):
        step = right(inputs)
        return lambda: (lambda loss, grads: (loss * 1.01, grads))(*step())
    monkeypatch.setitem(w5.builders, "jitgrad", off_by_a_little)
    assert run.main(["--quick", "--only", "W5", "--libraries", "jitgrad", "--out-dir", str(tmp_path)]) == 1
    (entry,) = json.loads(next(tmp_path.glob("*.json")).read_text())["workloads"]
    assert "jitgrad" in entry["errors"] and set(entry["times"]) == {"numpy"}


@pytest.mark.parametrize("workload", training_workloads.WORKLOADS, ids=lambda w: w.key)
def test_training_steps_agree_with_the_hand_written_reference(workload):
    """The numpy forward and backward passes of W5 and W6 (the reference every column is checked against)
    give jitgrad's and PyTorch's losses and gradients at the same weights."""
    libs = ["numpy"]
    if training_workloads.missing_for_jitgrad(workload) is None:
        libs.append("jitgrad")
    if importlib.util.find_spec("torch") is not None:
        libs.append("torch")
    if len(libs) == 1:
        pytest.skip(f"{workload.key}: nothing to compare with (jitgrad lacks a layer, torch not installed: "
                    "pip install torch==2.13.0)")
    inputs = workload.make_inputs(True)
    steps = {lib: workload.builders[lib](inputs) for lib in libs}
    assert verify.check(workload, steps, inputs) == []


def test_loop_length_times_calls_that_exist():
    """benchmarks/loop_length.py wraps these functions to split a first call into parts: a function
    moved or renamed must fail here, not in a benchmark run."""
    import loop_length
    for module, attribute, _ in loop_length.TIMED_CALLS:
        owner, name = loop_length.timed_owner(module, attribute)
        assert callable(getattr(owner, name)), f"{module}.{attribute}"
