"""Handwritten digits, data-parallel: the MLP of train_digits.py trained by several processes at once.

Each process (rank) builds the model, ``DistributedDataParallel`` gives every rank rank 0's weights,
and a ``DistributedSampler`` gives each rank its own share of every epoch's shuffled batches. After
each ``loss.backward()`` the gradients are the average over all ranks' batches (all-reduced in
buckets while backward runs), so the ranks take identical Adam steps and stay identical: the script
checks that at the end. With ``--compiled`` the loss is ``jitgrad.compile``d over ``ddp.module``;
its compiled backward feeds the same gradient hooks.

    mpirun -n 2 python examples/train_digits_ddp.py --quick
    python -m jitgrad.distributed.run -n 2 examples/train_digits_ddp.py --compiled

Needs scikit-learn and MPI: ``pip install -e ".[examples,distributed]"``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # train_digits.py: the data and the model

import jitgrad  # noqa: E402
import jitgrad.distributed as dist  # noqa: E402
import jitgrad.nn as nn  # noqa: E402
from jitgrad.nn.parallel import DistributedDataParallel  # noqa: E402
from jitgrad.utils.data import DataLoader, DistributedSampler, TensorDataset  # noqa: E402
from train_digits import accuracy, load_data, mlp  # noqa: E402


def mean_over_ranks(value: float) -> float:
    total = jitgrad.tensor([value], dtype=jitgrad.float64)
    dist.all_reduce(total)
    return total.item() / dist.get_world_size()


def largest_difference_between_ranks(model: nn.Module) -> float:
    """How far apart the ranks' parameters are: the largest (max - min) over ranks of any element."""
    flat = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()]).astype(np.float64)
    high, low = jitgrad.tensor(flat), jitgrad.tensor(-flat)
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    dist.all_reduce(low, op=dist.ReduceOp.MAX)
    return float((high + low).max())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a subset, two epochs: a few seconds")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--compiled", action="store_true", help="jitgrad.compile the loss")
    parser.add_argument("--bucket-cap-mb", type=float, default=25)
    args = parser.parse_args(argv)
    epochs = args.epochs or (2 if args.quick else 10)

    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    train_images, train_labels, test_images, test_labels = load_data(400 if args.quick else None)
    dataset = TensorDataset(train_images, train_labels)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, drop_last=True)

    jitgrad.manual_seed(rank)  # different weights on purpose: DDP starts every rank from rank 0's
    model = DistributedDataParallel(mlp(), bucket_cap_mb=args.bucket_cap_mb)
    criterion = nn.CrossEntropyLoss()
    loss_fn = (jitgrad.compile(lambda x, y: criterion(model.module(x), y)) if args.compiled
               else lambda x, y: criterion(model(x), y))
    optimizer = jitgrad.optim.Adam(model.parameters(), lr=args.lr)
    if rank == 0:
        print(f"{world} ranks, {len(loader)} batches of {args.batch_size} per rank per epoch "
              f"({len(dataset)} training images), {len(model.bucket_indices)} gradient buckets, "
              f"{'compiled' if args.compiled else 'eager'} loss")
    for epoch in range(1, epochs + 1):
        sampler.set_epoch(epoch)
        total, start = 0.0, time.perf_counter()
        for images, labels in loader:
            optimizer.zero_grad()
            loss = loss_fn(images, labels)
            loss.backward()
            optimizer.step()
            total += loss.item()
        seconds = time.perf_counter() - start
        loss_mean = mean_over_ranks(total / len(loader))
        test_accuracy = accuracy(model.module, test_images, test_labels)
        if rank == 0:
            print(f"epoch {epoch:2d}: loss {loss_mean:.4f} | test accuracy {100 * test_accuracy:.1f}% | "
                  f"{seconds:.3f} s")
    difference = largest_difference_between_ranks(model.module)
    if rank == 0:
        print(f"ranks agree: largest parameter difference between ranks {difference:.3g}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
