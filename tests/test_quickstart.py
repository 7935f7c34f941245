"""Runs examples/quickstart.py and checks what it prints against gradients worked out here.

The expected values are computed in the test from the tensors the script prints (numpy and the
derivative of each example's formula), so a change to the example's inputs does not break the test,
but a wrong gradient, a missing node or a wrong execution order does.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"


def _run(*prelude: str) -> str:
    """The script's stdout; ``prelude`` lines run first in the same interpreter."""
    code = "; ".join(prelude + ("import runpy", f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def sections() -> dict[str, str]:
    start = time.perf_counter()
    out = _run()
    assert time.perf_counter() - start < 10  # the script itself takes well under 2 s
    parts = re.split(r"^\(([a-e])\) ", out, flags=re.M)
    found = dict(zip(parts[1::2], parts[2::2]))
    assert sorted(found) == list("abcde")
    return found


def _value(section: str, name: str) -> np.ndarray:
    """The values of the tensor printed as ``name = tensor(...)``."""
    match = re.search(rf"^\s*{re.escape(name)} = tensor\((\[[^\]]*\]|[-\d.e+]+)", section, flags=re.M)
    assert match, f"{name} not printed"
    return np.array(ast.literal_eval(match.group(1)), dtype=np.float64)


def _executed(section: str) -> list[str]:
    """The node class names from the 'backward ran' list, in order."""
    return re.findall(r"^\s+\d+\. #\d+ (\w+)", section, flags=re.M)


def test_a_single_leaf(sections):
    s = sections["a"]
    x = _value(s, "x")
    np.testing.assert_allclose(_value(s, "y"), np.sum(x * 3 + 2))
    np.testing.assert_allclose(_value(s, "x.grad"), np.full_like(x, 3.0))
    assert _executed(s) == ["SumBackward0", "AddBackward0", "MulBackward0", "AccumulateGrad"]


def test_b_two_leaves(sections):
    s = sections["b"]
    x, w = _value(s, "x"), _value(s, "w")
    np.testing.assert_allclose(_value(s, "y"), np.sum(x * w + 1), rtol=1e-6)
    np.testing.assert_allclose(_value(s, "x.grad"), w)
    np.testing.assert_allclose(_value(s, "w.grad"), x)
    assert "(AccumulateGrad, 0)  accumulates into x.grad" in s
    assert "(AccumulateGrad, 0)  accumulates into w.grad" in s
    assert _executed(s).count("AccumulateGrad") == 2


def test_c_two_paths_sum_in_the_input_buffer(sections):
    s = sections["c"]
    k1, k2 = map(float, re.match(r"y = a \* (\d+) \+ a \* (\d+)", s).groups())
    a = _value(s, "a")
    np.testing.assert_allclose(_value(s, "y"), a * k1 + a * k2)
    np.testing.assert_allclose(_value(s, "a.grad"), k1 + k2)
    assert "one AccumulateGrad node shared by both paths: True" in s
    assert _executed(s).count("AccumulateGrad") == 1  # summed before it ran, not accumulated twice
    received = re.search(r"AccumulateGrad -> a\.grad\s+received grad_outputs = \(([-\d.]+)\)", s)
    assert float(received.group(1)) == k1 + k2


def test_d_grad_leaves_dot_grad_alone(sections):
    s = sections["d"]
    x = _value(s, "x")
    np.testing.assert_allclose(_value(s, "autograd.grad(y, x)"), 2 * x)
    assert "x.grad after autograd.grad = None" in s


def test_e_selective_execution(sections):
    s = sections["e"]
    x = _value(s, "x")
    np.testing.assert_allclose(_value(s, "dloss/dw1"), x)
    assert _executed(s) == ["AddBackward0", "SumBackward0", "MulBackward0"]
    total, ran = map(int, re.search(r"nodes in the graph: (\d+), nodes run: (\d+)", s).groups())
    assert (total, ran) == (9, 3)
    skipped = s.split("skipped", 1)[1]
    assert all(f"-> {leaf}.grad" in skipped for leaf in ("w1", "w2", "b"))
    assert "w1.grad = None, w2.grad = None, b.grad = None" in s


def test_same_graph_and_order_as_pytorch(sections):
    """The script runs unchanged on PyTorch; the graphs and execution orders must match."""
    pytest.importorskip("torch")
    theirs = _run("import sys, torch", "sys.modules['jitgrad'] = torch")
    theirs = theirs.replace("torch::autograd::", "")
    ours = "".join(f"({key}) {text}" for key, text in sections.items())
    normalize = lambda text: re.sub(r" +", " ", text)  # noqa: E731 - padding follows name lengths
    assert normalize(ours) == normalize(theirs[theirs.index("(a) "):])
