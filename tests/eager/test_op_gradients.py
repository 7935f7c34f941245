"""Every registry op, generated from ``op_samples.SAMPLES``: values against numpy and PyTorch, gradients
against central finite differences in float64 (first and second order) and against PyTorch, backward
node names against PyTorch's, and random small graphs against finite differences."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitgrad as jg
from helpers import assert_close, leaves, numerical_gradient
from jitgrad.ops import registry
from jitgrad.ops.registry import REGISTRY
from op_samples import SAMPLES, Sample

GRAD_SAMPLES = [s for s in SAMPLES if s.differentiable]
VALUE_SAMPLES = [s for s in SAMPLES if not s.differentiable]
TORCH_SAMPLES = [s for s in SAMPLES if s.torch_fn is not None]  # random ops have no PyTorch equivalent


def by_id(samples):
    return pytest.mark.parametrize("sample", samples, ids=[s.id for s in samples])


def seed_of(sample: Sample) -> int:
    return zlib.crc32(sample.id.encode())


def float_positions(arrays) -> list[int]:
    return [i for i, a in enumerate(arrays) if a.dtype.kind == "f"]


def value_of(sample: Sample, arrays) -> np.ndarray:
    # Not under no_grad: the index_scatter samples differentiate inside their callable.
    return sample.fn(*leaves(arrays, requires_grad=False)).detach().numpy()


def weights_for(sample: Sample, arrays, salt: int) -> np.ndarray:
    """A random weighting of the output, so that the scalar we differentiate sees every element."""
    shape = value_of(sample, arrays).shape
    return np.random.default_rng(seed_of(sample) + salt).uniform(-1.5, 1.5, size=shape)


def first_order(sample: Sample, arrays, v: np.ndarray, create_graph: bool = False):
    """The leaves (float inputs only) and the gradients of ``sum(f(inputs) * v)`` with respect to them."""
    inputs = leaves(arrays)
    wrt = [inputs[i] for i in float_positions(arrays)]
    out = sample.fn(*inputs)
    assert out.requires_grad, f"{sample.id}: the output of a differentiable sample must require grad"
    loss = (out * jg.tensor(v)).sum()
    grads = jg.autograd.grad(loss, wrt, create_graph=create_graph, allow_unused=True)
    return wrt, out, grads


def numpy_grads(grads, wrt) -> list[np.ndarray]:
    return [np.zeros(t.shape) if g is None else g.detach().numpy() for g, t in zip(grads, wrt)]


# ---- coverage -----------------------------------------------------------------------------------------
def test_every_registry_op_has_a_sample():
    sampled = {s.op for s in SAMPLES}
    assert not sampled - set(REGISTRY), f"samples name ops that are not registered: {sampled - set(REGISTRY)}"
    missing = sorted(set(REGISTRY) - sampled)
    assert not missing, f"ops in REGISTRY without a sample in tests/op_samples.py: {missing}"
    without_gradient = sorted(name for name, op in REGISTRY.items()
                              if op.differentiable and not any(s.op == name and s.differentiable for s in SAMPLES))
    assert not without_gradient, f"differentiable ops without a gradient sample: {without_gradient}"
    for s in VALUE_SAMPLES:
        assert s.numpy_fn is not None, f"{s.id}: a sample without gradients needs a numpy reference"
    ids = [s.id for s in SAMPLES]
    assert len(ids) == len(set(ids)), "sample ids must be unique"


@by_id(SAMPLES)
def test_sample_calls_its_op(sample):
    called = []
    arrays = sample.arrays(seed_of(sample))
    with registry.observing(lambda op, args, attrs, output: called.append(op.name)):
        out = sample.fn(*leaves(arrays))
    assert sample.op in called, f"{sample.id} never called op {sample.op} (called {called})"
    if sample.differentiable:
        assert out.grad_fn is not None and out.grad_fn.op is REGISTRY[sample.op], \
            f"{sample.id}: the output's node belongs to {getattr(out.grad_fn, 'op', None)}, not {sample.op}"


# ---- values -------------------------------------------------------------------------------------------
@by_id(VALUE_SAMPLES)
def test_values_match_numpy(sample):
    arrays = sample.arrays(seed_of(sample))
    out = sample.fn(*leaves(arrays, requires_grad=False))
    expected = np.asarray(sample.numpy_fn(*arrays))
    assert out.grad_fn is None and not out.requires_grad
    assert out.shape == expected.shape
    assert out.numpy().dtype.kind == expected.dtype.kind, f"{out.dtype} vs numpy {expected.dtype}"
    np.testing.assert_array_equal(out.numpy(), expected)


def _torch_leaves(torch, arrays):
    return [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]


@by_id(TORCH_SAMPLES)
def test_values_match_torch(sample):
    torch = pytest.importorskip("torch")
    arrays = sample.arrays(seed_of(sample))
    out = sample.fn(*leaves(arrays))
    expected = sample.torch_callable(*_torch_leaves(torch, arrays))
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert tuple(out.shape) == tuple(expected.shape)
    # PyTorch gives floor_divide a node that raises on backward; jitgrad gives it none, as for eq.
    torch_differentiable = expected.requires_grad and _node_name(expected) != "NotImplemented"
    assert out.requires_grad == torch_differentiable
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-7, atol=1e-12)


# ---- first order --------------------------------------------------------------------------------------
@by_id(GRAD_SAMPLES)
def test_gradient_matches_finite_differences(sample):
    arrays = sample.arrays(seed_of(sample))
    v = weights_for(sample, arrays, salt=1)
    wrt, _, grads = first_order(sample, arrays, v)
    expected = numerical_gradient(lambda a: (value_of(sample, a) * v).sum(), arrays, float_positions(arrays),
                                  sample.eps)
    for i, (g, e, t) in enumerate(zip(grads, expected, wrt)):
        if g is not None:
            assert g.shape == t.shape and g.dtype == t.dtype, f"input {i}: grad {g.dtype}{list(g.shape)}"
        assert_close(None if g is None else g.detach().numpy(), e, rtol=1e-5, atol=sample.atol,
                     what=f"{sample.id} input {i}")


@by_id(GRAD_SAMPLES)
def test_gradient_matches_torch(sample):
    torch = pytest.importorskip("torch")
    arrays = sample.arrays(seed_of(sample))
    v = weights_for(sample, arrays, salt=1)
    wrt, _, grads = first_order(sample, arrays, v)
    inputs = _torch_leaves(torch, arrays)
    out = sample.torch_callable(*inputs)
    torch_wrt = [inputs[i] for i in float_positions(arrays)]
    expected = torch.autograd.grad((out * torch.tensor(v)).sum(), torch_wrt, allow_unused=True)
    for i, (g, e, t) in enumerate(zip(grads, expected, wrt)):
        e = np.zeros(t.shape) if e is None else e.numpy()
        assert_close(None if g is None else g.detach().numpy(), e, rtol=1e-7, atol=1e-10,
                     what=f"{sample.id} input {i}")


# ---- second order -------------------------------------------------------------------------------------
def second_order(sample: Sample, arrays, v: np.ndarray, w: list[np.ndarray]) -> list[np.ndarray]:
    """The gradient of ``sum(g_i * w_i)`` where ``g`` are the ``create_graph`` gradients of ``sum(f * v)``."""
    wrt, _, grads = first_order(sample, arrays, v, create_graph=True)
    total = None
    for g, w_i in zip(grads, w):
        if g is not None and g.requires_grad:
            term = (g * jg.tensor(w_i)).sum()
            total = term if total is None else total + term
    if total is None:  # every first-order gradient is constant: the second order is zero
        return [np.zeros(t.shape) for t in wrt]
    return numpy_grads(jg.autograd.grad(total, wrt, allow_unused=True), wrt)


@by_id(GRAD_SAMPLES)
def test_second_order_matches_finite_differences(sample):
    arrays = sample.arrays(seed_of(sample))
    positions = float_positions(arrays)
    v = weights_for(sample, arrays, salt=1)
    rng = np.random.default_rng(seed_of(sample) + 2)
    w = [rng.uniform(-1.5, 1.5, size=arrays[i].shape) for i in positions]

    def weighted_first_order(a):
        wrt, _, grads = first_order(sample, a, v)
        return sum(float((g * w_i).sum()) for g, w_i in zip(numpy_grads(grads, wrt), w))

    expected = numerical_gradient(weighted_first_order, arrays, positions, sample.eps)
    for i, (h, e) in enumerate(zip(second_order(sample, arrays, v, w), expected)):
        assert_close(h, e, rtol=1e-5, atol=max(sample.atol, 1e-5), what=f"{sample.id} input {i}")


@by_id(GRAD_SAMPLES)
def test_second_order_matches_torch(sample):
    torch = pytest.importorskip("torch")
    arrays = sample.arrays(seed_of(sample))
    positions = float_positions(arrays)
    v = weights_for(sample, arrays, salt=1)
    rng = np.random.default_rng(seed_of(sample) + 2)
    w = [rng.uniform(-1.5, 1.5, size=arrays[i].shape) for i in positions]
    actual = second_order(sample, arrays, v, w)
    inputs = _torch_leaves(torch, arrays)
    torch_wrt = [inputs[i] for i in positions]
    out = sample.torch_callable(*inputs)
    grads = torch.autograd.grad((out * torch.tensor(v)).sum(), torch_wrt, create_graph=True, allow_unused=True)
    terms = [(g * torch.tensor(w_i)).sum() for g, w_i in zip(grads, w) if g is not None and g.requires_grad]
    if terms:
        expected = torch.autograd.grad(sum(terms), torch_wrt, allow_unused=True)
        # force: PyTorch may answer with a ZeroTensor (abs' second derivative)
        expected = [np.zeros(t.shape) if e is None else e.numpy(force=True) for e, t in zip(expected, torch_wrt)]
    else:
        expected = [np.zeros(t.shape) for t in torch_wrt]
    for i, (h, e) in enumerate(zip(actual, expected)):
        assert_close(h, e, rtol=1e-7, atol=1e-10, what=f"{sample.id} input {i}")


# ---- node names ---------------------------------------------------------------------------------------
# Intentional differences from PyTorch's grad_fn names, sample id -> (jitgrad's name, PyTorch's name).
KNOWN_NODE_NAME_DIFFERENCES = {
    # jitgrad's general batched matmul is one primitive; PyTorch folds the batch into bmm/mm and shows
    # the view (or copy) that restores the batch dimensions.
    "matmul-3d@2d": ("MatmulBackward0", "UnsafeViewBackward0"),
    "matmul-1d@3d": ("MatmulBackward0", "UnsafeViewBackward0"),
    "matmul-3d@1d": ("MatmulBackward0", "UnsafeViewBackward0"),
    "matmul-bcast-batch": ("MatmulBackward0", "UnsafeViewBackward0"),
    # PyTorch computes `2 / x` as `x.reciprocal() * 2`; jitgrad keeps a single div node.
    "div-scalar-left": ("DivBackward0", "MulBackward0"),
    # getitem's backward is one op in jitgrad; PyTorch has a backward of each indexing kind.
    "index_scatter-repeated-rows": ("IndexBackwardBackward0", "IndexPutImplBackward0"),
    "index_scatter-int": ("IndexBackwardBackward0", "SelectBackwardBackward0"),
    "index_scatter-slice": ("IndexBackwardBackward0", "SliceBackwardBackward0"),
    # PyTorch records a node that raises on backward ("NotImplemented"); jitgrad records none, as for eq.
    "floor_divide-bcast": (None, "NotImplemented"),
    "floor_divide-function-scalar": (None, "NotImplemented"),
    # x[i] = v on a tensor with history: PyTorch rebuilds it through CopySlices, jitgrad records the
    # out-of-place index_put it wrote back.
    "index_put-setitem-slice": ("IndexPutBackward0", "CopySlices"),
    # nn.functional composes registry ops where PyTorch has fused kernels.
    "add-linear": ("AddBackward0", "AddmmBackward0"),
    "mean-mse_loss": ("MeanBackward0", "MseLossBackward0"),
    # max pooling's double backward: one gather op in jitgrad, a gather and a view in PyTorch.
    "max_pool2d_gather-second-order": ("MaxPool2DGatherBackward0", "ViewBackward0"),
    # resizing and average pooling: a tap sum per spatial dimension in jitgrad, one kernel in PyTorch.
    "tap_sum-bicubic": ("TapSumBackward0", "UpsampleBicubic2DBackward0"),
    "tap_sum-avg_pool2d-overlapping": ("TapSumBackward0", "AvgPool2DBackward0"),
}


def _node_name(t) -> str | None:
    return None if t.grad_fn is None else type(t.grad_fn).__name__


@by_id(TORCH_SAMPLES)
def test_node_name_matches_torch(sample):
    torch = pytest.importorskip("torch")
    arrays = sample.arrays(seed_of(sample))
    name = _node_name(sample.fn(*leaves(arrays)))
    torch_name = _node_name(sample.torch_callable(*_torch_leaves(torch, arrays)))
    if sample.id in KNOWN_NODE_NAME_DIFFERENCES:
        assert (name, torch_name) == KNOWN_NODE_NAME_DIFFERENCES[sample.id]
    else:
        assert name == torch_name


def test_known_differences_name_existing_samples():
    assert set(KNOWN_NODE_NAME_DIFFERENCES) <= {s.id for s in SAMPLES}


# ---- broadcasting -------------------------------------------------------------------------------------
BINARY = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / (y * y + 1.0),
    "pow": lambda x, y: (x * x + 1.0) ** y,
    "maximum": lambda x, y: jg.maximum(x, y + 0.05),
    "minimum": lambda x, y: jg.minimum(x, y + 0.05),
    "where": lambda x, y: jg.where(x > y, x, y * 2.0),
}
SHAPE_PAIRS = [((3, 1), (4,)), ((), (2, 3)), ((2, 3), ()), ((1, 4), (3, 1)), ((2, 1, 4), (3, 1))]


@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
@pytest.mark.parametrize("name", BINARY)
def test_broadcast_gradients_are_summed_to_input_shape(name, shapes):
    """The gradient of a broadcast input is the gradient its broadcast copy would get, summed back."""
    fn = BINARY[name]
    rng = np.random.default_rng(len(name) * 7 + len(shapes[0]))
    x_np, y_np = (rng.uniform(-2.0, 2.0, size=s).round(1) + 0.02 for s in shapes)  # no ties at +0.05
    full = np.broadcast_shapes(*shapes)
    v = jg.tensor(rng.uniform(-1.0, 1.0, size=full))
    x, y = jg.tensor(x_np, requires_grad=True), jg.tensor(y_np, requires_grad=True)
    gx, gy = jg.autograd.grad((fn(x, y) * v).sum(), (x, y))
    # The same function of independent leaves already at the full shape.
    xf = jg.tensor(np.broadcast_to(x_np, full), requires_grad=True)
    yf = jg.tensor(np.broadcast_to(y_np, full), requires_grad=True)
    gxf, gyf = jg.autograd.grad((fn(xf, yf) * v).sum(), (xf, yf))
    for g, g_full, shape in ((gx, gxf, shapes[0]), (gy, gyf, shapes[1])):
        assert tuple(g.shape) == shape
        lead = len(full) - len(shape)
        axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and full[lead + i] != 1)
        expected = g_full.numpy().sum(axis=axes, keepdims=True).reshape(shape)
        assert_close(g.numpy(), expected, rtol=1e-12, atol=1e-12, what=name)


def test_backward_accumulates_broadcast_gradients_into_leaf():
    x = jg.tensor(np.linspace(-1.0, 1.0, 3).reshape(3, 1), requires_grad=True)
    y = jg.tensor(np.linspace(0.5, 2.0, 4), requires_grad=True)
    (x * y).sum().backward()
    assert tuple(x.grad.shape) == (3, 1) and tuple(y.grad.shape) == (4,)
    assert_close(x.grad.numpy(), np.full((3, 1), y.detach().numpy().sum()), rtol=1e-12, atol=1e-12)
    assert_close(y.grad.numpy(), np.full((4,), x.detach().numpy().sum()), rtol=1e-12, atol=1e-12)


# ---- where an op has no derivative, PyTorch's choice ------------------------------------------------
def test_std_of_constant_values_has_a_zero_gradient_and_tangent():
    """sqrt's derivative at 0 is infinite: PyTorch gives std of constant values the gradient (and the
    tangent) 0, not NaN. The row that is not constant keeps its usual gradient."""
    x = jg.tensor([[0.5, 0.5, 0.5], [0.5, -0.5, 0.25]], dtype=jg.float64, requires_grad=True)
    (grad,) = jg.autograd.grad(x.std(dim=1).sum(), x)
    assert grad[0].tolist() == [0.0, 0.0, 0.0]
    centred = x.detach()[1] - x.detach()[1].mean()
    assert_close(grad[1].numpy(), (centred / (x.detach()[1].std() * 2)).numpy(), rtol=1e-12, atol=1e-12)
    with jg.autograd.forward_ad.dual_level():
        dual = jg.autograd.forward_ad.make_dual(x.detach(), jg.tensor([[1.0, 2.0, -1.0]] * 2, dtype=jg.float64))
        tangent = jg.autograd.forward_ad.unpack_dual(dual.std(dim=1)).tangent
    assert tangent[0].item() == 0.0 and np.isfinite(tangent[1].item())


# ---- random graphs ------------------------------------------------------------------------------------
# Smooth everywhere on all reals and bounded enough to keep finite differences accurate.
UNARY_STEPS = {
    "sin": lambda a: a.sin(),
    "tanh": lambda a: a.tanh(),
    "sigmoid": lambda a: a.sigmoid(),
    "erf": lambda a: a.erf(),
    "exp_tanh": lambda a: a.tanh().exp(),
    "log1p_square": lambda a: (a * a).log1p(),
    "sqrt_1p_square": lambda a: (a * a + 1.0).sqrt(),
    "softplus": lambda a: jg.softplus(a),
    "neg": lambda a: -a,
    "square": lambda a: a * a,
    "sum_last_keepdim": lambda a: a.sum(-1, keepdim=True),   # a 0-d value takes dim 0 or -1 too
    "mean_first_keepdim": lambda a: a.mean(0, keepdim=True),
    "logsumexp_last_keepdim": lambda a: a.logsumexp(-1, keepdim=True),
    "softmax_last": lambda a: a.softmax(-1),
}
BINARY_STEPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "safe_div": lambda a, b: a / (b * b + 1.0),
    "pow_positive_base": lambda a, b: (a * a + 0.5) ** b.tanh(),
    "where_alternating": lambda a, b: jg.where(jg.tensor(np.array([True, False, False, True])), a, b),
}
LEAF_SHAPES = [(), (4,), (3, 1), (1, 4), (3, 4)]


@st.composite
def programs(draw):
    shapes = draw(st.lists(st.sampled_from(LEAF_SHAPES), min_size=1, max_size=3))
    steps = []
    for k in range(draw(st.integers(2, 6))):
        available = len(shapes) + k
        if draw(st.booleans()):
            steps.append((draw(st.sampled_from(sorted(UNARY_STEPS))), draw(st.integers(0, available - 1))))
        else:
            steps.append((draw(st.sampled_from(sorted(BINARY_STEPS))), draw(st.integers(0, available - 1)),
                          draw(st.integers(0, available - 1))))
    return shapes, steps, draw(st.integers(0, 2**32 - 1))


def run_program(steps, values):
    values = list(values)
    for name, *operands in steps:
        fn = UNARY_STEPS.get(name) or BINARY_STEPS[name]
        values.append(fn(*(values[i] for i in operands)))
    return values[-1]


@settings(max_examples=40, deadline=None)
@given(programs())
def test_random_graphs_match_finite_differences(program):
    shapes, steps, seed = program
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(rng.uniform(-1.5, 1.5, size=s)) for s in shapes]
    with jg.no_grad():
        shape = run_program(steps, [jg.tensor(a) for a in arrays]).shape
    v = rng.uniform(-1.0, 1.0, size=tuple(shape))

    def loss_value(a):
        with jg.no_grad():
            return float((run_program(steps, [jg.tensor(x) for x in a]) * jg.tensor(v)).sum())

    inputs = [jg.tensor(a, requires_grad=True) for a in arrays]
    out = run_program(steps, inputs)
    grads = jg.autograd.grad((out * jg.tensor(v)).sum(), inputs, allow_unused=True)
    expected = numerical_gradient(loss_value, arrays, range(len(arrays)))
    for i, (g, e) in enumerate(zip(grads, expected)):
        assert g is None or tuple(g.shape) == shapes[i]
        assert_close(None if g is None else g.numpy(), e, rtol=1e-5, atol=1e-6, what=f"{steps} input {i}")


def test_every_formula_reads_its_parameters_in_signature_order():
    """``OpDef.reads`` and ``jvp_reads`` are read off the formulas' code objects at import (the cheap
    path of ``jitgrad.signatures.parameter_names``); formulas are called positionally with them, so they must be
    exactly what ``inspect.signature`` gives, in its order."""
    import inspect
    for op in REGISTRY.values():
        for name, formula in op.derivatives.items():
            assert op.reads[name] == tuple(inspect.signature(formula).parameters), (op.name, name)
        if op.jvp is not None:
            assert op.jvp_reads == tuple(inspect.signature(op.jvp).parameters), op.name


def test_an_integer_base_gives_a_float64_exponent_a_float64_gradient():
    """pow's derivative for its exponent took the log of an integer base in the default float32, so a
    float64 exponent's gradient had float32's precision (PyTorch casts the base to the result's dtype)."""
    base, exponent = np.array([0, 2, 3, 7]), np.array([0.3, 0.7, 1.9, -0.4])
    x = jg.tensor(exponent, requires_grad=True)
    (jg.tensor(base) ** x).sum().backward()
    expected = np.where(base == 0, 0.0, base ** exponent * np.log(np.maximum(base, 1)))
    assert x.grad.dtype == jg.float64
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-14)
