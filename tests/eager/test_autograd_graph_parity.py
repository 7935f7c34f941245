"""``torch.autograd.graph``'s API against PyTorch 2.13: ``allow_mutation_on_saved_tensors``, the names
and edges of the nodes ops record. Each program runs on jitgrad, and on torch where it is installed,
with its expected results written out. Sizes are tiny and nothing here compiles a kernel."""
from __future__ import annotations

import pytest

import jitgrad as jg
from helpers import each_library, leaf, values


class TestAllowMutationOnSavedTensors:
    """Inside the block an in-place change to a tensor saved for backward copies it first, and
    backward uses the copy (until 2026-11-28 jitgrad had no such block)."""

    @each_library
    @pytest.mark.parametrize("change, grad", [
        (lambda b: b.sin_(), [2.0, 4.0]),
        (lambda b: b[:1].mul_(3), [2.0, 4.0]),       # through a view of the saved tensor
        (lambda b: b.__setitem__(0, 10.0), [2.0, 4.0]),
        (lambda b: b.detach().mul_(5), [2.0, 4.0]),  # through an alias sharing its memory
        (lambda b: (b.mul_(2), b.mul_(2)), [2.0, 4.0]),
    ], ids=["sin_", "view", "setitem", "detached", "twice"])
    def test_backward_sees_the_value_saved(self, lib, change, grad):
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            a = leaf(lib, 1.0, 2.0)
            b = a.clone()
            out = (b ** 2).sum()
            change(b)
            out.backward()
        assert values(a.grad) == grad

    @each_library
    def test_a_saved_output_and_a_saved_view_of_a_changed_base(self, lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            x = leaf(lib, 0.0, 1.0)
            y = x.exp()  # its node saves its output
            y.mul_(2)
            y.sum().backward()
            a = leaf(lib, 1.0, 2.0, 3.0)
            b = a.clone()
            out = (b[:2] ** 2).sum()
            b.mul_(3)
            out.backward()
        assert values(x.grad) == pytest.approx([2.0, 2 * 2.718281828459045])
        assert values(a.grad) == [2.0, 4.0, 0.0]

    @each_library
    def test_a_leaf_changed_under_no_grad_and_a_double_backward(self, lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            x, w = leaf(lib, 1.0, 2.0), leaf(lib, 3.0, 4.0)
            out = (w * x).sum()
            with lib.no_grad():
                w.mul_(10)  # an optimizer's step between forward and backward
            out.backward()
            a = leaf(lib, 1.0, 2.0)
            b = a.clone()
            cube = (b ** 3).sum()
            b.sin_()
            grad, = lib.autograd.grad(cube, a, create_graph=True)
            grad.sum().backward()  # through the copy, back to the history of b before sin_
        assert values(x.grad) == [3.0, 4.0] and values(w.grad) == [1.0, 2.0]
        assert values(grad) == [3.0, 12.0] and values(a.grad) == [6.0, 12.0]

    @each_library
    def test_backward_after_the_block_and_nesting_are_refused(self, lib):
        allow = lib.autograd.graph.allow_mutation_on_saved_tensors
        with allow():
            b = leaf(lib, 1.0, 2.0).clone()
            out = (b ** 2).sum()
            with pytest.raises(RuntimeError, match="allow_mutation_on_saved_tensors contexts cannot be nested"):
                with allow():
                    pass
        with pytest.raises(AssertionError, match="Trying to backward outside of the 'allow_mutation_on_saved_tensors' "
                                                 "context ?in which the graph was originally recorded"):
            out.backward()

    @each_library
    def test_a_graph_recorded_outside_still_refuses_a_changed_saved_tensor(self, lib):
        b = leaf(lib, 1.0, 2.0).clone()
        out = (b ** 2).sum()
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            b.sin_()
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                out.backward()

    def test_the_block_forgets_memories_whose_saved_values_were_freed(self, monkeypatch):
        """A training loop inside the block kept every step's tensors in its table (jitgrad only: PyTorch's
        keeps their ids)."""
        monkeypatch.setattr(jg.autograd.mutation_on_saved, "_FIRST_PRUNE", 8)
        with jg.autograd.graph.allow_mutation_on_saved_tensors() as context:
            w = leaf(jg, 1.0, 2.0)
            for _ in range(40):
                (w * leaf(jg, 3.0, 4.0).exp()).sum().backward()
                with jg.no_grad():
                    w.mul_(0.5)
            assert len(context.handles_by_memory) <= 16


def _edges(node) -> list:
    """A node's next functions by name (PyTorch names a leaf's ``torch::autograd::AccumulateGrad``)."""
    return [None if fn is None else fn.name().replace("torch::autograd::", "") for fn, _ in node.next_functions]


@each_library
@pytest.mark.parametrize("program, name, edges", [
    (lambda x: x.t(), "TBackward0", ["AccumulateGrad"]),
    (lambda x: x[0].t(), "TBackward0", ["SelectBackward0"]),  # a vector's t() is a view of it, named so too
    (lambda x: x.transpose(0, 1), "TransposeBackward0", ["AccumulateGrad"]),
    (lambda x: x.mT, "TransposeBackward0", ["AccumulateGrad"]),
    (lambda x: x.T, "PermuteBackward0", ["AccumulateGrad"]),
    (lambda x: x.mv(x[0]), "MvBackward0", ["AccumulateGrad", "SelectBackward0"]),  # no Tensor.mv before 2026-11-28
], ids=["t", "t-vector", "transpose", "mT", "T", "mv"])
def test_node_names_and_edges_are_pytorchs(lib, program, name, edges):
    x = leaf(lib, 1.0, 2.0).reshape(1, 2).detach().requires_grad_()
    node = program(x).grad_fn
    assert (type(node).__name__, node.name(), _edges(node)) == (name, name, edges)


@each_library
def test_a_zero_norm_gives_its_input_no_gradient(lib):
    """norm(p=0) counts nonzeros; PyTorch's backward gives the input None, so ``.grad`` stays None (until
    2026-11-28 jitgrad gave zeros), while the count still requires grad."""
    x = leaf(lib, 1.0, 0.0, -2.0)
    count = lib.linalg.vector_norm(x, 0)
    count.backward()
    assert values(count) == 2.0 and count.requires_grad and x.grad is None
    assert count.grad_fn.name() == "LinalgVectorNormBackward0"
    (x.norm(p=0, dim=0) * 3 + x.sum()).backward()
    assert values(x.grad) == [1.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        lib.autograd.grad(x.norm(p=0), x)


@each_library
def test_a_node_is_callable_as_in_pytorch(lib):
    """``node(*grad_outputs)`` runs the node in the caller's grad mode (missing before 2026-11-28)."""
    x, w = leaf(lib, 1.0, 2.0), leaf(lib, 3.0, 4.0)
    grad = lib.tensor([1.0, 10.0], dtype=lib.float64)
    of_x, of_w = (x * w).grad_fn(grad)
    assert values(of_x) == [3.0, 40.0] and values(of_w) == [1.0, 20.0] and of_x.requires_grad
    assert values((x * 2).grad_fn(grad)[0]) == [2.0, 20.0] and (x * 2).grad_fn(grad)[1] is None
    assert values(x.exp().grad_fn(grad)) == pytest.approx([2.718281828459045, 73.89056098930651])
    first, _ = x.split(1)
    with pytest.raises(TypeError, match="expected 2 arguments, got 1 instead"):
        first.grad_fn(grad[:1])
    assert (x * w).grad_fn.next_functions[0][0](grad) == () and values(x.grad) == [1.0, 10.0]


@each_library
def test_saved_shapes_answer_to_pytorchs_names_and_multithreading_is_a_mode(lib):
    x = leaf(lib, 1.0, 2.0, 3.0, 4.0).reshape(2, 2)
    node = x.sum(0).grad_fn
    assert tuple(node._saved_self_sym_sizes) == (2, 2) and "_saved_self_sym_sizes" in dir(node)
    with lib.autograd.set_multithreading_enabled(False):
        x.sum().backward()
    lib.autograd.set_multithreading_enabled(True)


@each_library
@pytest.mark.parametrize("program, name", [
    (lambda lib, a: lib.linalg.inv(a), "LinalgInvExBackward0"),
    (lambda lib, a: lib.linalg.det(a), "LinalgDetBackward0"),
    (lambda lib, a: lib.linalg.slogdet(a)[1], "LinalgSlogdetBackward0"),
    (lambda lib, a: lib.linalg.solve(a, a), "LinalgSolveExBackward0"),
    (lambda lib, a: lib.linalg.pinv(a), "LinalgPinvBackward0"),
    (lambda lib, a: lib.linalg.solve_triangular(a, a, upper=True), "LinalgSolveTriangularBackward0"),
    (lambda lib, a: lib.linalg.cholesky(a), "LinalgCholeskyExBackward0"),
    (lambda lib, a: lib.linalg.eigh(a)[0], "LinalgEighBackward0"),
    (lambda lib, a: lib.linalg.svd(a)[1], "LinalgSvdBackward0"),
    (lambda lib, a: lib.linalg.qr(a)[0], "LinalgQrBackward0"),
    (lambda lib, a: lib.digamma(a), "DigammaBackward0"),
    (lambda lib, a: lib.polygamma(1, a), "PolygammaBackward0"),
    (lambda lib, a: lib.lgamma(a), "LgammaBackward0"),
    (lambda lib, a: lib.erfc(a), "ErfcBackward0"),
    (lambda lib, a: lib.erfinv(a / 4), "ErfinvBackward0"),
    (lambda lib, a: lib.special.log_ndtr(a), "SpecialLogNdtrBackward0"),
    (lambda lib, a: lib.special.ndtri(a / 4), "SpecialNdtriBackward0"),
    (lambda lib, a: lib.special.i0(a), "I0Backward0"),
    (lambda lib, a: lib.special.i1(a), "SpecialI1Backward0"),
], ids=lambda value: value if isinstance(value, str) else "")
def test_linalg_and_special_functions_have_pytorchs_node_names(lib, program, name):
    """Until 2026-11-28 these were named after jitgrad's classes (``LinalgInvBackward``, ``EighBackward``)."""
    a = (lib.eye(2, dtype=lib.float64) * 2 + 0.5).requires_grad_()
    assert type(program(lib, a).grad_fn).__name__ == name
