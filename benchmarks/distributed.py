"""Data-parallel scaling: measured at 1 and 2 ranks here, modelled for 8 to 256 ranks.

    python benchmarks/distributed.py            # about a minute on 2 cores
    python benchmarks/distributed.py --quick    # fewer steps and sizes
    python benchmarks/distributed.py --compiled # also the loss compiled over ddp.module (numba compiles)

A full run saves its measurements to ``benchmarks/results/distributed-<date>.json``; ``--report`` prints
the tables of a saved run again.

The parent process launches itself under MPI (``mpiexec -n 1`` and ``-n 2``, one BLAS thread per
rank) and each job measures, with every rank working on a batch of 64 of its own (weak scaling):

- the W2 MLP step of benchmarks/workloads.py (784-256-256-10, tanh, float32, cross-entropy, SGD),
  eager, as a plain model and under DistributedDataParallel (and with ``--compiled``, the loss
  compiled over ``ddp.module``);
- the same step for a 10M-parameter MLP (784-2048-2048-2048-10);
- ``all_reduce`` of float32 buffers of 1 KiB to 16 MiB (the fastest of 30 each), to which
  ``2 alpha + n / beta`` (a ring of two ranks) is fitted by least squares.

Then the alpha-beta model of a ring all-reduce, ``2 (p - 1) alpha + 2 (p - 1) / p * n / beta`` per
bucket, predicts the step time at 8 to 256 ranks for both models and several bucket sizes, once with
the alpha and beta measured here (shared memory) and with two assumed networks. The step
is ``forward + max(backward, communication of every bucket but the last) + the last bucket``: buckets
overlap with backward but the last one can only start when backward ends.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
W2_SIZES = (784, 256, 256, 10)
BIG_SIZES = (784, 2048, 2048, 2048, 10)
BATCH = 64
# Assumed networks: a 100 Gb/s-class cluster interconnect, and commodity 10 Gb/s Ethernet.
NETWORKS = {"assumed 100 Gb/s interconnect": (10e-6, 10e9), "assumed 10 Gb/s Ethernet": (50e-6, 1.25e9)}
BUCKETS_MB = (1, 4, 25, 100)
RANKS = (8, 16, 32, 64, 128, 256)


def parameter_count(sizes: tuple[int, ...]) -> int:
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


# ---- worker: runs under mpiexec -------------------------------------------------------------------------
def worker(out: Path, steps: int, compiled: bool, quick: bool) -> None:
    import jitgrad
    import jitgrad.distributed as dist
    import jitgrad.nn as nn
    import jitgrad.nn.functional as F
    from jitgrad.nn.parallel import DistributedDataParallel

    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(rank)
    results: dict = {"world_size": world}

    def build(sizes):
        layers: list = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(a, b), nn.Tanh()]
        return nn.Sequential(*layers[:-1])

    def timed(model, loss_fn, sizes, count):
        x = jitgrad.tensor(rng.standard_normal((BATCH, sizes[0])).astype(np.float32))
        y = jitgrad.tensor(rng.integers(0, sizes[-1], BATCH))
        optimizer = jitgrad.optim.SGD(model.parameters(), lr=1e-3)
        times = []
        for i in range(count + 3):
            dist.barrier()
            start = time.perf_counter()
            optimizer.zero_grad()
            loss_fn(x, y).backward()
            optimizer.step()
            times.append(time.perf_counter() - start)
        return float(np.median(times[3:]))

    for name, sizes in (("W2", W2_SIZES), ("10M", BIG_SIZES)):
        count = steps if name == "W2" else max(3, steps // 10)
        plain = build(sizes)
        results[f"{name} plain"] = timed(plain, lambda x, y: F.cross_entropy(plain(x), y), sizes, count)
        ddp = DistributedDataParallel(build(sizes))
        results[f"{name} ddp"] = timed(ddp, lambda x, y: F.cross_entropy(ddp(x), y), sizes, count)
        if compiled and name == "W2":
            loss_fn = jitgrad.compile(lambda x, y: F.cross_entropy(ddp.module(x), y))
            results[f"{name} ddp compiled"] = timed(ddp, loss_fn, sizes, count)

    sizes = [2 ** k for k in range(10, 23 if quick else 25, 2)]  # bytes
    reduce_times = []
    for nbytes in sizes:
        buffer = jitgrad.zeros(nbytes // 4)
        runs = []
        for _ in range(10 if quick else 30):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(buffer)
            runs.append(time.perf_counter() - start)
        reduce_times.append(float(np.min(runs)))  # the fastest: other jobs on a shared machine only add
    results["all_reduce"] = list(zip(sizes, reduce_times))
    if rank == 0:
        out.write_text(json.dumps(results))
    dist.destroy_process_group()


# ---- parent: launches, fits, models ---------------------------------------------------------------------
def launch(ranks: int, args: argparse.Namespace) -> dict:
    sys.path.insert(0, str(ROOT))
    from jitgrad.distributed.run import find_launcher
    launcher = find_launcher()
    if launcher is None:
        sys.exit('benchmarks/distributed.py needs MPI: pip install -e ".[distributed]"')
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "result.json"
        command = [launcher, "-n", str(ranks), sys.executable, __file__, "--worker", str(out),
                   "--steps", str(args.steps)] + (["--compiled"] if args.compiled else []) + \
                  (["--quick"] if args.quick else [])
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        subprocess.run(command, check=True, env=env)
        return json.loads(out.read_text())


def fit_alpha_beta(points: list[tuple[int, float]]) -> tuple[float, float]:
    """alpha and beta of ``t = 2 alpha + n / beta`` (two ranks), by least squares on the relative
    error (so that the small messages, which decide alpha, weigh as much as the large ones)."""
    n = np.array([p[0] for p in points], float)
    t = np.array([p[1] for p in points], float)
    design = np.stack([np.ones_like(n), n], 1) / t[:, None]
    (intercept, slope), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    return max(intercept / 2, 1e-7), 1 / max(slope, 1e-15)


def ring_time(nbytes: float, ranks: int, alpha: float, beta: float) -> float:
    return 2 * (ranks - 1) * alpha + 2 * (ranks - 1) / ranks * nbytes / beta


def modelled_step(compute: float, nbytes: float, ranks: int, bucket_mb: float, alpha: float, beta: float) -> float:
    """Forward (a third of the step), then backward overlapped with every bucket's all-reduce but the
    last, which starts when backward ends."""
    cap = bucket_mb * 2 ** 20
    buckets = [cap] * int(nbytes // cap) + ([nbytes % cap] if nbytes % cap else [])
    forward, backward = compute / 3, 2 * compute / 3
    early = sum(ring_time(b, ranks, alpha, beta) for b in buckets[:-1])
    return forward + max(backward, early) + ring_time(buckets[-1], ranks, alpha, beta)


def report(one: dict, two: dict) -> None:
    print("\nmeasured (median step, batch 64 per rank, one BLAS thread per rank)")
    print(f"{'':22}{'1 rank':>10}{'2 ranks':>10}{'2 / 1':>8}")
    for key in [k for k in one if k not in ("world_size", "all_reduce")]:
        print(f"{key:22}{1e3 * one[key]:8.2f}ms{1e3 * two[key]:8.2f}ms{two[key] / one[key]:8.2f}")
    print("\nall_reduce between 2 ranks (fastest of 30): " + ", ".join(
        f"{n // 1024} KiB {1e6 * t:.0f} us" for n, t in two["all_reduce"]))
    alpha, beta = fit_alpha_beta(two["all_reduce"])
    print(f"fitted: alpha {1e6 * alpha:.1f} us, beta {beta / 1e9:.2f} GB/s (fitted over "
          f"{len(two['all_reduce'])} sizes, 1 KiB to {two['all_reduce'][-1][0] // 2 ** 20} MiB)")
    for label, (a, b) in {"measured here": (alpha, beta), **NETWORKS}.items():
        print(f"\nmodelled step time, ms ({label}: alpha {1e6 * a:.0f} us, beta {b / 1e9:.1f} GB/s)")
        for name, sizes in (("W2", W2_SIZES), ("10M", BIG_SIZES)):
            nbytes = 4 * parameter_count(sizes)
            compute = one[f"{name} plain"]
            print(f"{name}: {parameter_count(sizes):,} parameters ({nbytes / 2 ** 20:.1f} MiB), compute "
                  f"{1e3 * compute:.1f} ms")
            print("  ranks " + "".join(f"{f'{mb} MB buckets':>15}" for mb in BUCKETS_MB) + "   best")
            for ranks in RANKS:
                times = [modelled_step(compute, nbytes, ranks, mb, a, b) for mb in BUCKETS_MB]
                best = BUCKETS_MB[int(np.argmin(times))]
                print(f"  {ranks:5d} " + "".join(f"{1e3 * t:15.2f}" for t in times) + f"   {best} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--compiled", action="store_true", help="also time the compiled loss (numba compiles)")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--report", type=Path, help="print the report of a saved run instead of measuring")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.steps, args.compiled, args.quick)
        return
    if args.report:
        saved = json.loads(args.report.read_text())
        print(f"saved run of {saved['date']}: load average {saved['load_before']} before, {saved['load_after']} after")
        report(saved["1"], saved["2"])
        return
    if args.quick:
        args.steps = 10
    load = [round(v, 2) for v in os.getloadavg()]
    print(f"{os.cpu_count()} cores, load average {load} before the run")
    one, two = launch(1, args), launch(2, args)
    report(one, two)
    after = [round(v, 2) for v in os.getloadavg()]
    print(f"\nload average {after} after the run")
    if not args.quick:
        saved = ROOT / "benchmarks" / "results" / f"distributed-{time.strftime('%Y-%m-%d')}.json"
        saved.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M"), "cores": os.cpu_count(),
                                     "load_before": load, "load_after": after, "1": one, "2": two}, indent=1))
        name = saved.relative_to(ROOT)
        print(f"saved to {name} (python benchmarks/distributed.py --report {name})")


if __name__ == "__main__":
    main()
