"""Data-parallel training over MPI, in real jobs of two processes (``mpirun -n 2`` on loopback).

One job (``ddp_checks.py``) runs every DistributedDataParallel check and writes each rank's results;
the tests here read them. Two more jobs check that a failing rank (one that raises, one that hangs)
ends the job with an error instead of hanging it. They skip where mpi4py or an MPI launcher is
missing: ``pip install -e ".[distributed]"``.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jitgrad.distributed import is_available
from jitgrad.distributed.process_group import INSTALL
from jitgrad.distributed.run import find_launcher

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LAUNCHER = find_launcher()
pytestmark = pytest.mark.skipif(not is_available() or LAUNCHER is None,
                                reason=f"needs mpi4py and an MPI launcher (mpiexec): {INSTALL}")


def job(*command: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """A command run with this checkout's jitgrad, and compiled functions on the interpreter backend
    (the checks are about the hooks a compiled loss's backward feeds, not numba's kernels)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               JITGRAD_COMPILE_BACKEND="interpreter")
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp")
    done = job(LAUNCHER, "-n", "2", sys.executable, str(HERE / "ddp_checks.py"), str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads((out / f"rank{rank}.json").read_text()) for rank in range(2)]


def test_two_ranks_train_as_one_process_on_the_concatenated_batch(results):
    for rank in results:
        assert rank["world_size"] == 2
        check = rank["train_equals_one_process"]
        assert check["started_equal"] == 0.0  # rank 1 built other weights; it took rank 0's
        assert check["difference"] < 1e-12


def test_buckets_follow_reverse_registration_order(results):
    buckets = results[0]["train_equals_one_process"]["buckets"]
    assert len(buckets) >= 2
    flat = [index for bucket in buckets for index in bucket]
    assert flat == sorted(flat, reverse=True) == list(range(5, -1, -1))


def test_all_reduces_start_while_backward_runs(results):
    """The first bucket's all-reduce starts before the last gradient is accumulated, every bucket's
    before backward's last node has run, and backward returns only after each is averaged in."""
    for rank in results:
        check = rank["train_equals_one_process"]
        events = check["events"]
        starts = [time for kind, _, time in events if kind == "all_reduce"]
        ready = [time for kind, _, time in events if kind == "ready"]
        (end,) = [time for kind, _, time in events if kind == "backward_end"]
        reduced = [time for kind, _, time in events if kind == "reduced"]
        assert len(starts) == len(reduced) == len(check["buckets"])
        assert len(ready) == 6
        assert starts[0] < max(ready)
        assert max(starts) <= end <= min(reduced)
        assert [index for kind, index, _ in events if kind == "all_reduce"] == list(range(len(starts)))


def test_no_sync_accumulates_locally_then_reduces_the_sum(results):
    for rank in results:
        check = rank["no_sync_accumulates"]
        assert check["events_under_no_sync"] == 0
        assert check["ranks_differed_under_no_sync"] > 1e-3
        assert check["difference"] < 1e-12


def test_find_unused_parameters(results):
    for rank in results:
        check = rank["find_unused_parameters"]
        assert check["difference"] < 1e-12
        assert not check["never_has_grad"]


def test_an_unused_parameter_without_find_unused_parameters_is_an_error(results):
    for rank in results:
        message = rank["unused_parameter_is_an_error"]["message"]
        assert message is not None and "find_unused_parameters=True" in message
        assert "b.weight" in message and "never.weight" in message


def test_a_gradient_for_a_parameter_reduced_as_unused_is_an_error(results):
    for rank in results:
        check = rank["hidden_gradient_is_an_error_then_training_goes_on"]
        assert re.search(r"parameter b\.(weight|bias) received a gradient", check["message"])
        assert check["a_grad"] == [[2.0, 2.0, 2.0]] and not check["b_grad"]


def test_casting_the_model_after_wrapping_it_is_an_error(results):
    for rank in results:
        message = rank["cast_after_wrapping_is_an_error"]["message"]
        assert message is not None and "before wrapping it" in message and "float64" in message


@pytest.mark.parametrize("form", ["module", "wrapper"])
def test_a_compiled_loss_is_reduced_bucket_by_bucket(results, form):
    for rank in results:
        check = rank["compiled_loss_is_reduced"][form]
        assert check["difference"] < 1e-12
        assert check["programs"] == 1 and not check["warnings"]  # compiled once, not retraced or run eagerly
        assert check["reductions"] == [check["buckets"]] * 3


def test_communicating_inside_a_compiled_function_runs_it_eagerly_with_a_warning(results):
    """A compiled call would not communicate: the trace refuses, and the call runs eagerly (said)."""
    for rank in results:
        message = rank["compiled_loss_is_reduced"]["all_reduce_inside"]
        assert message is not None and "all_reduce cannot run inside a function jitgrad.compile traces" in message
        assert rank["compiled_loss_is_reduced"]["all_reduce_inside_value"] == [4.0, 4.0]   # summed over 2 ranks
        message = rank["compiled_loss_is_reduced"]["buffers_inside"]
        assert message is not None and "broadcasts rank 0's buffers" in message and "ddp.module" in message


def test_a_compiled_step_with_backward_inside_runs_eagerly_and_reduced(results):
    for rank in results:
        check = rank["compiled_step_with_backward_inside_runs_eagerly"]
        assert check["difference"] < 1e-12
        assert check["programs"] == 0
        assert any("post-accumulate-grad hook" in message for message in check["warnings"])


def test_distributed_sampler_shards(results):
    mine = [rank["sampler_shards"]["mine"] for rank in results]
    assert mine == results[0]["sampler_shards"]["all"]
    assert all(rank["sampler_shards"]["length"] == 6 for rank in results)
    everything = sorted(mine[0] + mine[1])
    assert set(everything) == set(range(11)) and len(everything) == 12  # one index repeated as padding


@pytest.mark.parametrize("mode,timeout", [("raise", 60), ("die", 60), ("hang", 1)])
def test_a_failing_rank_ends_the_job_with_an_error(mode, timeout):
    """Through ``python -m jitgrad.distributed.run``: a rank that raises aborts the job at once, one
    that dies makes the launcher end the job, and one that hangs makes rank 0's all-reduce give up
    after the group's timeout, which aborts the job."""
    began = time.monotonic()
    done = job(sys.executable, "-m", "jitgrad.distributed.run", "-n", "2", str(HERE / "failing_rank.py"), mode,
               str(timeout), timeout=60)
    assert time.monotonic() - began < 30
    assert done.returncode != 0
    assert "rank 0 finished" not in done.stdout
    assert "jitgrad.distributed.run: the job of 2 processes failed" in done.stderr
    if mode == "raise":
        assert "ValueError: rank 1 failed on purpose" in done.stderr
        assert "rank 1 of 2 raised ValueError; aborting every rank" in done.stderr
    elif mode == "die":
        assert "failed (status 3)" in done.stderr  # rank 1's exit status, passed on by the launcher
    else:
        assert "DistributedTimeoutError" in done.stderr and "waited 1 s for all_reduce" in done.stderr


def test_the_ddp_digits_example_trains_and_keeps_the_ranks_equal():
    pytest.importorskip("sklearn", reason='scikit-learn is not installed: pip install -e ".[examples]"')
    done = job(LAUNCHER, "-n", "2", sys.executable, str(ROOT / "examples" / "train_digits_ddp.py"), "--quick")
    assert done.returncode == 0, done.stderr[-4000:]
    losses = [float(loss) for loss in re.findall(r"epoch +\d+: loss ([\d.]+)", done.stdout)]
    assert len(losses) == 2 and losses[1] < 0.8 * losses[0], done.stdout
    assert "largest parameter difference between ranks 0\n" in done.stdout
