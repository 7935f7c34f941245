"""``jitgrad.distributed`` on CUDA tensors (through host buffers) in a job of two ranks: the
collectives, and DistributedDataParallel's buckets gathered on the device, copied to the host once
and back once. Skips without mpi4py or an MPI launcher: ``pip install -e ".[distributed]"``."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jitgrad.distributed import is_available
from jitgrad.distributed.process_group import INSTALL
from jitgrad.distributed.run import find_launcher

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = find_launcher()


@pytest.mark.skipif(not is_available() or LAUNCHER is None, reason=f"needs mpi4py and mpiexec: {INSTALL}")
def test_collectives_and_ddp_on_cuda_tensors(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([LAUNCHER, "-n", "2", sys.executable, str(ROOT / "tests/distributed/cuda_checks.py"),
                           str(tmp_path)], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    for rank in range(2):
        result = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert result["all_reduce"] == [3.0, 6.0]
        assert result["all_gather"] == [[0.0, 0.5], [1.0, 1.5]]
        assert result["broadcast"] == [1.0, 1.0, 1.0]
        assert result["buckets"] >= 2 and result["grad_devices"] == ["cuda:0"]
        assert result["difference"] < 1e-12
