"""``jitgrad.autograd.functional`` against ``torch.autograd.functional``: for each function, inputs given
as a Tensor, a tuple of one and a tuple of two, functions returning a Tensor, a tuple of one and a tuple
of two, with and without ``create_graph``, ``strict`` and ``vectorize``, the results must have PyTorch's
structure (Tensor or tuple, nesting, shapes, ``requires_grad``) and values, and with ``create_graph`` the
same gradients back to the inputs. Errors must be of PyTorch's types."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd import functional as F

torch = pytest.importorskip("torch")
TF = torch.autograd.functional

ARRAYS = (np.array([0.3, -1.2, 0.7]), np.array([[1.5, 0.2], [-0.4, 0.9]]))
INPUT_KINDS = ("tensor", "tuple1", "tuple2")
OUTPUT_KINDS = ("tensor", "tuple1", "tuple2")


class Lib:
    """One library's tensor maker and functional module, so a test builds the same call for both."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.functional = TF if name == "torch" else F

    def tensor(self, array, requires_grad=False):
        if self.name == "torch":
            return torch.tensor(array, requires_grad=requires_grad)
        return jg.tensor(array, requires_grad=requires_grad)

    def inputs(self, kind, requires_grad=True):
        made = tuple(self.tensor(a, requires_grad) for a in ARRAYS)
        return {"tensor": made[0], "tuple1": made[:1], "tuple2": made}[kind]

    def like(self, structure, scale=1.0):
        """Tensors of ``structure``'s shapes (a Tensor or a tuple of them), with nonzero entries."""
        def one(t):
            n = int(np.prod(t.shape))
            return self.tensor((np.arange(n, dtype=np.float64) * 0.37 - 0.5 * scale).reshape(tuple(t.shape)))
        return tuple(one(t) for t in structure) if isinstance(structure, tuple) else one(structure)


LIBS = (Lib("torch"), Lib("jitgrad"))


def total(*xs):
    """A sum over every input, so that every output depends on every input, nonlinearly."""
    s = (xs[0] * xs[0]).sum()
    for x in xs[1:]:
        s = s + (x * x).sum()
    return s


def vector_output(*xs):
    return xs[0].sin() * total(*xs)


OUTPUTS = {
    "tensor": vector_output,
    "tuple1": lambda *xs: (vector_output(*xs),),
    "tuple2": lambda *xs: (vector_output(*xs), total(*xs).exp() * xs[-1].tanh()),
}


def scalar(*xs):
    s = xs[0].sin().sum()
    for x in xs[1:]:
        s = s + x.sin().sum()
    return s * s


def assert_same_structure(ours, theirs, where="result"):
    """Same nesting of tuples, Tensor where PyTorch has a Tensor, same shapes, values, requires_grad."""
    if isinstance(theirs, (tuple, list)):
        assert type(ours) is tuple, f"{where}: PyTorch gives a {type(theirs).__name__}, jitgrad {type(ours)}"
        assert len(ours) == len(theirs), f"{where}: {len(ours)} entries, PyTorch has {len(theirs)}"
        for i, (o, t) in enumerate(zip(ours, theirs)):
            assert_same_structure(o, t, f"{where}[{i}]")
        return
    assert isinstance(theirs, torch.Tensor)
    assert isinstance(ours, jg.Tensor), f"{where}: PyTorch gives a Tensor, jitgrad a {type(ours).__name__}"
    assert tuple(ours.shape) == tuple(theirs.shape), f"{where}: {tuple(ours.shape)} vs {tuple(theirs.shape)}"
    assert ours.requires_grad == theirs.requires_grad, f"{where}: requires_grad {ours.requires_grad}"
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12,
                               err_msg=where)


def as_tuple(inputs):
    return inputs if isinstance(inputs, tuple) else (inputs,)


def flatten(structure):
    if isinstance(structure, (tuple, list)):
        return [t for s in structure for t in flatten(s)]
    return [structure]


def run_both(call, create_graph):
    """``call(lib, inputs)`` in both libraries, compared; with create_graph, the gradients of the sum of
    every result back to the inputs too (the graph the results keep must be the same function)."""
    results = []
    for lib in LIBS:
        inputs = call.inputs(lib)
        result = call(lib, inputs)
        grads = None
        wanted = [t for t in flatten(result) if t.requires_grad]
        if create_graph and wanted:
            loss = sum(t.sum() for t in wanted)
            ad = torch.autograd if lib.name == "torch" else jg.autograd
            grads = ad.grad(loss, flatten(inputs), allow_unused=True)
        results.append((result, grads))
    (theirs, their_grads), (ours, our_grads) = results
    assert_same_structure(ours, theirs)
    if their_grads is not None:
        for i, (o, t) in enumerate(zip(our_grads, their_grads)):
            assert (o is None) == (t is None), f"gradient of input {i}: {o} vs {t}"
            if t is not None:
                np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-9, atol=1e-12)


class Call:
    """A call of one functional, the same for both libraries."""

    def __init__(self, body, input_kind):
        self.body, self.input_kind = body, input_kind

    def inputs(self, lib):
        return lib.inputs(self.input_kind)

    def __call__(self, lib, inputs):
        return self.body(lib, inputs)


FLAGS = list(itertools.product((False, True), (False, True)))   # create_graph, strict


@pytest.mark.parametrize("create_graph,strict", FLAGS)
@pytest.mark.parametrize("out_kind", OUTPUT_KINDS)
@pytest.mark.parametrize("in_kind", INPUT_KINDS)
def test_vjp(in_kind, out_kind, create_graph, strict):
    f = OUTPUTS[out_kind]

    def body(lib, inputs):
        v = lib.like(f(*as_tuple(inputs)))
        return lib.functional.vjp(f, inputs, v, create_graph=create_graph, strict=strict)
    run_both(Call(body, in_kind), create_graph)


@pytest.mark.parametrize("create_graph,strict", FLAGS)
@pytest.mark.parametrize("out_kind", OUTPUT_KINDS)
@pytest.mark.parametrize("in_kind", INPUT_KINDS)
def test_jvp(in_kind, out_kind, create_graph, strict):
    f = OUTPUTS[out_kind]

    def body(lib, inputs):
        return lib.functional.jvp(f, inputs, lib.like(inputs), create_graph=create_graph, strict=strict)
    run_both(Call(body, in_kind), create_graph)


@pytest.mark.parametrize("create_graph,strict,vectorize", [f + (False,) for f in FLAGS] +
                         [(False, False, True), (True, False, True)])
@pytest.mark.parametrize("out_kind", OUTPUT_KINDS)
@pytest.mark.parametrize("in_kind", INPUT_KINDS)
def test_jacobian(in_kind, out_kind, create_graph, strict, vectorize):
    f = OUTPUTS[out_kind]

    def body(lib, inputs):
        return lib.functional.jacobian(f, inputs, create_graph=create_graph, strict=strict,
                                       vectorize=vectorize)
    run_both(Call(body, in_kind), create_graph)


@pytest.mark.parametrize("create_graph,strict,vectorize", [f + (False,) for f in FLAGS] +
                         [(False, False, True), (True, False, True)])
@pytest.mark.parametrize("in_kind", INPUT_KINDS)
def test_hessian(in_kind, create_graph, strict, vectorize):
    def body(lib, inputs):
        return lib.functional.hessian(scalar, inputs, create_graph=create_graph, strict=strict,
                                      vectorize=vectorize)
    run_both(Call(body, in_kind), create_graph)


@pytest.mark.parametrize("create_graph,strict", FLAGS)
@pytest.mark.parametrize("in_kind", INPUT_KINDS)
@pytest.mark.parametrize("name", ["hvp", "vhp"])
def test_hvp_and_vhp(name, in_kind, create_graph, strict):
    def body(lib, inputs):
        return getattr(lib.functional, name)(scalar, inputs, lib.like(inputs), create_graph=create_graph,
                                             strict=strict)
    run_both(Call(body, in_kind), create_graph)


def test_hessian_of_a_0d_input_is_0d():
    def body(lib, inputs):
        return lib.functional.hessian(lambda x: x * x * x, inputs)

    class ZeroD(Call):
        def inputs(self, lib):
            return lib.tensor(np.array(0.7))
    run_both(ZeroD(body, "tensor"), False)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("name", ["jacobian", "hessian"])
@pytest.mark.parametrize("in_kind", INPUT_KINDS)
def test_forward_mode(name, in_kind):
    """PyTorch computes these only with vectorize=True (and returns lists there, where its documentation
    says tuples); jitgrad computes them either way and returns tuples."""
    def body(lib, inputs):
        fn = getattr(lib.functional, name)
        if name == "jacobian":
            return fn(OUTPUTS["tuple2"], inputs, vectorize=True, strategy="forward-mode")
        return fn(scalar, inputs, vectorize=True, outer_jacobian_strategy="forward-mode")

    for vectorize in (True, False):
        theirs = body(LIBS[0], LIBS[0].inputs(in_kind, requires_grad=False))
        ours = body(LIBS[1], LIBS[1].inputs(in_kind, requires_grad=False))
        # PyTorch's forward-over-reverse Hessian keeps a graph nobody asked for; jitgrad's does not.
        theirs = _detach_all(theirs)
        assert_same_structure(ours, theirs)


def _detach_all(structure):
    if isinstance(structure, (tuple, list)):
        return tuple(_detach_all(s) for s in structure)
    return structure.detach()


# ---- errors ---------------------------------------------------------------------------------------------
def both_raise(call, match=None):
    """Both libraries raise, and the same exception type."""
    errors = []
    for lib in LIBS:
        with pytest.raises(Exception) as info:
            call(lib)
        errors.append(info.value)
    assert type(errors[1]) is type(errors[0]), f"jitgrad raised {errors[1]!r}, PyTorch {errors[0]!r}"
    if match is not None:
        assert match in str(errors[1]), str(errors[1])


def two(lib):
    return lib.inputs("tuple2")


@pytest.mark.parametrize("name", ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"])
def test_a_list_is_not_a_tuple_of_inputs(name):
    both_raise(lambda lib: getattr(lib.functional, name)(scalar, list(two(lib))), "list")


def test_lists_for_v_and_outputs_are_refused():
    both_raise(lambda lib: lib.functional.vjp(OUTPUTS["tuple2"], two(lib), list(lib.like(OUTPUTS["tuple2"](
        *two(lib))))), "list")
    both_raise(lambda lib: lib.functional.jvp(vector_output, two(lib), list(lib.like(two(lib)))), "list")
    both_raise(lambda lib: lib.functional.jacobian(lambda *xs: [x * 2 for x in xs], two(lib)), "list")
    both_raise(lambda lib: lib.functional.jacobian(lambda *xs: 3.0, two(lib)), "float")
    both_raise(lambda lib: lib.functional.jacobian(lambda *xs: xs[0], (two(lib)[0], 3.0)), "float")


def test_when_v_may_be_left_out():
    one = np.array([0.5])
    both_raise(lambda lib: lib.functional.vjp(vector_output, two(lib)), "v can only be None")
    both_raise(lambda lib: lib.functional.vjp(lambda x: (x * 2, x * 3), lib.tensor(one)),
               "v can only be None")
    both_raise(lambda lib: lib.functional.jvp(vector_output, (lib.tensor(one), lib.tensor(one))),
               "v can only be None")
    for name in ("hvp", "vhp"):
        both_raise(lambda lib: getattr(lib.functional, name)(scalar, lib.inputs("tensor")),
                   "v can only be None")

    class Single(Call):
        def inputs(self, lib):
            return lib.tensor(one, requires_grad=True)
    for name in ("vjp", "jvp", "hvp", "vhp"):
        f = scalar if name in ("vjp", "hvp", "vhp") else vector_output
        run_both(Single(lambda lib, x, name=name, f=f: getattr(lib.functional, name)(f, x), "tensor"), False)


def test_v_of_the_wrong_size_or_count():
    both_raise(lambda lib: lib.functional.vjp(vector_output, lib.inputs("tensor"), lib.tensor([1.0])))
    both_raise(lambda lib: lib.functional.vjp(vector_output, lib.inputs("tensor"),
                                              lib.like((lib.inputs("tensor"),) * 2)))
    both_raise(lambda lib: lib.functional.hvp(scalar, two(lib), lib.like(two(lib))[:1]))
    both_raise(lambda lib: lib.functional.jvp(vector_output, two(lib), lib.like(two(lib)[::-1])))


def test_functions_that_must_return_one_single_element_tensor():
    for name in ("hessian", "hvp", "vhp"):
        def call(lib, f, name=name):
            x = lib.inputs("tensor")
            fn = getattr(lib.functional, name)
            return fn(f, x) if name == "hessian" else fn(f, x, lib.like(x))
        both_raise(lambda lib: call(lib, lambda x: (x.sum(),)), "single Tensor")
        both_raise(lambda lib: call(lib, lambda x: x * 2), "single element")


def detached(*xs):
    return xs[0].detach() * 2


def first_only(*xs):
    return xs[0] * 2


def linear(*xs):
    return (xs[0] * 2).sum()


def square(*xs):
    return (xs[0] * xs[0]).sum()


def constant_jacobian_in_a(a, b):
    return a * 2 + b.sin().sum()


STRICT_CASES = [   # (function, f, input kind, create_graph): PyTorch refuses each with strict=True
    ("vjp", detached, "tensor", False), ("vjp", first_only, "tuple2", False),
    ("jvp", detached, "tensor", False), ("jvp", first_only, "tuple2", False),
    ("jvp", first_only, "tensor", True),
    ("jacobian", detached, "tensor", False), ("jacobian", first_only, "tuple2", False),
    ("jacobian", constant_jacobian_in_a, "tuple2", True),
    ("hessian", linear, "tensor", False), ("hessian", square, "tensor", True),
    ("hvp", linear, "tensor", False), ("hvp", square, "tensor", True),
    ("vhp", linear, "tensor", False), ("vhp", square, "tensor", True),
]


@pytest.mark.parametrize("name,f,in_kind,create_graph", STRICT_CASES,
                         ids=[f"{c[0]}-{c[1].__name__}-{c[2]}-{c[3]}" for c in STRICT_CASES])
def test_strict_refuses_what_pytorch_refuses(name, f, in_kind, create_graph):
    def call(lib):
        fn, xs = getattr(lib.functional, name), lib.inputs(in_kind)
        if name in ("jacobian", "hessian"):
            return fn(f, xs, create_graph=create_graph, strict=True)
        if name == "vjp":
            return fn(f, xs, lib.like(f(*as_tuple(xs))), create_graph=create_graph, strict=True)
        return fn(f, xs, lib.like(xs), create_graph=create_graph, strict=True)
    both_raise(call, "strict")

    def without_strict(lib, xs):
        fn = getattr(lib.functional, name)
        if name in ("jacobian", "hessian"):
            return fn(f, xs, create_graph=create_graph)
        if name == "vjp":
            return fn(f, xs, lib.like(f(*as_tuple(xs))), create_graph=create_graph)
        return fn(f, xs, lib.like(xs), create_graph=create_graph)
    run_both(Call(without_strict, in_kind), create_graph)   # zeros where strict refuses


def test_strategies_and_their_limits():
    x = lambda lib: lib.inputs("tensor")  # noqa: E731
    both_raise(lambda lib: lib.functional.jacobian(vector_output, x(lib), strict=True, vectorize=True))
    both_raise(lambda lib: lib.functional.hessian(scalar, x(lib), strict=True, vectorize=True))
    both_raise(lambda lib: lib.functional.jacobian(vector_output, x(lib), create_graph=True, vectorize=True,
                                                   strategy="forward-mode"))
    both_raise(lambda lib: lib.functional.jacobian(vector_output, x(lib), strict=True, vectorize=True,
                                                   strategy="forward-mode"))
    # PyTorch raises an AssertionError for a strategy it does not know; jitgrad a ValueError naming it.
    with pytest.raises(ValueError, match="sideways"):
        F.jacobian(vector_output, x(LIBS[1]), strategy="sideways")
    with pytest.raises(ValueError, match="sideways"):
        F.hessian(scalar, x(LIBS[1]), outer_jacobian_strategy="sideways")
