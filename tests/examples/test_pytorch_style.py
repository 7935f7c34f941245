"""Issue 15's "done when": a PyTorch user's digits script runs on jitgrad by its import line alone.

``pytorch_style_digits.py`` is plain PyTorch (``nn.Sequential``, ``optim.Adam``, ``DataLoader`` of a
``TensorDataset``, ``loss.backward()``, ``optimizer.step()``, ``torch.compile`` of the model with
``--compile``); its first line is ``import jitgrad as torch``. The tests run that text eagerly and
compiled, and, where PyTorch is installed, the same text with ``import torch``, from the same initial
weights and batch order, and compare the printed trajectories epoch by epoch.
"""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from example_runs import need, numbers, run

SCRIPT = Path(__file__).with_name("pytorch_style_digits.py")
IMPORT = "import jitgrad as torch\n"
EPOCH = r"epoch \d+: train loss ([\d.]+), test loss ([\d.]+), test accuracy ([\d.]+)"
ARGS = ("--epochs", "3", "--train-size", "600", "--no-shuffle")


@pytest.fixture(scope="module")
def initial_weights(tmp_path_factory) -> str:
    """PyTorch's default initialisation of the two layers, drawn with numpy, as an ``.npz``."""
    rng = np.random.default_rng(1)
    weights = {}
    for index, (fan_in, fan_out) in zip((0, 2), ((64, 128), (128, 10))):
        bound = 1 / np.sqrt(fan_in)
        weights[f"{index}.weight"] = rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32)
        weights[f"{index}.bias"] = rng.uniform(-bound, bound, fan_out).astype(np.float32)
    path = tmp_path_factory.mktemp("digits") / "initial.npz"
    np.savez(path, **weights)
    return str(path)


@pytest.fixture(scope="module")
def eager(initial_weights) -> np.ndarray:
    need("sklearn")
    return np.array(numbers(EPOCH, run(SCRIPT, *ARGS, "--init", initial_weights)))


def test_the_script_is_plain_pytorch():
    """Its code names jitgrad in the import line only, so the comparison below runs one program twice."""
    text = SCRIPT.read_text()
    code = text.replace(ast.get_docstring(ast.parse(text), clean=False), "")
    assert code.count("jitgrad") == 1 and IMPORT in code


def test_eager_learns(eager):
    train_loss, test_loss, accuracy = eager.T
    assert len(eager) == 3
    assert train_loss[-1] < 0.5 * train_loss[0] and test_loss[-1] < test_loss[0]
    assert accuracy[-1] > 0.85


def test_compiled_agrees_with_eager(eager, initial_weights):
    compiled = np.array(numbers(EPOCH, run(SCRIPT, *ARGS, "--init", initial_weights, "--compile")))
    np.testing.assert_allclose(compiled, eager, rtol=1e-5, atol=1e-6)


def test_same_trajectory_as_pytorch(eager, initial_weights, tmp_path):
    pytest.importorskip("torch")
    text = SCRIPT.read_text().replace(IMPORT, "import torch\n")
    (tmp_path / "torch_digits.py").write_text(text)
    theirs = np.array(numbers(EPOCH, run(tmp_path / "torch_digits.py", *ARGS, "--init", initial_weights)))
    # float32 in both, summed in other orders: Adam's first steps amplify the rounding a little
    np.testing.assert_allclose(eager[:, :2], theirs[:, :2], rtol=2e-3)
    np.testing.assert_allclose(eager[:, 2], theirs[:, 2], atol=2 / 360)
