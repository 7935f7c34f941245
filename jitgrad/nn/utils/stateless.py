"""Running a module with other tensors in place of its parameters and buffers (PyTorch's
``torch.nn.utils.stateless``; ``jitgrad.func.functional_call`` is the name users reach for).

Functional transforms differentiate functions of their arguments, but a model reads its weights from
itself; swapping the given tensors into the module's tables for one call, and back afterwards (on an
error too), turns ``model(x)`` into a function of ``(params, x)`` without copying the model.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence

from ...tensor import Tensor
from ..modules.module import Module


def _merged(parameters_and_buffers: Mapping[str, Tensor] | Sequence[Mapping[str, Tensor]]) -> dict[str, Tensor]:
    if isinstance(parameters_and_buffers, Mapping):
        return dict(parameters_and_buffers)
    merged: dict[str, Tensor] = {}
    repeated: list[str] = []
    for mapping in parameters_and_buffers:
        repeated += [k for k in mapping if k in merged]
        merged.update(mapping)
    if repeated:
        raise ValueError(f"{sorted(set(repeated))} appeared in multiple dictionaries; behavior of functional "
                         "call is ambiguous")
    return merged


def _tied_names(module: Module) -> dict[str, list[str]]:
    """For each name of a parameter or buffer shared under several names, all of those names."""
    by_tensor: dict[int, list[str]] = {}
    for name, t in [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]:
        by_tensor.setdefault(id(t), []).append(name)
    return {name: names for names in by_tensor.values() if len(names) > 1 for name in names}


def _with_ties(module: Module, given: dict[str, Tensor]) -> dict[str, Tensor]:
    """``given`` with each tensor also standing for the names tied to its name (PyTorch's
    ``tie_weights=True``); two different tensors given for tied names are an error."""
    tied = _tied_names(module)
    out = dict(given)
    for name, value in given.items():
        for other in tied.get(name, ()):
            if other in given and given[other] is not value:
                raise ValueError(f"functional_call got multiple values for keys {sorted(tied[name])}, which are "
                                 "tied. Consider using tie_weights=False")
            out[other] = value
    return out


def _check_strict(module: Module, given: dict[str, Tensor]) -> None:
    names = {n for n, _ in module.named_parameters(remove_duplicate=False)}
    names |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
    missing, unexpected = sorted(names - set(given)), sorted(set(given) - names)
    if missing or unexpected:
        lines = []
        if unexpected:
            lines.append("\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + ".")
        if missing:
            lines.append("\tMissing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
        raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n" + "\n".join(lines))


@contextmanager
def reparametrized(module: Module, tensors: dict[str, Tensor]) -> Iterator[None]:
    """Inside the block, ``module``'s parameter or buffer at each dotted name is the given tensor (a
    name that is neither becomes a plain attribute); afterwards every one is put back, even on error."""
    undo: list[tuple[Any, ...]] = []
    try:
        for name, value in tensors.items():
            owner_name, _, attr = name.rpartition(".")
            owner = module.get_submodule(owner_name)
            table = (owner._parameters if attr in owner._parameters
                     else owner._buffers if attr in owner._buffers else None)
            if table is None:
                missing = object()
                undo.append((owner.__dict__, attr, owner.__dict__.get(attr, missing), missing))
                owner.__dict__[attr] = value
            else:
                undo.append((table, attr, table[attr], None))
                table[attr] = value
        yield
    finally:
        for table, attr, old, missing in reversed(undo):
            if missing is not None and old is missing:
                del table[attr]
            else:
                table[attr] = old


def functional_call(module: Module, parameters_and_buffers: Mapping[str, Tensor] | Sequence[Mapping[str, Tensor]],
                    args: Any = None, kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the given tensors (a dict by dotted name, or a tuple of dicts)
    in place of its parameters and buffers, as ``torch.func.functional_call``. Names left out keep the
    module's own tensors (unless ``strict``); with ``tie_weights`` a tensor given for one of several
    names of a shared weight stands for all of them. The module is unchanged afterwards."""
    given = _merged(parameters_and_buffers)
    if tie_weights:
        given = _with_ties(module, given)
    if strict:
        _check_strict(module, given)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with reparametrized(module, given):
        return module(*args, **(kwargs or {}))
