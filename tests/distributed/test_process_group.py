"""What ``jitgrad.distributed`` says before any process group exists, in this process (no MPI is
started here: importing ``mpi4py.MPI`` would start it): PyTorch's errors, the install command, and
``DistributedSampler``'s shards against PyTorch's."""
from __future__ import annotations

import sys

import pytest

import jitgrad.distributed as dist
from jitgrad.distributed import process_group
from jitgrad.distributed.run import launch_command, main
from jitgrad.utils.data import DistributedSampler


def test_using_the_group_before_init_is_pytorchs_error():
    assert not dist.is_initialized()
    for call in (dist.get_rank, dist.get_world_size, dist.barrier):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            call()


def test_only_the_mpi_backend_exists():
    with pytest.raises(ValueError, match="runs over MPI only: backend='nccl'"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


def test_missing_mpi4py_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(RuntimeError, match=r'pip install -e "\.\[distributed\]"'):
        dist.init_process_group()
    assert not dist.is_initialized()


def test_the_launcher_runs_this_python_under_mpiexec(monkeypatch, capsys):
    assert launch_command(3, ["train.py", "--quick"], "/x/mpiexec") == ["/x/mpiexec", "-n", "3", sys.executable,
                                                                       "train.py", "--quick"]
    monkeypatch.setattr("jitgrad.distributed.run.find_launcher", lambda: None)
    with pytest.raises(SystemExit, match=r"found no MPI launcher.*\[distributed\]"):
        main(["-n", "2", "train.py"])


@pytest.mark.parametrize("size,replicas,drop_last", [(10, 3, False), (10, 3, True), (11, 4, False), (2, 5, False),
                                                     (12, 4, True)])
def test_sampler_shards_as_pytorchs(size, replicas, drop_last):
    """Unshuffled, the shards are PyTorch's exactly (shuffled, the permutation is jitgrad's generator's)."""
    torch_data = pytest.importorskip("torch.utils.data")
    for rank in range(replicas):
        ours = DistributedSampler(range(size), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = torch_data.DistributedSampler(range(size), replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_sampler_shuffles_by_seed_and_epoch():
    def order(epoch, seed=0):
        shards = [DistributedSampler(range(9), 2, rank, seed=seed) for rank in range(2)]
        for shard in shards:
            shard.set_epoch(epoch)
        return [list(shard) for shard in shards]
    first = order(0)
    assert first == order(0) and first != order(1) and first != order(0, seed=1)
    assert set(first[0] + first[1]) == set(range(9)) and len(first[0]) == len(first[1]) == 5
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), 2, 2)


def test_the_timeout_must_be_a_timedelta():
    with pytest.raises(TypeError, match="timedelta"):
        process_group.init_process_group(timeout=5)
