"""A digits classifier written as a PyTorch user writes one; it runs on jitgrad by its first line.

Only the data loading is specific to this script (scikit-learn's 8x8 digits instead of a torchvision
dataset); the rest is plain PyTorch, in the idioms of PyTorch's tutorials: the device from
``torch.accelerator``, ``nn.Sequential(...).to(device)``, ``optim.Adam``, ``DataLoader`` over a
``TensorDataset``, ``loss.backward()``, ``optimizer.step()``, correct answers counted with
``.type(torch.float)``, and ``torch.compile(model)`` with ``--compile``.
tests/examples/test_pytorch_style.py runs it with jitgrad, eager and compiled, and with PyTorch.
"""
import argparse

import numpy as np

import jitgrad as torch

nn, F = torch.nn, torch.nn.functional  # not `import torch.nn as nn`: that imports the package named torch

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--train-size", type=int, default=None)
parser.add_argument("--compile", action="store_true")
parser.add_argument("--init", default=None, help="an .npz of initial weights, by state_dict key")
parser.add_argument("--no-shuffle", action="store_true")
args = parser.parse_args()

# ---- data loading: scikit-learn's digits, an 80/20 split ----------------------------------------
from sklearn.datasets import load_digits

digits = load_digits()
order = np.random.default_rng(0).permutation(len(digits.target))
images = torch.tensor(digits.data[order] / 16.0, dtype=torch.float32)
labels = torch.tensor(digits.target[order])
cut = int(0.8 * len(labels))
train_set = torch.utils.data.TensorDataset(images[:cut][:args.train_size], labels[:cut][:args.train_size])
test_images, test_labels = images[cut:], labels[cut:]
# -------------------------------------------------------------------------------------------------

device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
torch.manual_seed(0)
train_loader = torch.utils.data.DataLoader(train_set, batch_size=32, shuffle=not args.no_shuffle)
model = nn.Sequential(
    nn.Linear(64, 128),
    nn.ReLU(),
    nn.Linear(128, 10),
).to(device)
if args.init:
    model.load_state_dict({name: torch.from_numpy(value) for name, value in np.load(args.init).items()})
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
criterion = nn.CrossEntropyLoss()
forward = torch.compile(model) if args.compile else model


def evaluate():
    model.eval()
    with torch.no_grad():
        x, y = test_images.to(device), test_labels.to(device)
        logits = model(x)
        loss = F.cross_entropy(logits, y).item()
        accuracy = (logits.argmax(dim=1) == y).type(torch.float).sum().item() / len(y)
    model.train()
    return loss, accuracy


for epoch in range(args.epochs):
    total = 0.0
    for x, y in train_loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = criterion(forward(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(y)
    test_loss, accuracy = evaluate()
    print(f"epoch {epoch + 1}: train loss {total / len(train_set):.6f}, test loss {test_loss:.6f}, "
          f"test accuracy {accuracy:.4f}")
