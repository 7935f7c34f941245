"""The structural key: graphs that differ only in sizes or Python numbers share one compiled kernel;
a dtype or a broadcasting pattern is structure. The generated source reads as the IR it came from,
and is the same for every graph that shares it."""
from __future__ import annotations

import io
import re
import tokenize
from types import SimpleNamespace

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.backends.numba_cpu import compiler, structural_key
from jitgrad.backends.numba_cpu.codegen import generate
from helpers import assert_close
from lowering_helpers import interpreted, lowered, optimized_graph

FEATURES, HIDDEN = 5, 6
BATCHES = (9, 13)  # no batch size, nor one less, equals another size of the program


def layer_step(x, w, b):
    """Sizes reach the graph through shapes (the split at the batch size, ``h[-1]``, slice bounds and
    an index computed from the batch size), not only through the arguments."""
    h = (x @ w + b).tanh()
    top, rest = h.split([1, h.shape[0] - 1])
    loss = jg.log_softmax(rest, dim=1).mean() + (top * h[-1]).sum() + h.amax(dim=0).sum()
    loss = loss + h[1:h.shape[0] - 1].sum() + h[h.shape[0] - 2].exp().sum()
    loss.backward()
    return loss, h


def layer_arrays(batch, dtype=np.float64):
    rng = np.random.default_rng(batch)
    return [rng.standard_normal(s).astype(dtype) for s in ((batch, FEATURES), (FEATURES, HIDDEN), (HIDDEN,))]


@pytest.fixture(scope="module")
def two_batch_sizes():
    """The step lowered at two batch sizes, and how many kernels the second lowering compiled."""
    first_arrays, second_arrays = (layer_arrays(b) for b in BATCHES)
    first = lowered(layer_step, first_arrays)
    before = len(compiler._KERNELS)
    second = lowered(layer_step, second_arrays)
    return SimpleNamespace(runs=[(first_arrays, *first), (second_arrays, *second)],
                           compiled=len(compiler._KERNELS) - before)


def test_a_new_batch_size_has_the_same_key_and_compiles_nothing(two_batch_sizes):
    (_, first_graph, first), (_, second_graph, second) = two_batch_sizes.runs
    assert first_graph.placeholders[0].meta["shape"] != second_graph.placeholders[0].meta["shape"]
    assert structural_key(first_graph) == structural_key(second_graph) == first.key == second.key
    assert two_batch_sizes.compiled == 0 and second.kernel is first.kernel


def test_both_batch_sizes_equal_the_interpreter(two_batch_sizes):
    for arrays, graph, kernel in two_batch_sizes.runs:
        assert_close(list(kernel(*arrays)), interpreted(graph, arrays), dtype=np.float64)


def literals(source: str) -> set[str]:
    """The numbers written in ``source``'s code (not its comments), but for subscripts of ``sizes``,
    ``scalars`` and ``.shape``."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type != tokenize.COMMENT]
    return {t.string for i, t in enumerate(tokens) if t.type == tokenize.NUMBER
            and not (tokens[i - 1].string == "[" and tokens[i - 2].string in ("sizes", "scalars", "shape"))}


def test_the_source_holds_no_size_and_no_number_of_the_graph(two_batch_sizes):
    """Sizes come from ``.shape`` or ``sizes``, numbers from ``scalars``: only 0 and 1 (structure:
    which dimensions broadcast, where a split starts) are written."""
    _, _, first = two_batch_sizes.runs[0]
    assert literals(first.source) <= {"0", "0.0", "1"}, literals(first.source)


def program_key(program, *arrays):
    return structural_key(optimized_graph(program, list(arrays)))


def test_numbers_are_not_structure_but_dtypes_and_broadcasting_are():
    x, y = np.ones((4, 5)), np.ones(5)

    def scaled(factor):
        return lambda x, y: ((x * factor + y).sin() * (factor + 1.0)).sum(dim=1)
    key = program_key(scaled(2.0), x, y)
    assert program_key(scaled(3.5), x, y) == key
    assert program_key(scaled(2.0), np.ones((7, 5)), y) == key
    different = {
        "float32": program_key(scaled(2.0), x.astype(np.float32), y.astype(np.float32)),
        "column": program_key(scaled(2.0), x, np.ones((4, 1))),
        "row of ones": program_key(scaled(2.0), np.ones((1, 5)), y),
        "matrix": program_key(scaled(2.0), x, np.ones((4, 5))),
        "rank 3": program_key(scaled(2.0), np.ones((2, 4, 5)), y),
    }
    assert key not in different.values(), different
    assert len(set(different.values())) == len(different)


def test_fill_values_and_negative_indices_are_arguments_too():
    def filled(value, index):
        def program(x):
            y = x * 1.0
            y[index] = value
            return y.sum(dim=0) + x[index]
        return program
    keys = {program_key(filled(value, -2), np.ones((rows, 3))) for value in (0.5, -4.0) for rows in (4, 6)}
    assert len(keys) == 1


def test_comments_carry_the_ir_lines_with_the_kernels_sizes(two_batch_sizes):
    """Each node's IR line is a comment, its sizes the kernel's variables (or 1), its numbers left out:
    the comment reads right for every batch size the kernel serves."""
    _, graph, kernel = two_batch_sizes.runs[0]
    comments = dict(re.findall(r"# %(\w+): (.*)$", kernel.source, re.MULTILINE))
    calls = [n for n in graph.nodes if n.op == "call_function"]
    assert len(calls) > 10 and set(comments) == {n.name for n in calls}
    for node in calls:
        meta, call = comments[node.name].split(" = ", 1)
        assert call.startswith(f"call_function {node.target_name}("), (node, call)
        assert all(f"%{i.name}" in call for i in node.all_input_nodes), (node, call)
        shapes = re.findall(r"\[([^\]]*)\]", meta)
        assert all(re.fullmatch(r"[A-Za-z_]\w*|1", size) for shape in shapes for size in shape.split(", ") if size)
    assert not re.search(r"\b(9|13|8|12|7|11)\b", "".join(comments.values()))


def test_a_kernel_serving_another_batch_size_or_number_has_the_same_source(two_batch_sizes):
    (_, _, first), (_, _, second) = two_batch_sizes.runs
    assert first.source == second.source

    def scaled(factor):
        return lambda x, y: ((x * factor + y).sin() * (factor + 1.0)).sum(dim=1)
    sources = {generate(optimized_graph(scaled(factor), [np.ones((rows, 5)), np.ones(5)])).source
               for factor, rows in ((2.0, 4), (3.5, 7))}
    assert len(sources) == 1


def test_equal_numbers_share_one_variable_and_signed_zeros_do_not():
    def program(x):
        y = x
        for _ in range(5):
            y = (y * 1.01 + 0.1).sin()
        return y, 1.0 / (x * 0.0), 1.0 / (x * -0.0)
    x = np.linspace(0.5, 1.5, 4)
    graph, kernel = lowered(program, [x])
    reads = [line for line in kernel.source.splitlines() if "scalars[" in line]
    assert len(reads) == 5, reads  # 1.01, 0.1, 0.0, -0.0, 1.0
    with np.errstate(divide="ignore"):
        got = list(kernel(x))
    np.testing.assert_array_equal(got[1], np.inf)
    np.testing.assert_array_equal(got[2], -np.inf)
    assert_close(got[:1], interpreted(graph, [x])[:1], dtype=np.float64)
