"""Every op's shape and dtype rule (``meta=`` in its registry entry) against what its forward returns,
for every call the op samples make, forward and backward, in float64 and (for samples with floating
inputs) float32: graph mode gives its nodes the rules' metadata, so a wrong rule must fail here."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.ops.meta_rules import TensorMeta, meta_of, reduced_shape, reshaped
from jitgrad.ops.registry import REGISTRY, observing
from op_samples import SAMPLES


def _floating(sample) -> bool:
    return any(a.dtype.kind == "f" for a in sample.arrays())


CASES = [pytest.param(sample, dtype, id=f"{sample.id}-{np.dtype(dtype).name}")
         for sample in SAMPLES for dtype in (np.float64, np.float32) if dtype == np.float64 or _floating(sample)]


def test_every_op_has_a_rule():
    assert [name for name, op in REGISTRY.items() if op.meta is None] == []


@pytest.mark.parametrize("sample, dtype", CASES)
def test_rule_agrees_with_the_forward(sample, dtype):
    checked, wrong = set(), []

    def check(op, args, attrs, output):
        rule = op.meta(*(meta_of(a) for a in args), **attrs)
        actual = tuple(meta_of(o) for o in output) if isinstance(output, tuple) else meta_of(output)
        checked.add(op.name)
        if rule != actual:
            wrong.append(f"{op.name}({', '.join(map(repr, map(meta_of, args)))}, {attrs}): rule {rule}, "
                         f"forward {actual}")

    arrays = [a.astype(dtype) if a.dtype.kind == "f" else a for a in sample.arrays()]
    inputs = [jg.tensor(a, requires_grad=sample.differentiable and a.dtype.kind == "f") for a in arrays]
    with observing(check):
        out = sample.fn(*inputs)
        if sample.differentiable:
            (out * jg.ones_like(out)).sum().backward(create_graph=True)
    assert sample.op in checked or dtype != np.float64  # x.to(float32) of a float32 x runs no op
    assert wrong == []


@pytest.mark.parametrize("shape, dim, keepdim, expected", [
    ((2, 3, 4), (0, 2), False, (3,)), ((2, 3, 4), (1,), True, (2, 1, 4)), ((2, 3), None, False, ()),
    ((2, 3), None, True, (1, 1)), ((2, 3), 1, False, (2,)), ((), (), True, ())])
def test_reduced_shape(shape, dim, keepdim, expected):
    assert reduced_shape(shape, dim, keepdim) == expected


def test_reshaped_resolves_minus_one():
    assert reshaped(12, (-1, 4)) == (3, 4) and reshaped(12, (2, -1, 2)) == (2, 3, 2)
    assert reshaped(0, (-1, 3)) == (0, 3) and reshaped(5, (5,)) == (5,)


def test_a_rule_promotes_as_eager_does():
    """int64 * float is the default float; a 0-d float64 does not upcast float32; bools compare."""
    i64, f32 = TensorMeta((3,), np.dtype(np.int64)), TensorMeta((2, 3), np.dtype(np.float32))
    zero_d = TensorMeta((), np.dtype(np.float64))
    assert REGISTRY["mul"].meta(i64, 2.5) == TensorMeta((3,), np.dtype(np.float32))
    assert REGISTRY["add"].meta(f32, zero_d) == TensorMeta((2, 3), np.dtype(np.float32))
    assert REGISTRY["div"].meta(i64, i64).dtype == np.float32
    assert REGISTRY["lt"].meta(f32, i64) == TensorMeta((2, 3), np.dtype(np.bool_))


def test_an_elementwise_op_of_python_numbers_alone_is_0_d():
    """``m ^ True`` of a bool tensor runs ``ne(True, 0)`` inside ``logical_xor``: an op of Python numbers
    alone, a 0-d tensor eagerly, whose rule raised IndexError, so a compiled call of it ran eagerly."""
    from jitgrad import fx
    assert REGISTRY["ne"].meta(True, 0) == TensorMeta((), np.dtype(np.bool_))
    mask = jg.tensor(np.array([True, False]))
    module = fx.trace(lambda m: (m ^ True) | (True ^ m), mask)
    np.testing.assert_array_equal(module(mask).numpy(), ((mask ^ True) | (True ^ mask)).numpy())
