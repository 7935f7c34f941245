"""``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd`` and ``hessian`` as
``torch.func`` spells them: functions that take a function and give back its derivative as a function.

They run on jitgrad's reverse-mode engine (``autograd.grad``); there is no second interpreter. Each
call makes its differentiated arguments into fresh tensors that require grad, runs the function with
grad mode on and asks the engine for the gradients. What makes them compose (``grad(grad(f))``,
``jacrev(jacfwd(f))``) is ``create_graph``: a transform called inside another (``_depth``), or whose
function reads a tensor requiring grad from outside (an argument, a closed-over parameter), keeps the
graph of its derivative, so the outer one (or a loss made of it) can differentiate it in turn; at the
top level a result that reaches nothing outside is detached, as ``torch.func``'s are (``_released``).

Forward mode (``jvp``, ``jacfwd``) is the double-backward trick: ``J v`` is the derivative of the
linear map ``u -> J^T u`` with respect to ``u``, in the direction ``v``. It costs one backward with
``create_graph`` and then one backward per tangent (two where true forward mode would take one), and
it composes with the reverse-mode transforms above and below it for free.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable

from ..autograd import enable_grad, grad as autograd_grad, is_grad_enabled
from ..autograd.graph import AccumulateGrad
from ..factories import eye, zeros, zeros_like
from ..ops import reshape, stack
from ..tensor import Tensor
from .pytree import leaf_count, tree_flatten, tree_unflatten

class _Depth(threading.local):
    """How deep in transforms this thread runs, and the leaves the transforms of the current top-level
    call made for their arguments: those are inside it, every other leaf requiring grad is outside."""

    def __init__(self) -> None:
        self.value = 0
        self.fresh: list[Tensor] = []


_depth = _Depth()


class _deeper:
    """Marks the function's run as inside a transform: a transform it calls keeps its graph."""

    def __enter__(self) -> None:
        _depth.value += 1

    def __exit__(self, *exc: object) -> None:
        _depth.value -= 1


def _keeps_graph(leaves: list[Tensor]) -> bool:
    """Whether a derivative must stay differentiable: inside another transform, or of inputs that
    require grad outside (then ``torch.func``'s results carry their graph to them)."""
    return is_grad_enabled() and (_depth.value > 0 or any(t.requires_grad for t in leaves))


def _reaches_outside(trees: list[Any], leaves: list[Tensor]) -> bool:
    """Whether a tensor in ``trees`` was computed from one that requires grad outside the transform (a
    parameter the function closes over): ``torch.func``'s results then carry their graph to it, so a
    loss made of them trains it, where detached results would drop that gradient silently."""
    inner = {id(t) for t in leaves} | {id(t) for t in _depth.fresh}
    nodes, seen = [], set()
    for tree in trees:
        for t in tree_flatten(tree)[0]:
            if isinstance(t, Tensor) and t.requires_grad:
                if t.grad_fn is None and id(t) not in inner:
                    return True
                nodes.append(t.grad_fn)
    while nodes:
        node = nodes.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            if id(node.variable) not in inner:
                return True
            continue
        nodes.extend(next_node for next_node, _ in node.next_functions)
    return False


def _released(tree: Any, leaves: list[Tensor]) -> Any:
    """A top-level transform's results as ``torch.func``'s: each keeps its graph only where that reaches
    a tensor requiring grad outside the call (an argument that does, a closed-over parameter)."""
    if _depth.value > 0:
        return tree
    flat, spec = tree_flatten(tree)
    return tree_unflatten([t.detach() if isinstance(t, Tensor) and t.requires_grad and not _reaches_outside([t], leaves)
                           else t for t in flat], spec)


def _check_tensor(value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(value)}")
    return value


def _differentiable(t: Tensor, keep: bool) -> Tensor:
    """A new tensor for ``t`` that requires grad: a view of it (connected to its graph) when the outer
    graph is kept, else a detached leaf sharing its values."""
    if keep and t.requires_grad:
        return t.view(t.shape)
    leaf = t.detach().requires_grad_(True)
    _depth.fresh.append(leaf)
    return leaf


def _prepare(trees: list[Any], keep: bool) -> tuple[list[Any], list[Tensor], list[Any]]:
    """Each tree's leaves made differentiable: the new trees, their leaves in order, and the specs."""
    if _depth.value == 0:
        _depth.fresh = []
    new_trees, leaves, specs = [], [], []
    for tree in trees:
        flat, spec = tree_flatten(tree)
        flat = [_differentiable(_check_tensor(t), keep) for t in flat]
        new_trees.append(tree_unflatten(flat, spec))
        leaves += flat
        specs.append(spec)
    return new_trees, leaves, specs


def _checked_argnums(argnums: Any, count: int) -> tuple[int, ...]:
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if not nums:
        raise RuntimeError("argnums must be non-empty")
    for n in nums:
        if not isinstance(n, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        if not -count <= n < count:
            raise RuntimeError(f"Got argnum={n}, but only {count} positional inputs")
    normal = tuple(n % count for n in nums)
    if len(set(normal)) != len(normal):
        raise RuntimeError(f"argnums must be unique, got {argnums}")
    return normal


def _select(args: tuple, argnums: Any, keep_from: Callable[[list[Tensor]], bool]) -> tuple:
    """The arguments with those at ``argnums`` made differentiable: ``(args, leaves, specs, nums,
    keep)``."""
    nums = _checked_argnums(argnums, len(args))
    originals = [leaf for n in nums for leaf in tree_flatten(args[n])[0]]
    keep = keep_from([t for t in originals if isinstance(t, Tensor)])
    trees, leaves, specs = _prepare([args[n] for n in nums], keep)
    args = list(args)
    for n, tree in zip(nums, trees):
        args[n] = tree
    return tuple(args), leaves, specs, nums, keep


def _regroup(flat: list[Any], specs: list[Any], argnums: Any) -> Any:
    """Per-argument trees from one flat list; a tuple of them when ``argnums`` is a tuple."""
    trees, start = [], 0
    for spec in specs:
        count = leaf_count(spec)
        trees.append(tree_unflatten(flat[start:start + count], spec))
        start += count
    return tuple(trees) if isinstance(argnums, tuple) else trees[0]


def _fill(grads: tuple, like: list[Tensor], keep: bool) -> list[Tensor]:
    """Zeros where a leaf does not reach the output (``torch.func`` gives zeros, not None); detached
    unless the graph is kept."""
    filled = [zeros_like(t) if g is None else g for g, t in zip(grads, like)]
    return filled if keep else [g.detach() for g in filled]


def _split_aux(output: Any, has_aux: bool, api: str) -> tuple[Any, Any]:
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def _detached(tree: Any, keep: bool) -> Any:
    if keep:
        return tree
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([t.detach() if isinstance(t, Tensor) else t for t in leaves], spec)


def grad_and_value(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """``func``'s gradient with respect to the arguments at ``argnums`` (trees of tensors) and its
    value: ``(grad, value)``, or ``(grad, (value, aux))`` with ``has_aux``. ``func`` must return a
    scalar tensor (0 dimensions); a leaf it does not depend on gets zeros."""
    api = "grad_and_value(f)(*args)"

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        outer = is_grad_enabled()
        args, leaves, specs, _, keep = _select(args, argnums, _keeps_graph)
        with enable_grad(), _deeper():
            output, aux = _split_aux(func(*args, **kwargs), has_aux, api)
            keep = keep or (outer and _reaches_outside([output, aux], leaves))
            if not isinstance(output, Tensor):
                raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(output)}")
            if output.dim() != 0:
                raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with "
                                   f"{output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
            grads = (autograd_grad([output], leaves, create_graph=keep, allow_unused=True)
                     if output.requires_grad else (None,) * len(leaves))
        grads = _regroup(_fill(grads, leaves, keep), specs, argnums)
        value = output if keep else output.detach()
        return _released((grads, (value, _detached(aux, keep))) if has_aux else (grads, value), leaves)

    return wrapper


def grad(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """``func``'s gradient with respect to the arguments at ``argnums``, as ``torch.func.grad``:
    ``grad(f)(x)``, or ``(grad, aux)`` with ``has_aux``. Nests: ``grad(grad(f))`` is a second derivative."""
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        grads, value = inner(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


def _tensor_outputs(output: Any, api: str) -> tuple[list[Tensor], Any]:
    flat, spec = tree_flatten(output)
    for t in flat:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = "
                               f"{output}) and that only returns Tensors, got {type(t)}")
    return flat, spec


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(func(*primals), vjp_fn)`` (and ``aux``): ``vjp_fn(cotangents)``, with cotangents shaped as
    the output, gives the tuple of vector-Jacobian products, one tree per primal. ``vjp_fn`` may be
    called any number of times (the graph is retained)."""
    outer = is_grad_enabled()
    keep = _keeps_graph([t for p in primals for t in tree_flatten(p)[0] if isinstance(t, Tensor)])
    trees, leaves, specs = _prepare(list(primals), keep)
    with enable_grad(), _deeper():
        output, aux = _split_aux(func(*trees), has_aux, "vjp(f, *primals)")
        outs, out_spec = _tensor_outputs(output, "vjp(f, *primals)")
        keep = keep or (outer and _reaches_outside([output, aux], leaves))

    def vjp_fn(cotangents: Any) -> tuple:
        cots, cot_spec = tree_flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {cot_spec}, primal output: {out_spec}")
        for i, (c, o) in enumerate(zip(cots, outs)):
            if _check_tensor(c).shape != o.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {c.shape} and "
                                   f"output[{i}] has a shape of {o.shape}.")
        create = is_grad_enabled() and (keep or _depth.value > 0 or any(c.requires_grad for c in cots))
        pairs = [(o, c) for o, c in zip(outs, cots) if o.requires_grad]
        grads = (autograd_grad([o for o, _ in pairs], leaves, [c for _, c in pairs], retain_graph=True,
                               create_graph=create, allow_unused=True)
                 if pairs else (None,) * len(leaves))
        return _released(tuple(_regroup(_fill(grads, leaves, create), specs, tuple(range(len(primals))))), leaves)

    result = (_detached(output, keep), vjp_fn)
    return _released(result + (_detached(aux, keep),) if has_aux else result, leaves)


def _linearized(outs: list[Tensor], leaves: list[Tensor]) -> tuple[list[Tensor], list[Tensor | None]]:
    """The double-backward trick's first half: dummy cotangents ``u`` (zeros, requiring grad) and
    ``J^T u`` for every leaf (None where no output depends on it), with its graph kept."""
    us = [zeros_like(o).requires_grad_(True) for o in outs]
    pairs = [(o, u) for o, u in zip(outs, us) if o.requires_grad]
    if not pairs:
        return us, [None] * len(leaves)
    return us, list(autograd_grad([o for o, _ in pairs], leaves, [u for _, u in pairs], create_graph=True,
                                  allow_unused=True))


def _push_forward(us: list[Tensor], transposed: list[Tensor | None], tangents: list[Tensor], outs: list[Tensor],
                  keep: bool) -> list[Tensor]:
    """``J v``, one tensor per output, from ``J^T u`` (``_linearized``) and the tangents ``v``."""
    pairs = [(g, v) for g, v in zip(transposed, tangents) if g is not None and g.requires_grad]
    if not pairs:
        return [zeros_like(o) for o in outs]
    found = autograd_grad([g for g, _ in pairs], us, [v for _, v in pairs], retain_graph=True,
                          create_graph=keep, allow_unused=True)
    return _fill(found, outs, keep)


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False) -> tuple:
    """``(func(*primals), J v)`` (and ``aux``) for tangents ``v`` shaped as the primals, as
    ``torch.func.jvp``; computed by the double-backward trick (the module's docstring)."""
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    if not isinstance(tangents, tuple):
        raise RuntimeError(f"{api}: Expected tangents to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_p, p_spec = tree_flatten(primals)
    flat_t, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python structure. For "
                           f"example, if primals is a tuple of 3 tensors, tangents also must be. Got primals "
                           f"with structure {p_spec} and tangents with structure {t_spec}")
    for p, t in zip(flat_p, flat_t):
        if _check_tensor(p).shape != _check_tensor(t).shape:
            raise RuntimeError("Trying to set a forward gradient that has a different size than that of the "
                               f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} while "
                               f"the given forward gradient is of size {list(t.shape)}.")
    outer = is_grad_enabled()
    keep = _keeps_graph([t for t in flat_p + flat_t])
    trees, leaves, _ = _prepare(list(primals), keep)
    with enable_grad(), _deeper():
        output, aux = _split_aux(func(*trees), has_aux, api)
        outs, out_spec = _tensor_outputs(output, api)
        keep = keep or (outer and _reaches_outside([output, aux], leaves))
        us, transposed = _linearized(outs, leaves)
        pushed = _push_forward(us, transposed, flat_t, outs, keep)
    result = (_detached(output, keep), tree_unflatten(pushed, out_spec))
    return _released(result + (_detached(aux, keep),) if has_aux else result, leaves)


def _jacobian_tree(blocks: list[list[Tensor]], out_spec: Any, specs: list[Any], argnums: Any) -> Any:
    """``blocks[output][input leaf]`` as PyTorch nests a Jacobian: the output's tree, each leaf of it
    the inputs' tree (a tuple of trees when ``argnums`` is a tuple)."""
    return tree_unflatten([_regroup(row, specs, argnums) for row in blocks], out_spec)


def jacrev(func: Callable, argnums: Any = 0, *, has_aux: bool = False, chunk_size: int | None = None,
           _preallocate_and_copy: bool = False) -> Callable:
    """The Jacobian of ``func`` with respect to the arguments at ``argnums`` by reverse mode: one
    backward per output element (``chunk_size`` is accepted for PyTorch's signature). Each block has
    the shape ``output.shape + input.shape``."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        outer = is_grad_enabled()
        args, leaves, specs, _, keep = _select(args, argnums, _keeps_graph)
        with enable_grad(), _deeper():
            output, aux = _split_aux(func(*args, **kwargs), has_aux, "jacrev(f, ...)(*args)")
            outs, out_spec = _tensor_outputs(output, "jacrev(f, ...)(*args)")
            keep = keep or (outer and _reaches_outside([output, aux], leaves))
            blocks = [_reverse_rows(o, leaves, keep) for o in outs]
        jac = _jacobian_tree(blocks, out_spec, specs, argnums)
        return _released((jac, _detached(aux, keep)) if has_aux else jac, leaves)

    return wrapper


def _reverse_rows(out: Tensor, leaves: list[Tensor], keep: bool) -> list[Tensor]:
    n = out.numel()
    if n == 0 or not out.requires_grad:
        return [_zeros_block(out, leaf) for leaf in leaves]
    basis = eye(n, dtype=out.dtype)
    rows = [_fill(autograd_grad([out], leaves, [reshape(basis[k], out.shape)], retain_graph=True,
                                create_graph=keep, allow_unused=True), leaves, keep) for k in range(n)]
    return [reshape(stack([row[j] for row in rows]), tuple(out.shape) + tuple(leaf.shape))
            for j, leaf in enumerate(leaves)]


def _zeros_block(out: Tensor, leaf: Tensor) -> Tensor:
    return zeros(tuple(out.shape) + tuple(leaf.shape), dtype=leaf.dtype)


def jacfwd(func: Callable, argnums: Any = 0, has_aux: bool = False, *, randomness: str = "error") -> Callable:
    """The Jacobian of ``func`` with respect to the arguments at ``argnums`` a column at a time: one
    Jacobian-vector product (``jvp``'s double-backward trick) per input element. Blocks are shaped
    ``output.shape + input.shape``, as ``jacrev``'s."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        outer = is_grad_enabled()
        args, leaves, specs, _, keep = _select(args, argnums, _keeps_graph)
        with enable_grad(), _deeper():
            output, aux = _split_aux(func(*args, **kwargs), has_aux, "jacfwd(f, ...)(*args)")
            outs, out_spec = _tensor_outputs(output, "jacfwd(f, ...)(*args)")
            keep = keep or (outer and _reaches_outside([output, aux], leaves))
            us, transposed = _linearized(outs, leaves)
            columns = [_forward_columns(us, transposed, j, leaf, outs, keep) for j, leaf in enumerate(leaves)]
        blocks = [[columns[j][i] for j in range(len(leaves))] for i in range(len(outs))]
        jac = _jacobian_tree(blocks, out_spec, specs, argnums)
        return _released((jac, _detached(aux, keep)) if has_aux else jac, leaves)

    return wrapper


def _forward_columns(us: list[Tensor], transposed: list[Tensor | None], j: int, leaf: Tensor,
                     outs: list[Tensor], keep: bool) -> list[Tensor]:
    """Every output's block for input leaf ``j``: its columns ``J e_k``, stacked last, reshaped."""
    n = leaf.numel()
    if n == 0 or transposed[j] is None:
        return [_zeros_block(o, leaf) for o in outs]
    basis = eye(n, dtype=leaf.dtype)
    only = [None] * len(transposed)
    only[j] = transposed[j]
    cols = [_push_forward(us, only, [None if i != j else reshape(basis[k], leaf.shape) for i in range(len(only))],
                          outs, keep) for k in range(n)]
    return [reshape(stack([c[i] for c in cols], dim=o.dim()), tuple(o.shape) + tuple(leaf.shape))
            for i, o in enumerate(outs)]


def hessian(func: Callable, argnums: Any = 0) -> Callable:
    """The Hessian of a scalar ``func`` with respect to the arguments at ``argnums``:
    ``jacfwd(jacrev(func, argnums), argnums)``, as PyTorch composes it."""
    return jacfwd(jacrev(func, argnums), argnums)
