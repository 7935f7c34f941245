"""``einsum``: Einstein summation, spelled as PyTorch's, made of registry ops.

An equation is parsed into one list of labels per operand (letters, and ``.0``, ``.1``... for the
dimensions an ellipsis stands for, aligned from the right so that they broadcast), and the output's
labels. Operands are then contracted left to right, two at a time:

- a label found in one operand only and not needed later (not in the output, not in a later operand)
  is summed away first (``sum``);
- of the labels two operands share, those needed later are batch dimensions and the others are
  contracted: the operands are permuted to ``(batch, own, contracted)`` and ``(batch, contracted,
  own)``, reshaped to three (or fewer) dimensions and multiplied (``matmul``, which picks ``dot``,
  ``mv``, ``mm`` or the batched product); with nothing to contract, the product is a broadcast ``mul``;
- the result is reshaped back to its labels (always: a view, whose ``ViewBackward0`` is the node PyTorch's
  einsum ends with too) and finally permuted into the output's order.

So an ``einsum`` has no derivative, JVP or lowering of its own: each comes from the ops it is made of.
A subscript repeated within one operand (a diagonal, ``"ii->i"``) is refused: no registry op takes a
diagonal yet. As in PyTorch, a dimension of size 1 broadcasts against the same subscript's size in
another operand.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from ..tensor import Tensor
from .arithmetic import mul
from .linalg import matmul
from .public import public
from .reductions import sum as reduce_sum
from .shape import expand, permute, reshape

Labels = list[str]


def _parse_term(text: str, start: int, what: str) -> Labels:
    """The letters of one term of ``text`` beginning at index ``start`` of the equation, an ellipsis as
    ``"..."``; ``what`` names the term in errors (``operand 0``, ``output``)."""
    labels: Labels = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == ".":
            if text[i:i + 3] != "...":
                raise RuntimeError(f"einsum(): found '.' for {what} that is not part of any ellipsis")
            if "..." in labels:
                raise RuntimeError(f"einsum(): found '.' for {what} for which an ellipsis was already found")
            labels.append("...")
            i += 3
            continue
        if char.isascii() and char.isalpha():
            labels.append(char)
        elif char != " ":
            raise RuntimeError(f"einsum(): invalid subscript given at index {start + i} in the equation string, "
                               "subscripts must be in [a-zA-Z]")
        i += 1
    return labels


def _expand_ellipsis(labels: Labels, ndim: int, k: int, span: int | None = None) -> Labels:
    """``labels`` with the ellipsis replaced by ``.0 .. .{span-1}``'s last dimensions (right-aligned)."""
    letters = len(labels) - ("..." in labels)
    if "..." not in labels:
        if letters != ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({letters}) does not match the "
                               f"number of dimensions ({ndim}) for operand {k} and no ellipsis was given")
        return labels
    if letters > ndim:
        raise RuntimeError(f"einsum(): the number of subscripts in the equation ({letters}) is more than the "
                           f"number of dimensions ({ndim}) for operand {k}")
    covered = ndim - letters
    span = covered if span is None else span
    at = labels.index("...")
    return labels[:at] + [f".{d}" for d in range(span - covered, span)] + labels[at + 1:]


def _parse(equation: str, operands: Sequence[Tensor]) -> tuple[list[Labels], Labels]:
    """Every operand's labels and the output's, checked as PyTorch checks them."""
    arrow = equation.find("->")
    left = equation if arrow < 0 else equation[:arrow]
    terms, start = [], 0
    for k, text in enumerate(left.split(",")):
        terms.append(_parse_term(text, start, f"operand {k}"))
        start += len(text) + 1
    if len(terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    span = max((t.ndim - len(labels) + 1 for t, labels in zip(operands, terms) if "..." in labels), default=0)
    inputs = [_expand_ellipsis(labels, t.ndim, k, span) for k, (t, labels) in enumerate(zip(operands, terms))]
    for k, labels in enumerate(inputs):
        repeated = sorted({label for label in labels if labels.count(label) > 1})
        if repeated:
            raise RuntimeError(f"einsum(): subscript {repeated[0]} appears more than once in operand {k}: "
                               "jitgrad's einsum does not take diagonals; index the diagonal out first")
    every = [label for labels in inputs for label in labels]
    if arrow < 0:
        ellipsis = [f".{d}" for d in range(span)]
        return inputs, ellipsis + sorted(label for label in set(every) if every.count(label) == 1
                                         and not label.startswith("."))
    output = _parse_term(equation[arrow + 2:], arrow + 2, "output")
    for label in output:
        if label != "..." and output.count(label) > 1:
            raise RuntimeError(f"einsum(): output subscript {label} appears more than once in the output")
        if label != "..." and label not in every:
            raise RuntimeError(f"einsum(): output subscript {label} does not appear in the equation for any "
                               "input operand")
    if "..." in output:
        at = output.index("...")
        output = output[:at] + [f".{d}" for d in range(span)] + output[at + 1:]
    return inputs, output


def _sizes(operands: Sequence[Tensor], inputs: list[Labels]) -> dict[str, int]:
    """Each label's size: the same in every operand, or 1 where it broadcasts."""
    sizes: dict[str, int] = {}
    for k, (t, labels) in enumerate(zip(operands, inputs)):
        for label, size in zip(labels, t.shape):
            seen = sizes.setdefault(label, size)
            if size != 1 and seen != 1 and size != seen:
                name = "..." if label.startswith(".") else label
                raise RuntimeError(f"einsum(): subscript {name} has size {size} for operand {k} which does not "
                                   f"broadcast with previously seen size {seen}")
            if seen == 1:
                sizes[label] = size   # a size of 0 broadcasts a 1 to 0, as in PyTorch
    return sizes


def _sum_away(t: Tensor, labels: Labels, needed: set[str]) -> tuple[Tensor, Labels]:
    """``t`` summed over its labels that nothing later needs."""
    dims = tuple(d for d, label in enumerate(labels) if label not in needed)
    if not dims:
        return t, labels
    return reduce_sum(t, dims), [label for label in labels if label in needed]


def _arranged(t: Tensor, labels: Labels, order: Labels) -> Tensor:
    """``t`` permuted so that its labels read ``order`` (a permutation of them)."""
    dims = tuple(labels.index(label) for label in order)
    return t if dims == tuple(range(len(dims))) else permute(t, dims)


def _grouped(t: Tensor, groups: Sequence[Labels], sizes: dict[str, int]) -> Tensor:
    """``t`` (labels in the order of ``groups``, joined) reshaped to one dimension per non-empty group."""
    shape = tuple(math.prod(sizes[label] for label in group) for group in groups if group)
    return t if tuple(t.shape) == shape else reshape(t, shape)


def _broadcast(t: Tensor, labels: Labels, shared: set[str], sizes: dict[str, int]) -> Tensor:
    """``t`` with its size-1 dimensions of ``shared`` labels expanded to their full size."""
    shape = tuple(sizes[label] if label in shared else size for label, size in zip(labels, t.shape))
    return t if shape == tuple(t.shape) else expand(t, shape)


def _contract(a: Tensor, la: Labels, b: Tensor, lb: Labels, needed: set[str],
              sizes: dict[str, int]) -> tuple[Tensor, Labels]:
    """The product of two operands summed over the labels they share and nothing later needs."""
    a, la = _sum_away(a, la, needed | set(lb))
    b, lb = _sum_away(b, lb, needed | set(la))
    shared = set(la) & set(lb)
    a, b = _broadcast(a, la, shared, sizes), _broadcast(b, lb, shared, sizes)
    actual = {**dict(zip(la, a.shape)), **dict(zip(lb, b.shape))}  # a label only one has may be 1 there
    batch = [label for label in la if label in shared and label in needed]
    summed = [label for label in la if label in shared and label not in needed]
    own_a = [label for label in la if label not in shared]
    own_b = [label for label in lb if label not in shared]
    result = batch + own_a + own_b
    if not summed:
        a = _arranged(a, la, batch + own_a)
        b = _arranged(b, lb, batch + own_b)
        if own_b:
            a = reshape(a, (*a.shape, *(1,) * len(own_b)))
        if own_a:
            b = reshape(b, (*b.shape[:len(batch)], *(1,) * len(own_a), *b.shape[len(batch):]))
        return mul(a, b), result
    a = _grouped(_arranged(a, la, batch + own_a + summed), (batch, own_a, summed), actual)
    b = _grouped(_arranged(b, lb, batch + summed + own_b), (batch, summed, own_b), actual)
    if batch and not own_a:
        a = reshape(a, (a.shape[0], 1, a.shape[1]))
    if batch and not own_b:
        b = reshape(b, (*b.shape, 1))
    product = matmul(a, b)
    return reshape(product, tuple(actual[label] for label in result)), result   # a view, as PyTorch ends


@public("function")
def einsum(equation: str, *operands: Any) -> Tensor:
    """Sums of products of ``operands``' elements named by ``equation`` (``"ij,jk->ik"``, ``"bij,bjk->bik"``,
    ``"i,j->ij"``, ``"ij->ji"``, ``"...ij,...jk"``...), as ``torch.einsum``; the operands may also come as
    one list. Built from ``sum``, ``permute``, ``reshape``, ``expand``, ``mul`` and ``matmul`` (module
    docstring), so its gradients and lowerings are theirs."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str) or not operands:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least "
                         "one operand and its subscripts list")
    for k, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): operand {k} must be a Tensor, not {type(t).__name__} (jitgrad's einsum "
                            "takes the equation string form only, not the sublist form)")
    inputs, output = _parse(equation, operands)
    sizes = _sizes(operands, inputs)
    result, labels = operands[0], inputs[0]
    for k in range(1, len(operands)):
        later = set(output).union(*inputs[k + 1:])
        result, labels = _contract(result, labels, operands[k], inputs[k], later, sizes)
    result, labels = _sum_away(result, labels, set(output))
    if labels == output and result is operands[0]:
        return permute(result, tuple(range(len(labels))))
    return _arranged(result, labels, output)


__all__ = ["einsum"]
