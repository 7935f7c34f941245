"""``--device cuda`` of the benchmarks refuses to measure anything but a GPU, and says so."""
from __future__ import annotations

import pytest

import cuda_workloads


def test_the_simulator_is_not_a_gpu(monkeypatch, capsys):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    with pytest.raises(SystemExit) as stopped:
        cuda_workloads.require_gpu()
    assert stopped.value.code == 2
    message = capsys.readouterr().err
    assert "--device cuda needs a CUDA GPU" in message and "GPU speed has not been measured" in message


def test_every_workload_has_the_cuda_columns_and_the_reference():
    for workload in cuda_workloads.WORKLOADS:
        assert set(workload.builders) == {*cuda_workloads.COMPILED_COLUMNS, *cuda_workloads.EAGER_COLUMNS}
