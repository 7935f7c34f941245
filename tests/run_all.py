"""The whole test suite, as CI and the README's test command run it, in four pytest processes side by
side: the normal run (``python -m pytest``, without its longest files), those files (the PTX check of
every generated CUDA kernel, minutes of NVVM, the random programs compiled by every CPU lowering, a
minute and a half of compiling, and two more files of numba compiles: ``SIDE_FILES``) and the CUDA
simulator run (``NUMBA_ENABLE_CUDASIM=1
python -m pytest tests/cuda``) in two halves.

The simulator run is a process of its own because numba reads ``NUMBA_ENABLE_CUDASIM`` once, when it is
first imported, and the normal run needs the real numba.cuda (its PTX tests compile kernels with
NVVM). Each process is one busy core most of the time, so on CI's two cores the four take about half
their sum rather than all of it. The side runs are niced: the normal run keeps a core of its own while
the side runs share the other, and both once it is done (measured: 10.6 minutes for the whole command with
equal priorities, the normal run slowed to 10.2 of them). The random programs moved to a side run
when the normal run had become the whole command's length (9:01 of 9:23 on 2026-11-28, the simulator
run 7:18 and the PTX check 2:42). The side runs' output is printed after the normal run's; the exit
status is the first failure's, else 0. Arguments are passed to every run (``python tests/run_all.py
-x``).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PTX_CHECK = "tests/backends/test_cuda_ptx.py"
RANDOM_PROGRAMS = "tests/compile/test_random_programs.py"
# Two more files of numba compiles (about 45 s) moved beside them when the normal run had again become
# the command's length (10:08 of 10:31 on 2026-11-28, a slower machine, the side runs done at 9:18).
SIDE_FILES = [PTX_CHECK, RANDOM_PROGRAMS, "tests/reliability/test_edge_points.py", "tests/backends/test_workloads.py"]
# The simulator run in two halves of about the same length, the eager kernels and ops in one and the
# compiled programs in the other: run whole, it was the command's length (9:31 of 9:42 on 2026-11-28,
# with one core idle for its last 2.5 minutes once the other side run was done).
SIMULATED_OPS = [f"tests/cuda/{name}.py" for name in ("test_every_op", "test_kernels_data", "test_kernels_math",
                                                     "test_ops_on_cuda", "test_device_api", "test_factories_on_cuda",
                                                     "test_distributed_on_cuda")]
SIMULATOR = {"NUMBA_ENABLE_CUDASIM": "1"}
SIDE_RUNS = {  # title -> (pytest arguments, environment added)
    f"python -m pytest {' '.join(SIDE_FILES)}": (SIDE_FILES, {}),
    "NUMBA_ENABLE_CUDASIM=1 python -m pytest <the eager half of tests/cuda>": (SIMULATED_OPS, SIMULATOR),
    "NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda <but that half>":
        (["tests/cuda", *(f"--ignore={path}" for path in SIMULATED_OPS)], SIMULATOR),
}


def _lower_priority() -> None:
    os.nice(10)


def main(arguments: list[str]) -> int:
    with tempfile.TemporaryDirectory() as logs:
        side = {}
        for k, (title, (paths, env)) in enumerate(SIDE_RUNS.items()):
            log = open(Path(logs) / f"{k}.log", "w+")
            side[title] = (subprocess.Popen([sys.executable, "-m", "pytest", *paths, *arguments], cwd=ROOT,
                                            env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT,
                                            preexec_fn=_lower_priority if os.name == "posix" else None), log)
        ignored = [f"--ignore={path}" for path in SIDE_FILES]
        print(f"== python -m pytest {' '.join(ignored)}", flush=True)
        codes = [subprocess.run([sys.executable, "-m", "pytest", *ignored, *arguments], cwd=ROOT).returncode]
        for title, (process, log) in side.items():
            codes.append(process.wait())
            log.seek(0)
            print(f"\n== {title}", flush=True)
            print(log.read(), end="", flush=True)
            log.close()
    return next((code for code in codes if code), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
