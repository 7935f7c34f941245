"""The containers an optimizer keeps its settings and state in, shaped so that ``jitgrad.compile``
can read them afresh at every call of a compiled training step.

``ParamGroup`` is a dict (PyTorch's parameter groups are dicts) that names, in ``runtime_numbers``,
the settings a compiled step takes as run-time inputs rather than guarded constants: the learning
rate and the momenta (SGD's ``momentum``, Adam's ``betas``), which schedulers change between steps.
``ParamState`` is the per-parameter state mapping (PyTorch's ``defaultdict(dict)`` keyed by tensors)
with its entries held in lists, so that the compiler's walk can name each state tensor by a position
(``opt.state.entries[0]['exp_avg']``); no guard can name a dict key that is a tensor.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping
from typing import Any, Iterator

from ..tensor import Tensor


class ParamGroup(dict):
    """A parameter group; ``jitgrad.compile`` reads the keys in ``runtime_numbers`` (when they hold an
    int or a float, or a tuple of them) as run-time inputs of a compiled step: a new value runs the
    same program."""

    __slots__ = ()
    runtime_numbers = frozenset({"lr", "momentum", "betas"})


class ParamState(MutableMapping):
    """``state[param]``: the parameter's dict, made empty on first access (as a ``defaultdict(dict)``);
    keyed by the parameter's identity, as PyTorch's tensors hash by identity."""

    def __init__(self, items: Any = ()) -> None:
        self.params: list[Tensor] = []
        self.entries: list[dict[str, Any]] = []
        self.positions: dict[int, int] = {}
        for param, value in items.items() if isinstance(items, Mapping) else items:
            self[param] = value

    def __copy__(self) -> "ParamState":
        return ParamState(zip(self.params, self.entries))

    def __deepcopy__(self, memo: dict[int, Any]) -> "ParamState":
        """Keyed by the copies of the parameters (``positions`` holds identities, which a copy changes)."""
        return ParamState([(copy.deepcopy(p, memo), copy.deepcopy(v, memo)) for p, v in zip(self.params, self.entries)])

    def __getitem__(self, param: Tensor) -> dict[str, Any]:
        position = self.positions.get(id(param))
        if position is None:
            self[param] = {}
            position = self.positions[id(param)]
        return self.entries[position]

    def __setitem__(self, param: Tensor, value: dict[str, Any]) -> None:
        position = self.positions.get(id(param))
        if position is None:
            self.positions[id(param)] = len(self.params)
            self.params.append(param)
            self.entries.append(value)
        else:
            self.entries[position] = value

    def __delitem__(self, param: Tensor) -> None:
        position = self.positions.pop(id(param))
        del self.params[position], self.entries[position]
        self.positions = {id(p): i for i, p in enumerate(self.params)}

    def __contains__(self, param: object) -> bool:
        return id(param) in self.positions

    def get(self, param: Tensor, default: Any = None) -> Any:
        position = self.positions.get(id(param))
        return default if position is None else self.entries[position]

    def __iter__(self) -> Iterator[Tensor]:
        return iter(list(self.params))

    def __len__(self) -> int:
        return len(self.params)

    def __repr__(self) -> str:
        return f"ParamState({len(self)} parameters)"


__all__ = ["ParamGroup", "ParamState"]
