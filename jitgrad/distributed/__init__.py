"""Data-parallel training over MPI, as PyTorch's ``torch.distributed`` spells it (docs/distributed.md).

Start the processes with MPI's launcher (``mpirun -n 2 python train.py`` or
``python -m jitgrad.distributed.run -n 2 train.py``), call ``init_process_group()`` in each, and
wrap the model in ``jitgrad.nn.parallel.DistributedDataParallel``. Needs ``mpi4py`` and an MPI
library: ``pip install -e ".[distributed]"``.
"""
from .collectives import Work, all_gather, all_reduce, barrier, broadcast
from .process_group import (DistributedTimeoutError, ReduceOp, destroy_process_group, get_backend, get_rank,
                            get_world_size, init_process_group, is_available, is_initialized)

__all__ = ["DistributedTimeoutError", "ReduceOp", "Work", "all_gather", "all_reduce", "barrier", "broadcast",
           "destroy_process_group", "get_backend", "get_rank", "get_world_size", "init_process_group",
           "is_available", "is_initialized"]
