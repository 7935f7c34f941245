"""``python -m jitgrad.distributed.run -n 2 train.py args...``: starts ``train.py`` in 2 processes.

A thin wrapper over MPI's launcher, which does the work: it starts the processes, connects them
(each finds its rank in ``MPI.COMM_WORLD``), forwards their output, and when one of them dies or
aborts (``jitgrad.distributed`` aborts the job on an uncaught exception) ends the others and exits
non-zero; this wrapper then says so on stderr and exits with the same status. The launcher is the
``mpiexec`` beside this Python (where the ``mpich`` wheel installs it), else the first ``mpiexec`` or
``mpirun`` on ``PATH``.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .process_group import INSTALL


def find_launcher() -> str | None:
    """The path of MPI's launcher: beside this Python first, then on ``PATH``; None if there is none."""
    beside = Path(sys.executable).parent
    for name in ("mpiexec", "mpirun"):
        if (beside / name).is_file() and os.access(beside / name, os.X_OK):
            return str(beside / name)
    for name in ("mpiexec", "mpirun"):
        found = shutil.which(name)
        if found:
            return found
    return None


def launch_command(nprocs: int, program: list[str], launcher: str) -> list[str]:
    """The command that runs ``program`` (a script and its arguments, or ``-m module ...``) in
    ``nprocs`` processes of this Python."""
    return [launcher, "-n", str(nprocs), sys.executable, *program]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m jitgrad.distributed.run",
                                     description="Run a training script in several processes over MPI.")
    parser.add_argument("-n", "--nproc-per-node", "--nproc_per_node", dest="nprocs", type=int, default=1,
                        help="how many processes to start (on this machine)")
    parser.add_argument("program", nargs=argparse.REMAINDER, help="the script and its arguments (or -m module)")
    args = parser.parse_args(argv)
    if not args.program:
        parser.error("give the script to run: python -m jitgrad.distributed.run -n 2 train.py")
    if args.nprocs < 1:
        parser.error(f"-n must be at least 1, got {args.nprocs}")
    launcher = find_launcher()
    if launcher is None:
        sys.exit(f"jitgrad.distributed.run: found no MPI launcher (mpiexec or mpirun); install one with {INSTALL}")
    command = launch_command(args.nprocs, args.program, launcher)
    code = subprocess.run(command).returncode
    if code != 0:
        why = f"a signal ({-code})" if code < 0 else f"status {code}"
        sys.stderr.write(f"jitgrad.distributed.run: the job of {args.nprocs} processes failed ({why}): a rank raised, "
                         "died or timed out, and MPI's launcher ended the others; see the output above\n")
        sys.exit(code if code > 0 else 128 - code)


if __name__ == "__main__":
    main()
