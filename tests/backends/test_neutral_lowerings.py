"""Op entries hold the maths of their lowering, not one backend's code (docs/ops.md): every elementwise
and reduction lowering, at every call the op samples make, renders through a second backend's table
(a sketch of numba.cuda device code: ``math.*`` and numba's scalar types) into source that names
nothing of the CPU backend's; every statement op names an intrinsic the CPU backend implements; and
a kernel imports only what it calls."""
from __future__ import annotations

import ast

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.backends.expressions import Dialect, render
from jitgrad.backends.numba_cpu.imports import KERNEL_IMPORTS
from jitgrad.backends.numba_cpu.scalar_functions import NUMBA_CPU
from jitgrad.backends.numba_cpu.statements import STATEMENTS
from jitgrad.ops.lowering import Intrinsic, Reduction, element_expression
from jitgrad.ops.meta_rules import meta_of
from jitgrad.ops.registry import REGISTRY, observing
from jitgrad.ops import scalar
from jitgrad.ops.scalar import COMPUTE, FUNCTIONS, OPERATORS, Apply, Var
from lowering_helpers import lowered
from op_samples import SAMPLES


def _math(name: str):
    return lambda args, dtype: f"math.{name}({', '.join(args)})"


def _extreme(sign: str):
    def source(args, dtype):
        if dtype.kind == "f":
            return f"{sign}math.inf"
        if dtype.kind == "b":
            return "False" if sign == "-" else "True"
        info = np.iinfo(dtype)
        return str(info.min if sign == "-" else info.max)
    return source


# What a numba.cuda backend's table could be: no numpy, no CPU intrinsics.
CUDA_SKETCH = Dialect("numba.cuda sketch", {
    **{name: _math(name) for name in ("exp", "exp2", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh",
                                      "erf", "atan", "isfinite", "fmod")},
    "sign": lambda args, dtype: f"(({args[0]} > 0) - ({args[0]} < 0))",
    "abs": lambda args, dtype: f"abs({args[0]})",
    "max": lambda args, dtype: f"max({args[0]}, {args[1]})",
    "min": lambda args, dtype: f"min({args[0]}, {args[1]})",
    "floordiv": lambda args, dtype: f"({args[0]} // {args[1]})",
    "pow": lambda args, dtype: f"({args[0]} ** {args[1]})",
    "mod": lambda args, dtype: f"({args[0]} % {args[1]})",
    "lowest": _extreme("-"), "highest": _extreme(""),
}, lambda dtype: f"numba.{np.dtype(dtype).name if np.dtype(dtype) != np.bool_ else 'boolean'}")

CPU_ONLY = ["np.", "numpy", *(name for names in KERNEL_IMPORTS.values() for name in names)]


def _calls(sample, dtype):
    """Every (op, args, attrs, output) of the sample, forward and backward, with inputs of ``dtype``."""
    calls = []
    arrays = [a.astype(dtype) if a.dtype.kind == "f" else a for a in sample.arrays()]
    inputs = [jg.tensor(a, requires_grad=sample.differentiable and a.dtype.kind == "f") for a in arrays]
    with observing(lambda op, args, attrs, output: calls.append((op, args, attrs, output))):
        out = sample.fn(*inputs)
        if sample.differentiable:
            (out * jg.ones_like(out)).sum().backward()
    return calls


def _rendered(op, args, attrs, output, dialect):
    """The sources an elementwise or reduction call lowers to: its value, or its fold's pieces."""
    dtype = np.dtype(meta_of(output).dtype)
    if op.kind == "elementwise":
        inputs = [Var(f"{name}_value") for name in op.inputs]
        numbers = {k: Var(f"{k}_number") if isinstance(v, (int, float)) and not isinstance(v, bool) else v
                   for k, v in attrs.items()}
        compute = np.result_type(*[meta_of(a).dtype for a in args if hasattr(a, "_data")]) if dtype == np.bool_ \
            else dtype
        return [render(element_expression(op.lower, inputs, numbers), dialect, compute, dtype)]
    sources, spec = [], op.lower
    names = {k: v for k, v in attrs.items() if k not in ("dim", "keepdim")}
    names.update(count=Var("count"), first=Var("first"))
    while spec is not None:
        pieces = [spec.initial(), spec.update(Var("acc"), Var("x"), names), spec.joined(Var("acc"), Var("partial")),
                  spec.finished(Var("acc"), names)]
        sources += [render(p, dialect, dtype, dtype) for p in pieces]
        spec = spec.first
    return sources


CASES = [pytest.param(sample, dtype, id=f"{sample.id}-{np.dtype(dtype).name}")
         for sample in SAMPLES for dtype in (np.float64, np.float32)]


@pytest.mark.parametrize("sample, dtype", CASES)
def test_elementwise_and_reduction_lowerings_render_for_another_backend(sample, dtype):
    for op, args, attrs, output in _calls(sample, dtype):
        if op.kind == "statement":
            continue
        for source in _rendered(op, args, attrs, output, CUDA_SKETCH):
            ast.parse(source, mode="eval")
            assert not [name for name in CPU_ONLY if name in source], (op.name, source)


def test_every_elementwise_and_reduction_op_is_rendered_by_some_sample():
    rendered = {op.name for sample in SAMPLES for op, *_ in _calls(sample, np.float32) if op.kind != "statement"}
    expected = {name for name, op in REGISTRY.items() if op.kind != "statement"}
    assert expected - rendered == set()


def test_each_lowering_has_the_form_of_its_kind_and_every_intrinsic_is_implemented():
    for name, op in REGISTRY.items():
        form = {"elementwise": callable, "reduction": lambda lower: isinstance(lower, Reduction),
                "statement": lambda lower: isinstance(lower, Intrinsic)}[op.kind]
        assert form(op.lower), name
        if op.kind == "statement":
            assert op.lower.name in STATEMENTS, name


def test_the_vocabulary_is_closed_and_both_tables_cover_it():
    """Every operator is written the same by both (Python syntax), every function by each its own way."""
    assert NUMBA_CPU.missing() == set() and CUDA_SKETCH.missing() == set()
    assert not OPERATORS & FUNCTIONS
    float32 = np.dtype(np.float32)
    for name in sorted(OPERATORS):
        arity = {"neg": 1, "logical_not": 1, "truth": 1, "cast": 1, "where": 3}.get(name, 2)
        operation = Apply(name, tuple(Var(f"v{i}") for i in range(arity)), COMPUTE if name == "cast" else None)
        cpu, other = (render(operation, d, float32, float32) for d in (NUMBA_CPU, CUDA_SKETCH))
        assert cpu.replace("np.", "numba.") == other, name
    with pytest.raises(NotImplementedError, match="no code for the scalar function 'exp'"):
        render(scalar.exp(Var("x")), Dialect("empty", {}, str), float32, float32)


def test_the_cpu_table_picks_its_fast_float_functions():
    x = Var("x")
    assert render(scalar.exp(x), NUMBA_CPU, np.dtype(np.float32), np.dtype(np.float32)) == "exp_float32(x)"
    assert render(scalar.exp(x), NUMBA_CPU, np.dtype(np.float64), np.dtype(np.float64)) == "exp_float64(x)"
    assert render(scalar.tanh(x), NUMBA_CPU, np.dtype(np.int64), np.dtype(np.float16)) == "math.tanh(x)"
    assert render(scalar.tanh(x), CUDA_SKETCH, np.dtype(np.float32), np.dtype(np.float32)) == "math.tanh(x)"
    assert render(1.0 / (1.0 + scalar.exp(-x)), CUDA_SKETCH, np.dtype(np.float32), np.dtype(np.float32)) == \
        "(numba.float32(1.0) / (numba.float32(1.0) + math.exp((-x))))"
    assert render(x // 2, NUMBA_CPU, np.dtype(np.int64), np.dtype(np.int64)) == "floor_divide_int(x, np.int64(2))"


def test_a_kernel_imports_only_what_it_calls():
    x, w = np.linspace(-1, 1, 12).reshape(3, 4), np.linspace(0, 1, 8).reshape(4, 2)
    _, float64 = lowered(lambda x, w: (x @ w).tanh().sum(), [x, w])
    head = float64.source.split("def kernel")[0]
    assert "matmat" in head and "tanh_float32" not in head and "exp_float32" not in head
    assert "put_row" not in head and "fill_uniform" not in head and "floor_divide_int" not in head
    _, float32 = lowered(lambda x: x.tanh().sum(), [x.astype(np.float32)])
    head = float32.source.split("def kernel")[0]
    assert "import tanh_float32" in head and "blas" not in head


def test_bools_add_and_multiply_as_logical_operators_in_source_kernels():
    # `(a + b)` of two Python/numba bools is the int 2, which a fused kernel used as such: compiled on
    # numba, (b + b) * 2 of a bool tensor gave 4 where eagerly True * 2 is 2
    boolean = np.dtype(np.bool_)
    a, b = scalar.Var("a"), scalar.Var("b")
    for expression, expected in ((a + b, True), (a * b, True)):
        source = render(expression, NUMBA_CPU, boolean, boolean)
        assert eval(source, {"a": True, "b": True}) is expected  # noqa: S307 - our own rendered source
    assert render(a + b, NUMBA_CPU, np.dtype(np.int64), np.dtype(np.int64)) == "(a + b)"


def test_a_non_finite_constant_renders_as_source_numba_compiles():
    """``repr(inf)`` is no Python expression: a lowering with an infinite constant made a numba kernel
    fail with a NameError (found when ``hypot`` was given its lowering)."""
    import math

    import numba

    from jitgrad.backends.numba_cpu.scalar_functions import NUMBA_CPU
    from jitgrad.ops.scalar import Apply, Const
    for value in (math.inf, -math.inf, math.nan):
        source = render(Apply("add", (Var("x"), Const(value))), NUMBA_CPU, np.dtype(np.float32), np.dtype(np.float32))
        namespace = {"np": np, "math": math}
        exec(f"def f(x):\n    return {source}\n", namespace)  # noqa: S102 - the test's own source
        got = numba.njit(namespace["f"])(np.float32(1.0))
        np.testing.assert_array_equal(got, np.float32(1.0) + np.float32(value))
