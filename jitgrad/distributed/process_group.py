"""The process group: which processes take part in data-parallel work and where this one stands.

jitgrad's processes talk through MPI (``mpi4py``, over the MPI library the ``mpich`` wheel installs),
an existing engine for exactly this: a launcher (``mpirun -n 4 python train.py``, or
``python -m jitgrad.distributed.run -n 4 train.py``) starts the processes, and ``MPI.COMM_WORLD`` is
the group of all of them. ``init_process_group()`` adopts that group as PyTorch's default group.

``mpi4py.MPI`` is imported only here, when a group is made: importing it starts MPI, which a
program that never trains in parallel must not pay for (or be refused for, without a launcher).

Faults: MPI's collectives wait for every rank, so one rank that raises would leave the others
waiting forever. Two guards prevent that. The group installs an exception hook that, after
printing the traceback, aborts the whole job (``MPI_Abort``: the launcher ends every rank); and
every wait on a collective polls its request with a deadline (``timeout``, 30 minutes by default
as in PyTorch), raising ``DistributedTimeoutError`` when the other ranks never come.
"""
from __future__ import annotations

import datetime
import enum
import importlib.util
import os
import sys
import time
from types import TracebackType
from typing import Any, Callable

INSTALL = 'pip install -e ".[distributed]"'
DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)
_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


class ReduceOp(enum.Enum):
    """How ``all_reduce`` combines the ranks' values (PyTorch's ``ReduceOp``)."""
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


class DistributedTimeoutError(RuntimeError):
    """A collective waited past the group's timeout: another rank failed, hangs, or never called it."""


class ProcessGroup:
    """The default group: an MPI communicator, its timeout, and the exception hook it installed."""

    def __init__(self, mpi: Any, comm: Any, timeout: datetime.timedelta) -> None:
        self.mpi = mpi
        self.comm = comm
        self.timeout = timeout
        self.previous_excepthook: Callable | None = None

    def rank(self) -> int:
        return self.comm.Get_rank()

    def size(self) -> int:
        return self.comm.Get_size()

    def wait(self, request: Any, what: str, timeout: datetime.timedelta | None = None) -> None:
        """Waits for an MPI request, polling it so that a deadline can end the wait. MPI moves a
        non-blocking collective on only while its ranks call into it, so the wait spins on ``Test``
        (as MPI's own blocking wait does) for its first 50 ms, yielding the core between polls to any
        other process that is ready (on a machine with fewer cores than ranks, the rank it waits for);
        a longer wait (a rank far behind, or stuck) sleeps between polls, a little longer each time
        up to a millisecond. ``timeout`` replaces the group's for this wait."""
        if request.Test():
            return
        limit = (timeout or self.timeout).total_seconds()
        now = time.monotonic()
        spin_until, deadline = now + 0.05, now + limit
        while time.monotonic() < spin_until:
            for _ in range(20):
                if request.Test():
                    return
                _yield_core()
        pause = 1e-5
        while not request.Test():
            if time.monotonic() > deadline:
                raise DistributedTimeoutError(
                    f"jitgrad.distributed: rank {self.rank()} of {self.size()} waited {limit:g} s for {what} "
                    "and the other ranks never joined it: a rank failed, is stuck, or skipped this "
                    "collective (every rank must call the same collectives in the same order); uncaught, this "
                    "error aborts every rank")
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)


_yield_core: Callable[[], Any] = getattr(os, "sched_yield", lambda: None)

_state: dict[str, ProcessGroup | None] = {"group": None}


def is_available() -> bool:
    """Whether ``mpi4py`` is installed (``jitgrad.distributed`` runs over MPI through it)."""
    return importlib.util.find_spec("mpi4py") is not None


def import_mpi() -> Any:
    """``mpi4py.MPI``, or an error saying how to install it."""
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise RuntimeError(f"jitgrad.distributed needs mpi4py and an MPI library ({error}); install them with "
                           f"{INSTALL}") from None
    return MPI


def init_process_group(backend: str | None = "mpi", init_method: str | None = None,
                       timeout: datetime.timedelta | None = None, world_size: int = -1, rank: int = -1,
                       abort_on_exception: bool = True) -> None:
    """Makes the processes the MPI launcher started (``MPI.COMM_WORLD``) the default group.

    ``backend`` must be ``"mpi"`` (or None); ``world_size`` and ``rank``, when given, must agree with
    the launcher's (MPI assigns them). ``timeout`` bounds every wait on a collective. With
    ``abort_on_exception`` an uncaught exception in any rank aborts every rank (through the
    launcher) instead of leaving them waiting for it."""
    if _state["group"] is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if backend is not None and str(backend).lower() != "mpi":
        raise ValueError(f"jitgrad.distributed runs over MPI only: backend={backend!r} is not available; use "
                         "backend='mpi' and start the processes with mpirun (or python -m jitgrad.distributed.run)")
    if init_method not in (None, "env://"):
        raise ValueError(f"init_method={init_method!r}: MPI's launcher connects the processes; leave init_method "
                         "unset")
    if timeout is not None and not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"timeout must be a datetime.timedelta, not {type(timeout).__name__}")
    MPI = import_mpi()
    comm = MPI.COMM_WORLD
    if world_size not in (-1, comm.Get_size()) or rank not in (-1, comm.Get_rank()):
        raise ValueError(f"init_process_group(world_size={world_size}, rank={rank}): the MPI launcher started "
                         f"{comm.Get_size()} processes and this one is rank {comm.Get_rank()}; the launcher decides "
                         "both (mpirun -n N), so leave them unset")
    group = ProcessGroup(MPI, comm, timeout or DEFAULT_TIMEOUT)
    if abort_on_exception:
        group.previous_excepthook = sys.excepthook
        sys.excepthook = _abort_on_exception
    _state["group"] = group


ABORT_GRACE_SECONDS = 0.5  # for the launcher to forward a failing rank's traceback before the abort


def _abort_on_exception(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
    """The exception hook of a group: the usual traceback, then the whole job aborted, so that the
    other ranks do not wait forever in a collective this rank will never call."""
    group = _state["group"]
    previous = group.previous_excepthook if group is not None else None
    (previous or sys.__excepthook__)(kind, error, trace)
    if group is not None and group.size() > 1:
        sys.stderr.write(f"jitgrad.distributed: rank {group.rank()} of {group.size()} raised {kind.__name__}; "
                         "aborting every rank of the job\n")
        sys.stderr.flush()
        # MPI's launcher forwards a rank's output as it reads it, and stops when the abort ends the job:
        # on a busy machine the error above could be lost, the one line that says what went wrong
        time.sleep(ABORT_GRACE_SECONDS)
        group.comm.Abort(1)


def is_initialized() -> bool:
    return _state["group"] is not None


def default_group() -> ProcessGroup:
    """The default group, or PyTorch's error when there is none."""
    group = _state["group"]
    if group is None:
        raise ValueError(_NOT_INITIALIZED)
    return group


def check_group(group: Any) -> ProcessGroup:
    """The group a collective runs on: only the default one (``None``) exists."""
    if group is not None and group is not _state["group"]:
        raise ValueError("jitgrad.distributed has one process group, the default one: pass group=None")
    return default_group()


def get_rank(group: Any = None) -> int:
    return check_group(group).rank()


def get_world_size(group: Any = None) -> int:
    return check_group(group).size()


def get_backend(group: Any = None) -> str:
    check_group(group)
    return "mpi"


def destroy_process_group(group: Any = None) -> None:
    """Forgets the default group (MPI itself is finalized when the process exits) and puts back the
    exception hook it replaced."""
    current = check_group(group)
    if current.previous_excepthook is not None and sys.excepthook is _abort_on_exception:
        sys.excepthook = current.previous_excepthook
    _state["group"] = None


__all__ = ["DEFAULT_TIMEOUT", "INSTALL", "DistributedTimeoutError", "ProcessGroup", "ReduceOp", "check_group",
           "default_group", "destroy_process_group", "get_backend", "get_rank", "get_world_size", "import_mpi",
           "init_process_group", "is_available", "is_initialized"]
