"""``vmap``: a function of one example mapped over a batch, as ``torch.func.vmap``.

jitgrad has no batching rules: ``vmap(f)(x)`` runs ``f`` once per slice of the mapped dimension and
stacks the results. The semantics are PyTorch's (``in_dims`` and ``out_dims`` over trees, ``None``
for an argument shared by every slice, its errors for mismatched batch sizes, ``randomness``), so
code written for ``torch.func`` runs unchanged, and ``vmap(grad(f))`` gives per-sample gradients;
the cost is a Python call of ``f`` per example (and an op call per op per example) rather than one
batched op, so a batch of ``B`` costs about ``B`` unbatched calls plus a ``stack`` per output.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from ..autograd.versions import version_counter
from ..ops import movedim, select, stack
from ..random import default_generator
from ..tensor import Tensor
from .pytree import LEAF, describe, leaf_count, tree_flatten, tree_unflatten

RANDOMNESS = ("error", "different", "same")
RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                "'different' randomness flags on vmap or perform the randomness operation out of vmap")


def _name(func: Callable) -> str:
    return getattr(func, "__name__", repr(func))


def _broadcast_dims(dims: Any, spec: Any, where: str) -> list[Any]:
    """One in/out dim per leaf of ``spec``: an int or None stands for every leaf below it; a tuple,
    list or dict must match the tree's structure there (PyTorch's prefix rule)."""
    if dims is None or isinstance(dims, int):
        return [dims] * leaf_count(spec)
    if spec is LEAF or type(dims) is not spec[0] or len(dims) != len(spec[-1]) or (
            spec[0] is dict and tuple(dims) != spec[1]):
        raise ValueError(where)
    values = dims.values() if isinstance(dims, dict) else dims
    return [d for sub_dims, sub_spec in zip(values, spec[-1]) for d in _broadcast_dims(sub_dims, sub_spec, where)]


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """``func`` mapped over dimension ``in_dims`` of its positional arguments (``None``: not mapped),
    its results stacked at ``out_dims``. Runs ``func`` per slice (see the module's docstring for the
    cost). ``randomness``: ``"error"`` refuses a draw from the default generator inside ``func``,
    ``"different"`` lets each slice draw its own numbers, ``"same"`` gives every slice the same ones.
    Keyword arguments are passed to every slice unmapped, as in PyTorch."""
    if randomness not in RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if not (in_dims is None or isinstance(in_dims, (int, tuple))):
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...): expected `in_dims` to be int or a (potentially "
                         f"nested) tuple matching the structure of inputs, got: {type(in_dims)}.")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        head = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
        if isinstance(in_dims, int) or in_dims is None:
            if not isinstance(in_dims, int):
                raise ValueError(f"{head}: expected `in_dims` to be int or a (potentially nested) tuple matching "
                                 f"the structure of inputs, got: {type(in_dims)}.")
            dims_tree = (in_dims,) * len(args)
        else:
            dims_tree = in_dims
        leaves, spec = tree_flatten(args)
        dims = _broadcast_dims(dims_tree, spec, f"{head}: in_dims is not compatible with the structure of `inputs`. "
                               f"in_dims has structure {describe(tree_flatten(dims_tree)[1])} but inputs has "
                               f"structure {describe(spec)}.")
        size = _batch_size(leaves, dims, head)
        if size == 0:
            raise ValueError(f"{head}: the mapped dimension has size 0; jitgrad's vmap runs the function once "
                             "per slice (it has no batching rules), so it cannot find the shape of an empty "
                             "batch's outputs")
        slices = [tree_unflatten([_slice(t, d, i) for t, d in zip(leaves, dims)], spec) for i in range(size)]
        mapped = [version_counter(t) for t, d in zip(leaves, dims) if d is not None]
        unmapped = [version_counter(t) for t, d in zip(leaves, dims) if d is None and isinstance(t, Tensor)]
        unmapped = [c for c in unmapped if not any(c is m for m in mapped)]   # a view's sees the slices' writes
        results = _run(func, slices, kwargs, randomness, unmapped)
        return _stacked(results, out_dims, func)

    return wrapped


def _batch_size(leaves: list[Any], dims: list[Any], head: str) -> int:
    sizes = []
    for t, d in zip(leaves, dims):
        if d is None:
            continue
        if not isinstance(t, Tensor):
            raise ValueError(f"{head}: Got in_dim={d} for an input but the input is of type {type(t)}. We cannot "
                             "vmap over non-Tensor arguments, please use None as the respective in_dim")
        if not -t.dim() <= d < max(t.dim(), 0) or t.dim() == 0:
            raise ValueError(f"{head}: Got in_dim={d} for some input, but that input is a Tensor of dimensionality "
                             f"{t.dim()} so expected in_dim to satisfy -{t.dim()} <= in_dim < {t.dim()}.")
        sizes.append(t.shape[d])
    if not sizes:
        raise ValueError(f"{head}: Got in_dims={dims} for all inputs but at least one input must be batched "
                         "(its in_dim must not be None).")
    if len(set(sizes)) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0]


def _slice(t: Any, dim: Any, i: int) -> Any:
    return t if dim is None else select(t, dim, i)


def _run(func: Callable, slices: list[tuple], kwargs: dict, randomness: str, unmapped: list[list[int]]) -> list[Any]:
    """``func`` on every slice, its draws from the default generator as ``randomness`` says. The
    generator's state is kept as the array it is, not as a tensor: under ``jitgrad.compile`` a tensor
    made here and compared would be a value the trace cannot read afresh, and the call ran eagerly.
    An in-place write into an unmapped argument is refused after the first slice: run per slice, it
    would be made once per slice, where PyTorch makes it once (or refuses a batched value)."""
    results = []
    start = default_generator.peek()
    versions = [counter[0] for counter in unmapped]
    for args in slices:
        if randomness == "same":
            default_generator.set_state(start)
        before = default_generator.peek() if randomness == "error" else None
        results.append(func(*args, **kwargs))
        if before is not None and not np.array_equal(before, default_generator.peek()):
            default_generator.set_state(before)
            raise RuntimeError(RANDOM_ERROR)
        if [counter[0] for counter in unmapped] != versions:
            raise RuntimeError(f"vmap({_name(func)}, ...): the function wrote in place into an argument whose "
                               "in_dim is None. jitgrad's vmap runs it once per slice, so the write would be made "
                               "once per slice (PyTorch makes it once, or refuses a batched value): write into a "
                               "copy (x = x.clone()), or map the argument")
    return results


def _equal(a: Any, b: Any) -> bool:
    """Whether two slices' results for an ``out_dims=None`` output agree: per slice, jitgrad cannot see
    that an output depends on the batch, as PyTorch does, but it can see that it differs across it."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a.shape == b.shape and bool((a.detach() == b.detach()).all())
    return a is b or a == b


def _stacked(results: list[Any], out_dims: Any, func: Callable) -> Any:
    flat0, spec = tree_flatten(results[0])
    where = (f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
             f"structure of `outputs`. out_dims has structure {describe(tree_flatten(out_dims)[1])} but outputs has "
             f"structure {describe(spec)}.")
    dims = _broadcast_dims(out_dims, spec, where)
    flats = [tree_flatten(r)[0] for r in results]
    out = []
    for j, (first, d) in enumerate(zip(flat0, dims)):
        if d is None:
            if any(not _equal(first, f[j]) for f in flats[1:]):
                raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` can not return a BatchedTensor when "
                                 "out_dim is None")
            out.append(first)
            continue
        if not isinstance(first, Tensor):
            raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return Tensors, got type "
                             f"{type(first)}. Did you mean to set out_dims= to None for output?")
        out.append(movedim(stack([f[j] for f in flats]), 0, d) if d != 0 else stack([f[j] for f in flats]))
    return tree_unflatten(out, spec)
