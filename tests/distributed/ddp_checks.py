"""The checks tests/distributed/test_ddp.py asserts on, run as one job of two ranks (``mpirun -n 2``).

Each check returns plain numbers; every rank writes its results to ``<out>/rank<r>.json`` and the
test reads them, so one launch (a second or two of imports) serves every check. Everything is
float64, so "equal to one process" holds to rounding: two ranks' mean gradients averaged are the
gradient of the mean over their concatenated batches, summed in another order.
"""
from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np

import jitgrad as jg
import jitgrad.distributed as dist
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.nn.parallel import DistributedDataParallel
from jitgrad.utils.data import DistributedSampler

BATCH = 8  # per rank
STEPS = 20


def mlp(seed: int) -> nn.Module:
    jg.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3)).double()


def batch(step: int) -> tuple[jg.Tensor, jg.Tensor]:
    """The step's whole batch (both ranks' shards), the same on every rank."""
    rng = np.random.default_rng(step)
    return jg.tensor(rng.standard_normal((2 * BATCH, 6))), jg.tensor(rng.integers(0, 3, 2 * BATCH))


def shard(values: jg.Tensor, rank: int) -> jg.Tensor:
    return values[rank * BATCH:(rank + 1) * BATCH]


def copy_of(model: nn.Module) -> nn.Module:
    twin = mlp(0)
    twin.load_state_dict(model.state_dict())
    return twin


def largest_difference(a: nn.Module, b: nn.Module, grads: bool = False) -> float:
    pairs = zip(a.parameters(), b.parameters())
    if grads:
        return max(float(np.abs(p.grad.numpy() - q.grad.numpy()).max()) for p, q in pairs)
    return max(float(np.abs(p.detach().numpy() - q.detach().numpy()).max()) for p, q in pairs)


def train_equals_one_process(rank: int) -> dict:
    """20 SGD steps of two ranks on their shards, against one process on the concatenated batches.
    The ranks start from different weights: DDP must take rank 0's."""
    model = mlp(seed=rank)
    ddp = DistributedDataParallel(model, bucket_cap_mb=0.001)  # 1 KiB: several buckets
    reference = copy_of(model)
    started_equal = largest_difference(model, mlp(0))
    optimizer = jg.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    reference_optimizer = jg.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for step in range(STEPS):
        x, y = batch(step)
        optimizer.zero_grad()
        F.cross_entropy(ddp(shard(x, rank)), shard(y, rank)).backward()
        optimizer.step()
        reference_optimizer.zero_grad()
        F.cross_entropy(reference(x), y).backward()
        reference_optimizer.step()
    events = [(e.kind, e.index, e.time) for e in ddp.reduction_events]
    return {"started_equal": started_equal, "difference": largest_difference(model, reference),
            "buckets": ddp.bucket_indices, "events": events}


def no_sync_accumulates(rank: int) -> dict:
    """A micro-batch under no_sync (local gradients, no all-reduce), then one synchronised: the
    average over ranks of the sum of both micro-batches' gradients."""
    model = mlp(0)
    ddp = DistributedDataParallel(model)
    x, y = batch(100)
    with ddp.no_sync():
        F.cross_entropy(ddp(shard(x, rank)), shard(y, rank)).backward()
    local_events = len(ddp.reduction_events)
    local = model[0].weight.grad.numpy().copy()
    gathered = [jg.zeros(*local.shape, dtype=jg.float64) for _ in range(2)]
    dist.all_gather(gathered, jg.tensor(local))
    x2, y2 = batch(101)
    F.cross_entropy(ddp(shard(x2, rank)), shard(y2, rank)).backward()
    reference = mlp(0)
    for r in range(2):
        for xs, ys in ((x, y), (x2, y2)):
            (F.cross_entropy(reference(shard(xs, r)), shard(ys, r)) / 2).backward()
    return {"events_under_no_sync": local_events,
            "ranks_differed_under_no_sync": float(np.abs(gathered[0].numpy() - gathered[1].numpy()).max()),
            "difference": largest_difference(model, reference, grads=True)}


class TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        jg.manual_seed(1)
        self.body = nn.Linear(4, 5).double()
        self.a = nn.Linear(5, 1).double()
        self.b = nn.Linear(5, 1).double()
        self.never = nn.Linear(5, 1).double()

    def forward(self, x: jg.Tensor, use_b: bool) -> jg.Tensor:
        h = self.body(x).tanh()
        return self.a(h) + self.b(h) if use_b else self.a(h)


def find_unused_parameters(rank: int) -> dict:
    """Rank 0 uses head b, rank 1 does not; no rank uses ``never``. b's gradient is rank 0's halved,
    ``never`` keeps no gradient."""
    model = TwoHeads()
    ddp = DistributedDataParallel(model, find_unused_parameters=True)
    x = jg.tensor(np.random.default_rng(7).standard_normal((4, 4)))
    ddp(x, use_b=rank == 0).pow(2).mean().backward()
    reference = TwoHeads()
    for r in range(2):
        (reference(x, use_b=r == 0).pow(2).mean() / 2).backward()
    names = ("body", "a", "b")
    difference = max(float(np.abs(getattr(model, n).weight.grad.numpy()
                                   - getattr(reference, n).weight.grad.numpy()).max()) for n in names)
    return {"difference": difference, "never_has_grad": model.never.weight.grad is not None}


def unused_parameter_is_an_error(rank: int) -> dict:
    model = TwoHeads()
    ddp = DistributedDataParallel(model)
    try:
        ddp(jg.ones(2, 4, dtype=jg.float64), use_b=False).sum().backward()
    except RuntimeError as error:
        return {"message": str(error)}
    return {"message": None}


def compiled_loss_is_reduced(rank: int) -> dict:
    """A loss compiled over ``ddp.module``, and one over the wrapper itself: the backward node of the
    compiled loss feeds the parameters' AccumulateGrads, whose hooks reduce the buckets. Three steps
    each against one process, with no warning (the wrapper's forward compiles too: the reducer's
    state is outside what jitgrad.compile guards)."""
    results = {}
    for form in ("module", "wrapper"):
        model = mlp(0)
        ddp = DistributedDataParallel(model, bucket_cap_mb=0.001)
        reference = copy_of(model)
        net = ddp.module if form == "module" else ddp
        loss_of = jg.compile(lambda x, y: F.cross_entropy(net(x), y), cache=False)
        optimizer = jg.optim.SGD(ddp.parameters(), lr=0.1)
        reference_optimizer = jg.optim.SGD(reference.parameters(), lr=0.1)
        reductions = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for step in range(3):
                x, y = batch(step)
                optimizer.zero_grad()
                loss_of(shard(x, rank), shard(y, rank)).backward()
                reductions.append(sum(e.kind == "reduced" for e in ddp.reduction_events))
                optimizer.step()
                reference_optimizer.zero_grad()
                F.cross_entropy(reference(x), y).backward()
                reference_optimizer.step()
        results[form] = {"difference": largest_difference(model, reference), "programs": len(loss_of.programs),
                         "reductions": reductions, "buckets": len(ddp.bucket_indices),
                         "warnings": [str(w.message) for w in caught]}
    normalized = DistributedDataParallel(nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4)).double())
    buffered = jg.compile(lambda x: normalized(x).sum(), cache=False)
    communicating = jg.compile(lambda t: dist.all_reduce(t) or t * 2, cache=False)
    for key, call in (("buffers_inside", lambda: buffered(batch(0)[0])),
                      ("all_reduce_inside", lambda: communicating(jg.ones(2)))):
        with warnings.catch_warnings(record=True) as caught:   # run eagerly, said (both ranks communicate)
            warnings.simplefilter("always")
            call()
        results[key] = " ".join(str(w.message) for w in caught) or None
    results["all_reduce_inside_value"] = communicating(jg.ones(2)).tolist()
    return results


def compiled_step_with_backward_inside_runs_eagerly(rank: int) -> dict:
    """A whole step compiled with backward inside cannot call the hooks: it must run eagerly (one
    warning), reduced, never compiled without the all-reduce."""
    model = mlp(0)
    ddp = DistributedDataParallel(model)
    reference = copy_of(model)

    @jg.compile(cache=False)
    def step(x, y):
        loss = F.cross_entropy(ddp.module(x), y)
        loss.backward()
        with jg.no_grad():
            for p in ddp.module.parameters():
                p -= 0.1 * p.grad
                p.grad = None
        return loss

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for s in range(2):
            step(*(shard(v, rank) for v in batch(s)))
    for s in range(2):
        x, y = batch(s)
        F.cross_entropy(reference(x), y).backward()
        with jg.no_grad():
            for p in reference.parameters():
                p -= 0.1 * p.grad
                p.grad = None
    return {"difference": largest_difference(model, reference), "programs": len(step.programs),
            "warnings": [str(w.message) for w in caught]}


def sampler_shards(rank: int) -> dict:
    sampler = DistributedSampler(range(11), shuffle=True, seed=5)
    sampler.set_epoch(3)
    mine = list(sampler)
    gathered = [jg.zeros(len(mine), dtype=jg.int64) for _ in range(2)]
    dist.all_gather(gathered, jg.tensor(mine))
    return {"mine": mine, "all": [g.tolist() for g in gathered], "length": len(sampler)}


class HiddenHead(nn.Module):
    """Returns head a's output and keeps head b's on the side, where the wrapper cannot see it."""

    def __init__(self) -> None:
        super().__init__()
        jg.manual_seed(2)
        self.a = nn.Linear(3, 1).double()
        self.b = nn.Linear(3, 1).double()

    def forward(self, x: jg.Tensor) -> jg.Tensor:
        self.side = self.b(x)
        return self.a(x)


def hidden_gradient_is_an_error_then_training_goes_on(rank: int) -> dict:
    """With find_unused_parameters, a parameter the outputs do not reach is reduced as unused when
    backward begins; if it then gets a gradient, that gradient would be lost: an error, not a silent
    drop. The next backward starts afresh."""
    model = HiddenHead()
    ddp = DistributedDataParallel(model, find_unused_parameters=True)
    x = jg.ones(2, 3, dtype=jg.float64)
    message = None
    try:
        out = ddp(x)
        (out.sum() + model.side.sum()).backward()
    except RuntimeError as error:
        message = str(error)
    model.zero_grad()
    ddp(x).sum().backward()
    return {"message": message, "a_grad": model.a.weight.grad.tolist(), "b_grad": model.b.weight.grad is not None}


def cast_after_wrapping_is_an_error(rank: int) -> dict:
    model = nn.Linear(3, 2)
    ddp = DistributedDataParallel(model)
    ddp.double()
    try:
        ddp(jg.ones(2, 3, dtype=jg.float64)).sum().backward()
    except RuntimeError as error:
        return {"message": str(error)}
    return {"message": None}


CHECKS = [train_equals_one_process, no_sync_accumulates, find_unused_parameters, compiled_loss_is_reduced,
          compiled_step_with_backward_inside_runs_eagerly, sampler_shards,
          hidden_gradient_is_an_error_then_training_goes_on, cast_after_wrapping_is_an_error,
          unused_parameter_is_an_error]


def main(out: Path) -> None:
    dist.init_process_group()
    rank = dist.get_rank()
    results = {"world_size": dist.get_world_size()}
    for check in CHECKS:
        results[check.__name__] = check(rank)
        dist.barrier()
    (out / f"rank{rank}.json").write_text(json.dumps(results))
    dist.destroy_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
