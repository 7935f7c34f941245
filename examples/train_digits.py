"""Handwritten digits: an MLP and a small CNN trained eagerly and compiled, side by side.

The data are the 8x8 digits scikit-learn ships (``sklearn.datasets.load_digits``: 1,797 images, no
download). Each model is built once and copied, so the eager run and the compiled one start from
the same weights and see the batches in the same order (each loader has its own seeded generator):
their losses and accuracies agree epoch by epoch, and only the time differs. The compiled run
compiles the loss, ``jitgrad.compile(lambda x, y: criterion(model(x), y))``: the model's parameters
are inputs of one numba program that returns the loss and its gradients; ``loss.backward()`` fills
the ``.grad``s from it and Adam steps eagerly, as in docs/nn.md. The first compiled epoch includes
compiling (a second process reads the kernels from jitgrad's disk cache).

    python examples/train_digits.py            # both models, to >= 97% test accuracy, and a PNG
    python examples/train_digits.py --quick    # a few seconds: a subset, two epochs

Needs scikit-learn, and matplotlib for the plot: ``pip install -e ".[examples]"``.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, TextIO

import numpy as np

import jitgrad
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.random import Generator
from jitgrad.utils.data import DataLoader, TensorDataset

INSTALL = 'pip install -e ".[examples]"'


class ProgressBar:
    """A one-line progress bar on stderr: ``label [#####.....] 12/45 loss 0.1234``.

    A terminal sees the line redrawn in place (at most ten times a second); a log file or a pipe gets
    only the finished line, so CI logs stay short."""

    def __init__(self, items: Iterable, total: int, label: str, stream: TextIO = sys.stderr, width: int = 30) -> None:
        self.items, self.total, self.label, self.stream, self.width = items, total, label, stream, width
        self.done, self.note, self.drawn_at = 0, "", 0.0
        self.live = stream.isatty()

    def __iter__(self) -> Iterator:
        for item in self.items:
            yield item
            self.done += 1
            if self.live and time.perf_counter() - self.drawn_at > 0.1:
                self._draw("\r")
        self._draw("\r" if self.live else "")
        self.stream.write("\n")
        self.stream.flush()

    def set_note(self, note: str) -> None:
        self.note = note

    def _draw(self, start: str) -> None:
        filled = self.width * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"{start}{self.label} [{bar}] {self.done}/{self.total} {self.note}")
        self.stream.flush()
        self.drawn_at = time.perf_counter()


def load_data(train_size: int | None, seed: int = 0) -> tuple[jitgrad.Tensor, ...]:
    """Train and test tensors: pixels scaled to [0, 1] as ``(n, 1, 8, 8)`` float32 images, labels as
    int64. A fixed random 80/20 split (not stratified: the ten classes are nearly balanced);
    ``train_size`` keeps only the first images of the training part."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        sys.exit(f"train_digits.py needs scikit-learn for the digits data: {INSTALL}")
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    cut = int(0.8 * len(labels))
    train, test = order[:cut][:train_size], order[cut:]
    return tuple(jitgrad.from_numpy(np.ascontiguousarray(a)) for a in
                 (images[train], labels[train], images[test], labels[test]))


def mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


class SmallCNN(nn.Module):
    """Two 3x3 convolutions with max pooling: 8x8 -> 4x4 -> 2x2, then a linear layer."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x: jitgrad.Tensor) -> jitgrad.Tensor:
        x = self.pool(F.relu(self.conv1(x)))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.head(x.flatten(1))


def missing_for_cnn() -> list[str]:
    """What this jitgrad lacks for the CNN (the convolution layers came with issue 15)."""
    wanted = [("nn.Conv2d", nn), ("nn.MaxPool2d", nn), ("nn.functional.max_pool2d", F)]
    return [name for name, where in wanted if not hasattr(where, name.rsplit(".", 1)[1])]


@dataclass
class Run:
    """One training run's model, optimizer, loss function and its history per epoch."""

    name: str
    model: nn.Module
    loss_fn: Callable
    optimizer: jitgrad.optim.Optimizer
    generator: Generator
    seconds: list[float] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    accuracies: list[float] = field(default_factory=list)


def loss_of(model: nn.Module, criterion: nn.Module) -> Callable[[jitgrad.Tensor, jitgrad.Tensor], jitgrad.Tensor]:
    """The loss of a batch; compiled, the model is read from this closure, its parameters as inputs."""
    return lambda images, labels: criterion(model(images), labels)


def make_runs(build: Callable[[], nn.Module], lr: float, seed: int, modes: tuple[str, ...]) -> list[Run]:
    """A run per mode ("eager", "compiled") of the same model from the same initial weights."""
    criterion = nn.CrossEntropyLoss()
    jitgrad.manual_seed(seed)
    first = build()
    runs = []
    for mode in modes:
        model = build()
        model.load_state_dict(first.state_dict())

        loss_fn = loss_of(model, criterion)
        if mode == "compiled":
            loss_fn = jitgrad.compile(loss_fn)
        optimizer = jitgrad.optim.Adam(model.parameters(), lr=lr)
        runs.append(Run(mode, model, loss_fn, optimizer, Generator(seed)))
    return runs


def accuracy(model: nn.Module, images: jitgrad.Tensor, labels: jitgrad.Tensor) -> float:
    model.eval()
    with jitgrad.no_grad():
        correct = (model(images).argmax(dim=1) == labels).sum().item()
    model.train()
    return correct / len(labels)


def train_epoch(run: Run, data: TensorDataset, batch_size: int, label: str) -> None:
    loader = DataLoader(data, batch_size=batch_size, shuffle=True, drop_last=True, generator=run.generator)
    bar = ProgressBar(loader, len(loader), label)
    total, start = 0.0, time.perf_counter()
    for images, labels in bar:
        run.optimizer.zero_grad()
        loss = run.loss_fn(images, labels)
        loss.backward()
        run.optimizer.step()
        value = loss.item()
        total += value
        bar.set_note(f"loss {value:.4f}")
    run.seconds.append(time.perf_counter() - start)
    run.losses.append(total / len(loader))


def train(name: str, build: Callable[[], nn.Module], data: tuple[jitgrad.Tensor, ...], epochs: int,
          batch_size: int, lr: float, seed: int, modes: tuple[str, ...] = ("eager", "compiled")) -> list[Run]:
    """Trains ``build()`` in each mode, an epoch of each in turn, and prints a line per epoch."""
    train_images, train_labels, test_images, test_labels = data
    dataset = TensorDataset(train_images, train_labels)
    runs = make_runs(build, lr, seed, modes)
    print(f"{name}: {sum(p.numel() for p in runs[0].model.parameters())} parameters, "
          f"{len(dataset)} training and {len(test_labels)} test images, batch {batch_size}")
    for epoch in range(1, epochs + 1):
        for run in runs:
            train_epoch(run, dataset, batch_size, f"{name} {run.name:8} epoch {epoch}/{epochs}")
            run.accuracies.append(accuracy(run.model, test_images, test_labels))
        times = ", ".join(f"{run.name} {run.seconds[-1]:6.3f} s" for run in runs)
        compiling = " (compiling)" if epoch == 1 and "compiled" in modes else ""
        print(f"{name} epoch {epoch:2d}: {times}{compiling} | loss "
              + " / ".join(f"{run.losses[-1]:.4f}" for run in runs) + " | test accuracy "
              + " / ".join(f"{100 * run.accuracies[-1]:.1f}%" for run in runs))
    for run in runs:
        steady = run.seconds[1:] or run.seconds
        print(f"{name} {run.name}: test accuracy {100 * run.accuracies[-1]:.2f}%, "
              f"{np.median(steady):.3f} s per epoch after the first (median)")
    return runs


def plot(histories: dict[str, list[Run]], path: str) -> None:
    try:
        import matplotlib
    except ImportError:
        print(f"no plot: matplotlib is not installed ({INSTALL})")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 4))
    for color, (name, runs) in enumerate(histories.items()):
        for run, style in zip(runs, ("-", "--")):
            epochs = range(1, len(run.losses) + 1)
            look = {"linestyle": style, "color": f"C{color}", "label": f"{name} {run.name}"}
            left.plot(epochs, run.losses, **look)
            middle.plot(epochs, [100 * a for a in run.accuracies], **look)
            right.plot(epochs, run.seconds, marker="o" if run.name == "eager" else "x", **look)
    left.set(xlabel="epoch", ylabel="training loss", yscale="log", title="loss")
    middle.set(xlabel="epoch", ylabel="test accuracy (%)", title="accuracy")
    right.set(xlabel="epoch", ylabel="seconds", yscale="log", title="time per epoch (the first compiles)")
    for axes in (left, middle, right):
        axes.grid(alpha=0.3)
        axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    print(f"plot saved to {path}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="a few seconds: 400 images, 2 epochs at a higher learning rate, the CNN eagerly "
                             "only (compiling it takes about 20 s)")
    parser.add_argument("--models", default="mlp,cnn", help="comma-separated: mlp,cnn (default: both)")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--plot", default="train_digits.png", help="where to save the PNG ('' for none)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    settings = {"mlp": (mlp, 20, 32, 3e-3), "cnn": (SmallCNN, 15, 32, 3e-3)}
    models = args.models.split(",")
    for name in models:
        if name not in settings:
            parser.error(f"unknown model {name!r}: choose from {', '.join(settings)}")
    if "cnn" in models and missing_for_cnn():
        print(f"cnn: skipped, this jitgrad has no {', '.join(missing_for_cnn())} (the convolution layers of issue 15)")
        models.remove("cnn")
    data = load_data(400 if args.quick else None) if models else ()
    histories = {}
    for name in models:
        build, epochs, batch_size, lr = settings[name]
        modes = ("eager", "compiled")
        print()
        if args.quick:
            epochs, lr = 2, 1e-2
            if name == "cnn":
                modes = ("eager",)
                print("cnn: eager only with --quick (compiling the CNN takes about 20 s)")
        epochs = args.epochs or epochs
        histories[name] = train(name, build, data, epochs, batch_size, lr, args.seed, modes)
    if args.plot and histories:
        plot(histories, args.plot)


if __name__ == "__main__":
    main()
