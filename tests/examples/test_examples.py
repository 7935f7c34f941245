"""Each script of ``examples/`` runs with ``--quick`` and prints what it claims.

The assertions read the numbers the scripts print and check them against what must hold whatever the
random draws: a loss that falls, eager and compiled runs that agree, Hessian-vector products that
match the full Hessian, forces that balance. A script that crashes, or whose maths breaks, fails here.
"""
from __future__ import annotations

import re

from example_runs import EXAMPLES, need, numbers, run


def test_train_digits(tmp_path):
    need("sklearn")
    need("matplotlib")
    png = tmp_path / "digits.png"
    out = run(EXAMPLES / "train_digits.py", "--quick", "--plot", str(png))
    mlp = numbers(r"mlp epoch +\d+: eager +([\d.]+) s, compiled +([\d.]+) s.*? \| loss ([\d.]+) / ([\d.]+) "
                  r"\| test accuracy ([\d.]+)% / ([\d.]+)%", out)
    assert len(mlp) == 2, out
    for eager_s, compiled_s, eager_loss, compiled_loss, eager_acc, compiled_acc in mlp:
        assert eager_loss == compiled_loss and eager_acc == compiled_acc  # same weights, same batches
    assert mlp[1][2] < 0.7 * mlp[0][2] and mlp[1][4] > 75
    if "cnn: skipped" not in out:
        cnn = numbers(r"cnn epoch +\d+: eager +[\d.]+ s \| loss ([\d.]+) \| test accuracy ([\d.]+)%", out)
        assert len(cnn) == 2 and cnn[1][0] < cnn[0][0], out
    assert "mlp compiled: test accuracy" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_train_digits_without_convolutions_says_so(tmp_path):
    """Where ``nn.Conv2d`` is missing the CNN is skipped with a sentence, not a traceback."""
    script = tmp_path / "no_conv.py"
    argv = [str(EXAMPLES / "train_digits.py"), "--quick", "--models", "cnn", "--plot", ""]
    script.write_text(f"import runpy, sys\nimport jitgrad.nn\ndel jitgrad.nn.Conv2d\nsys.argv = {argv!r}\n"
                      "runpy.run_path(sys.argv[0], run_name='__main__')\n")
    assert "cnn: skipped, this jitgrad has no nn.Conv2d" in run(script)


def test_char_rnn():
    out = run(EXAMPLES / "char_rnn.py", "--quick")
    (uniform,) = numbers(r"uniform guessing costs log\(\d+\) = ([\d.]+)", out)[0]
    first, last = numbers(r"loss from ([\d.]+) to ([\d.]+)", out)[0]
    assert abs(first - uniform) < 0.2 and last < first - 1.0, out
    sample = out.split("sampled at temperature 0.6:\n", 1)[1][:-1]  # without print's newline
    assert sample.startswith("Alice ") and len(sample) == len("Alice ") + 120


def test_physics():
    out = run(EXAMPLES / "physics.py", "--quick")
    energy = [e for (e,) in numbers(r"energy (-?[\d.]+) J", out)]
    assert energy[-1] < energy[0]
    (force, weight), = numbers(r"largest net force ([\d.e+-]+) N \(gravity on one mass: ([\d.]+) N\)", out)
    assert force < 1e-6 * weight, out  # the springs balance gravity at every mass
    (difference,), = numbers(r"eager and compiled positions differ by ([\d.e+-]+) m", out)
    assert difference < 1e-10


def test_custom_function():
    out = run(EXAMPLES / "custom_function.py", "--quick")
    for claim in ("x.grad equals sigmoid(beta * x): True", "gradgradcheck: True",
                  "forward mode (jvp) equals the gradient: True", "x.grad = 2 * round(x): True",
                  "a second derivative is refused"):
        assert claim in out, out
    assert re.findall(r"^   gradcheck: (\w+)", out, flags=re.M) == ["True", "True", "False"]


def test_higher_order():
    out = run(EXAMPLES / "higher_order.py", "--quick")
    errors = dict((name.strip(), float(e)) for name, e in re.findall(r"^  ([\w. -]+?) +relative error ([\d.e+-]+)$",
                                                                     out, flags=re.M))
    assert set(errors) == {"double backward", "autograd.functional.hvp", "forward-over-reverse",
                           "central differences"}, out
    assert max(errors[k] for k in errors if k != "central differences") < 1e-12
    assert errors["central differences"] < 1e-6
    (distance,), = numbers(r"max \|x - 1\| = ([\d.e+-]+)", out)
    assert distance < 1e-8, out


def test_every_example_is_tested():
    """A new example gets a test here (quickstart.py has tests/test_quickstart.py, train_digits_ddp.py
    tests/distributed/test_ddp.py, under mpirun)."""
    tested = {"quickstart.py", "train_digits.py", "char_rnn.py", "physics.py", "custom_function.py",
              "higher_order.py", "train_digits_ddp.py"}
    assert {p.name for p in EXAMPLES.glob("*.py")} == tested
