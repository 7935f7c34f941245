"""Interleaved, repeated timing of several step functions.

The machines this runs on are noisy (shared cores, frequency scaling), and noise that arrives in
bursts would favour whichever library happened to run in a quiet moment. So libraries are not timed
one after another: each *round* times a short batch of every library, the order rotating between
rounds, and the reported figure is the median over rounds of the per-step time. A burst then spoils
one round of every library rather than all rounds of one.
"""
from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Measurement:
    median: float        # seconds per step
    spread: float        # (upper - lower quartile) / median over rounds: how noisy the figure is
    reps: int            # steps per round
    rounds: int


def _time_batch(step: Callable[[], object], reps: int, clock: Callable[[], float]) -> float:
    """Seconds per step over ``reps`` back-to-back steps. The collector runs first so garbage left by
    the previous library is not charged to this one; it stays enabled while timing, as in real use."""
    gc.collect()   # cheap: measure() froze the long-lived heap
    start = clock()
    for _ in range(reps):
        step()
    return (clock() - start) / reps


def _calibrate(step: Callable[[], object], batch_seconds: float, clock: Callable[[], float]) -> int:
    """Steps per round so that one round of this library lasts about ``batch_seconds``."""
    one = min(_time_batch(step, 1, clock) for _ in range(3))
    return max(1, round(batch_seconds / max(one, 1e-7)))


def measure(steps: dict[str, Callable[[], object]], rounds: int, batch_seconds: float,
            warmup: int = 3, cpu_time: bool = False) -> dict[str, Measurement]:
    """Median seconds per warm step of every entry of ``steps``, timed in interleaved rounds.

    ``cpu_time`` times with the process's CPU time instead of the wall clock: on a machine other jobs
    load, the time a step waits for a core then counts for no library. It adds up every thread's
    time, so it suits steps that run on one thread (``--threads 1``).

    The objects alive before timing (all of torch, JAX, ...) are moved out of the collector's reach
    with ``gc.freeze``: a process that loaded only one of these libraries would not pay for scanning
    the others' objects in every full collection, so neither should its timings here.
    """
    gc.collect()
    gc.freeze()
    for step in steps.values():
        for _ in range(warmup):
            step()
    clock = time.process_time if cpu_time else time.perf_counter
    reps = {name: _calibrate(step, batch_seconds, clock) for name, step in steps.items()}
    names = list(steps)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            samples[name].append(_time_batch(steps[name], reps[name], clock))
    results = {}
    for name in names:
        times = samples[name]
        median = statistics.median(times)
        if len(times) >= 4:
            q1, _, q3 = statistics.quantiles(times, n=4)
            spread = (q3 - q1) / median
        else:
            spread = (max(times) - min(times)) / median
        results[name] = Measurement(median, spread, reps[name], rounds)
    return results
