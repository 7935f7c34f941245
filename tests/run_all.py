"""The whole test suite, as CI and the README's test command run it: the normal run (``python -m pytest``)
and the CUDA simulator run (``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda``) side by side.

They are two processes because numba reads ``NUMBA_ENABLE_CUDASIM`` once, when it is first imported,
and the normal run needs the real numba.cuda (its PTX tests compile kernels with NVVM). Each is one
busy core most of the time, so on CI's two cores the pair takes about as long as the longer one rather
than their sum. The simulator run's output is printed after the normal run's; the exit status is the
first failure's, else 0. Arguments are passed to both runs (``python tests/run_all.py -x``).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(arguments: list[str]) -> int:
    simulator_env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    with tempfile.TemporaryFile(mode="w+") as simulator_log:
        simulator = subprocess.Popen([sys.executable, "-m", "pytest", "tests/cuda", *arguments], cwd=ROOT,
                                     env=simulator_env, stdout=simulator_log, stderr=subprocess.STDOUT, text=True)
        print("== python -m pytest", flush=True)
        normal = subprocess.run([sys.executable, "-m", "pytest", *arguments], cwd=ROOT).returncode
        simulated = simulator.wait()
        simulator_log.seek(0)
        print("\n== NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda", flush=True)
        print(simulator_log.read(), end="", flush=True)
    return normal or simulated


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
