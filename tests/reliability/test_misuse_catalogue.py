"""The misuse catalogue: what a user gets wrong, and the error jitgrad gives for it. Each case must
raise the exception PyTorch raises (compared with PyTorch itself where it is installed), with a
message naming the cause, and must leave the leaf it was given, and its ``.grad``, as they were.

A few cases differ from PyTorch on purpose (``DIFFERENT_ON_PURPOSE``, each with the reason).
"""
from __future__ import annotations

import re
import warnings

import pytest

import jitgrad as jg

try:
    import torch
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None

CASES = [
    ('backward-non-scalar', lambda L, w: (w*2).backward(),
     RuntimeError, 'grad can be implicitly created only'),
    ('backward-no-grad', lambda L, w: L.ones(3).sum().backward(),
     RuntimeError, 'element 0 of tensors does not'),
    ('grad-input-no-grad', lambda L, w: L.autograd.grad(w.sum(), [L.ones(3)]),
     RuntimeError, 'One of the differentiated Tensors (index'),
    ('grad-unused', lambda L, w: L.autograd.grad(w.sum(), [L.ones(3, requires_grad=True)]),
     RuntimeError, 'The differentiated Tensor at index 0'),
    ('inplace-leaf', lambda L, w: w.add_(1),
     RuntimeError, 'a leaf Variable that requires grad'),
    ('requires-grad-int', lambda L, w: L.ones(3, dtype=L.int64).requires_grad_(),
     RuntimeError, 'only Tensors of floating point dtype'),
    ('numpy-requires-grad', lambda L, w: w.numpy(),
     RuntimeError, "Can't call numpy() on Tensor that"),
    ('item-multi', lambda L, w: L.ones(3).item(),
     RuntimeError, 'a Tensor with 3 elements cannot'),
    ('matmul-shapes', lambda L, w: L.ones(2,3) @ L.ones(2,3),
     RuntimeError, 'mat1 and mat2 shapes cannot be'),
    ('add-broadcast', lambda L, w: L.ones(2,3) + L.ones(4),
     RuntimeError, 'shapes (2, 3) and (4,) cannot'),
    ('reshape-invalid', lambda L, w: L.ones(6).reshape(4),
     RuntimeError, "shape '[4]' is invalid for input"),
    ('view-noncontig', lambda L, w: L.ones(2,3).T.view(-1),
     RuntimeError, 'view size is not compatible with'),
    ('cat-mismatch', lambda L, w: L.cat([L.ones(2,3), L.ones(2,4)]),
     RuntimeError, 'Sizes of tensors must match except'),
    ('stack-mismatch', lambda L, w: L.stack([L.ones(2), L.ones(3)]),
     RuntimeError, 'stack expects each tensor to be'),
    ('index-out-of-range', lambda L, w: L.ones(3)[5],
     IndexError, 'index 5 is out of bounds'),
    ('sum-dim-out-of-range', lambda L, w: L.ones(3).sum(5),
     IndexError, 'sum: Dimension out of range (expected'),
    ('transpose-dim', lambda L, w: L.ones(2,3).transpose(0, 4),
     IndexError, 'transpose: Dimension out of range (expected'),
    ('squeeze-dim', lambda L, w: L.ones(2,3).squeeze(4),
     IndexError, 'squeeze: Dimension out of range (expected'),
    ('softmax-dim', lambda L, w: L.ones(2,3).softmax(4),
     IndexError, 'softmax: Dimension out of range (expected'),
    ('expand-invalid', lambda L, w: L.ones(2,3).expand(4,3),
     RuntimeError, 'The expanded size of the tensor'),
    ('matmul-dtype', lambda L, w: L.ones(2,3, dtype=L.float64) @ L.ones(3,2, dtype=L.float32),
     RuntimeError, 'expected both operands to have the'),
    ('backward-grad-shape', lambda L, w: (w*2).backward(L.ones(4)),
     RuntimeError, 'Mismatch in shape: grad_output[0] has a'),
    ('hook-wrong-shape', lambda L, w: (lambda x: (x.register_hook(lambda g: L.ones(5)), (x*2).sum().backward()))(w),
     RuntimeError, "hook '<lambda>' has changed the size"),
    ('hook-non-tensor', lambda L, w: (lambda x: (x.register_hook(lambda g: 3), (x*2).sum().backward()))(w),
     TypeError, "expected Variable, but hook returned 'int'"),
    ('requires-grad-false-nonleaf', lambda L, w: (w*2).requires_grad_(False),
     RuntimeError, 'you can only change requires_grad flags'),
    ('grad-nonscalar', lambda L, w: L.autograd.grad(w*2, [w]),
     RuntimeError, 'grad can be implicitly created only'),
    ('bool-multi', lambda L, w: bool(L.ones(3)),
     RuntimeError, 'Boolean value of Tensor with more'),
    ('int-multi', lambda L, w: int(L.ones(3)),
     ValueError, 'only one element tensors can be'),
    ('float-multi', lambda L, w: float(L.ones(3)),
     ValueError, 'only one element tensors can be'),
    ('clamp-no-bounds', lambda L, w: L.ones(3).clamp(),
     RuntimeError, "At least one of 'min' or"),
    ('int-floordiv-zero', lambda L, w: L.tensor([1, 2]) // L.tensor([0, 1]),
     RuntimeError, 'ZeroDivisionError'),
    ('mean-int', lambda L, w: L.tensor([1, 2]).mean(),
     RuntimeError, 'mean(): could not infer output dtype.'),
    ('backward-inputs-empty', lambda L, w: w.sum().backward(inputs=[]),
     RuntimeError, '`inputs` argument to `backward()` cannot be empty.'),
    ('grad-inputs-empty', lambda L, w: L.autograd.grad(w.sum(), []),
     RuntimeError, '`inputs` argument to `grad()` cannot be empty.'),
    ('tensor-ragged', lambda L, w: L.tensor([[1.0, 2.0], [3.0]]),
     ValueError, 'setting an array element with a'),
    ('grad-assign-shape', lambda L, w: setattr(w, "grad", L.ones(4)),
     RuntimeError, "attempting to assign a gradient of size '[4]' to a tensor of size '[3]'"),
    ('grad-assign-dtype', lambda L, w: setattr(w, "grad", L.ones(3, dtype=L.int64)),
     RuntimeError, "attempting to assign a gradient with dtype 'jitgrad.int64' to a tensor with grad_dtype"),
    ('select-0d', lambda L, w: L.tensor(1.0).select(0, 0),
     IndexError, 'a 0-d tensor has no dimension'),
    ('narrow-out', lambda L, w: L.ones(3).narrow(0, 2, 5),
     RuntimeError, 'start (2) + length (5) exceeds'),
    ('pow-int-negative', lambda L, w: L.tensor([2]) ** -1,
     RuntimeError, 'Integers to negative integer powers are'),
    ('where-shapes', lambda L, w: L.where(L.ones(2, dtype=L.bool), L.ones(3), L.ones(4)),
     RuntimeError, 'shapes (2,) and (3,) and (4,)'),
    ('matvec-shapes', lambda L, w: L.ones(2,3) @ L.ones(2),
     RuntimeError, 'mat1 and mat2 shapes cannot be'),
    ('max-dim', lambda L, w: L.ones(3).max(dim=5),
     IndexError, 'max: Dimension out of range (expected'),
    ('argmax-dim', lambda L, w: L.ones(3).argmax(dim=3),
     IndexError, 'argmax: Dimension out of range (expected'),
    ('zeros-negative', lambda L, w: L.zeros(-1),
     RuntimeError, 'Trying to create tensor with negative'),
    ('arange-zero-step', lambda L, w: L.arange(0, 10, 0),
     RuntimeError, 'step must be nonzero'),
    ('unsqueeze-dim', lambda L, w: L.ones(3).unsqueeze(5),
     IndexError, 'unsqueeze: Dimension out of range (expected'),
    ('permute-repeat', lambda L, w: L.ones(2,3).permute(0, 0),
     RuntimeError, 'duplicate dims are not allowed (got'),
    ('reshape-two-inferred', lambda L, w: L.ones(6).reshape(-1, -1),
     RuntimeError, "shape '[-1, -1]' is invalid for"),
    ('split-zero', lambda L, w: L.ones(6).split(0),
     RuntimeError, 'split_size can only be 0 if dimension size is 0'),  # PyTorch's words (2026-11-28)
    ('chunk-zero', lambda L, w: L.ones(6).chunk(0),
     RuntimeError, 'chunk expects `chunks` to be greater'),
    ('nll-target-out', lambda L, w: L.nn.functional.nll_loss(L.ones(2,3), L.tensor([0, 5])),
     IndexError, 'Target 5 is out of bounds'),
    ('cross-entropy-shape', lambda L, w: L.nn.functional.cross_entropy(L.ones(2,3), L.tensor([0, 1, 2])),
     ValueError, 'Expected input batch_size (2) to match'),
    ('mse-shape', lambda L, w: L.nn.functional.mse_loss(L.ones(2,3), L.ones(4,3)),
     RuntimeError, 'shapes (2, 3) and (4, 3)'),
    ('retain-grad-no-grad', lambda L, w: L.ones(3).retain_grad(),
     RuntimeError, "can't retain_grad on Tensor that has"),
    ('register-hook-no-grad', lambda L, w: L.ones(3).register_hook(lambda g: g),
     RuntimeError, 'cannot register a hook on a'),
    ('dual-outside-level', lambda L, w: L.autograd.forward_ad.make_dual(L.ones(3), L.ones(3)),
     RuntimeError, 'Trying to create a dual Tensor for forward AD but no level exists'),
    ('to-bad-dtype', lambda L, w: L.ones(3).to("cuda"),
     RuntimeError, 'Found no NVIDIA driver on your system.'),
    ('std-int', lambda L, w: L.tensor([1, 2]).std(),
     RuntimeError, 'std: std and var only support'),
    ('flatten-bad-dims', lambda L, w: L.ones(2,3).flatten(1, 0),
     RuntimeError, 'flatten() has invalid args: start_dim cannot'),
    ('backward-create-graph-int', lambda L, w: w.sum().backward(L.tensor(1)),
     TypeError, 'For complex or floating point outputs'),
    ('view-bad', lambda L, w: L.ones(6).view(4),
     RuntimeError, "shape '[4]' is invalid for input"),
    ('transpose-0d', lambda L, w: L.tensor(1.0).transpose(0, 1),
     IndexError, 'transpose: Dimension out of range (expected'),
    ('linear-shapes', lambda L, w: L.nn.functional.linear(L.ones(2,3), L.ones(4,5)),
     RuntimeError, 'mat1 and mat2 shapes cannot be'),
    ('cat-empty-list', lambda L, w: L.cat([]),
     ValueError, 'expected a non-empty list of Tensors'),
    ('stack-empty-list', lambda L, w: L.stack([]),
     RuntimeError, 'expected a non-empty list of Tensors'),
    ('expand-fewer-dims', lambda L, w: L.ones(2,3).expand(3),
     RuntimeError, 'expand: the number of sizes provided'),
]

DIFFERENT_ON_PURPOSE = {
    "to-bad-dtype": "PyTorch built without CUDA fails an assertion; jitgrad, whose CUDA is numba's, says there is no driver (RuntimeError, as PyTorch built with CUDA does)",
    "backward-create-graph-int": "PyTorch accepts an integer gradient for a float output; jitgrad asks for "
                                 "the output's dtype (TypeError), as it does for any mismatch",
}


def _leaf(lib):
    w = lib.ones(3, requires_grad=True)
    w.grad = lib.full((3,), 7.0)
    return w


def _raised(lib, case):
    w = _leaf(lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            case(lib, w)
        except Exception as error:  # noqa: BLE001 - the exception is what is compared
            return error, w
    return None, w


def test_the_catalogue_has_sixty_cases_or_more():
    assert len(CASES) >= 60 and len({name for name, *_ in CASES}) == len(CASES)


@pytest.mark.parametrize("case,kind,fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_misuse_raises_pytorchs_exception_and_changes_nothing(case, kind, fragment):
    error, w = _raised(jg, case)
    assert isinstance(error, kind), f"expected {kind.__name__}, got {error!r}"
    assert re.search(re.escape(fragment), str(error)), str(error)
    assert w.tolist() == [1.0, 1.0, 1.0] and w.grad.tolist() == [7.0, 7.0, 7.0]


@pytest.mark.skipif(torch is None, reason="compares with PyTorch, which is not installed: pip install torch==2.13.0")
@pytest.mark.parametrize("name,case", [(c[0], c[1]) for c in CASES], ids=[c[0] for c in CASES])
def test_pytorch_raises_the_same_exception(name, case):
    ours, _ = _raised(jg, case)
    theirs, _ = _raised(torch, case)
    if name in DIFFERENT_ON_PURPOSE:
        assert type(ours) is not type(theirs), f"{name} now matches PyTorch: take it off DIFFERENT_ON_PURPOSE"
        return
    assert theirs is not None and type(ours) is type(theirs), f"jitgrad: {ours!r}; PyTorch: {theirs!r}"
