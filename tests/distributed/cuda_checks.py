"""Collectives and DistributedDataParallel on CUDA tensors, through host buffers: run by
tests/cuda/test_distributed_on_cuda.py as a job of two ranks (on a GPU, or numba's simulator when
``NUMBA_ENABLE_CUDASIM=1`` is inherited). Each rank writes its results to ``<out>/rank<r>.json``."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import jitgrad as jg
import jitgrad.distributed as dist
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.nn.parallel import DistributedDataParallel


def main(out: Path) -> None:
    dist.init_process_group()
    rank = dist.get_rank()
    results: dict = {}
    summed = jg.tensor([1.0, 2.0], device="cuda") * (rank + 1)
    dist.all_reduce(summed)
    results["all_reduce"] = summed.cpu().tolist()
    gathered = [jg.zeros(2, device="cuda") for _ in range(2)]
    dist.all_gather(gathered, jg.tensor([rank, rank + 0.5], device="cuda"))
    results["all_gather"] = [g.cpu().tolist() for g in gathered]
    sent = jg.full((3,), float(rank), device="cuda")
    dist.broadcast(sent, 1)
    results["broadcast"] = sent.cpu().tolist()

    jg.manual_seed(rank)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).double().to("cuda")
    ddp = DistributedDataParallel(model, bucket_cap_mb=0.0001)  # several buckets
    reference = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).double()
    reference.load_state_dict({name: value.cpu() for name, value in model.state_dict().items()})
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((6, 4)), rng.integers(0, 3, 6)
    part = slice(3 * rank, 3 * rank + 3)
    F.cross_entropy(ddp(jg.tensor(x[part], device="cuda")), jg.tensor(y[part], device="cuda")).backward()
    F.cross_entropy(reference(jg.tensor(x)), jg.tensor(y)).backward()
    results["buckets"] = len(ddp.bucket_indices)
    results["grad_devices"] = sorted({str(p.grad.device) for p in model.parameters()})
    results["difference"] = max(float(np.abs(p.grad.cpu().numpy() - q.grad.numpy()).max())
                                for p, q in zip(model.parameters(), reference.parameters()))
    (out / f"rank{rank}.json").write_text(json.dumps(results))
    dist.destroy_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
