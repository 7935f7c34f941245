"""Modules that hold other modules: ``Sequential`` (called in order), ``ModuleList`` and ``ModuleDict``
(held, so that their parameters are the model's, but called by the owner's own ``forward``).

A Python list or dict of layers assigned to a module is a plain attribute: ``parameters()`` and
``state_dict()`` would not see the layers in it. These containers register each item as a child
under its index or key, which is what makes ``layers.0.weight`` a key of the state dict.
"""
from __future__ import annotations

import operator
from collections import OrderedDict
from typing import Any, Iterable, Iterator, Mapping

from .module import Module


def _index(index: Any, length: int) -> int:
    """``index`` as a position in ``range(length)``, negative indices counted from the end."""
    index = operator.index(index)
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range")
    return index % length


def _checked(module: Any) -> Module:
    if not isinstance(module, Module):
        raise TypeError(f"{type(module).__name__} is not a Module subclass")
    return module


class _IndexedModules(Module):
    """What ``Sequential`` and ``ModuleList`` share: children named "0", "1"... kept numbered from 0
    as items are inserted and deleted."""

    def _renumber(self, modules: Iterable[Module]) -> None:
        self._modules.clear()
        for i, module in enumerate(modules):
            self._modules[str(i)] = module

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, index: int) -> Any:
        items = list(self._modules.values())
        return items[_index(index, len(items))]

    def __setitem__(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items[_index(index, len(items))] = _checked(module)
        self._renumber(items)

    def __delitem__(self, index: int | slice) -> None:
        items = list(self._modules.values())
        if isinstance(index, slice):
            del items[index]
        else:
            del items[_index(index, len(items))]
        self._renumber(items)

    def append(self, module: Module) -> "_IndexedModules":
        self.add_module(str(len(self)), _checked(module))
        return self

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, _checked(module))
        self._renumber(items)

    def extend(self, modules: Iterable[Module]) -> "_IndexedModules":
        if not isinstance(modules, Iterable):
            raise TypeError(f"{type(self).__name__}.extend should be called with an iterable, but got "
                            f"{type(modules).__name__}")
        for module in modules:
            self.append(module)
        return self

    def __iadd__(self, modules: Iterable[Module]) -> "_IndexedModules":
        return self.extend(modules)


class Sequential(_IndexedModules):
    """``Sequential(a, b, c)(x)`` is ``c(b(a(x)))``; ``Sequential(OrderedDict(name=module))`` names
    the children."""

    def __init__(self, *modules: Module) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self.add_module(name, _checked(module))
        else:
            for i, module in enumerate(modules):
                self.add_module(str(i), _checked(module))

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        return super().__getitem__(index)

    def __add__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return Sequential(*self, *other)

    def forward(self, input: Any) -> Any:
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(_IndexedModules):
    """A list of modules whose parameters belong to the owner; its repr folds runs of equal layers
    into ``(0-2): 3 x Linear(...)``, as PyTorch's does."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return ModuleList(list(self._modules.values())[index])
        return super().__getitem__(index)

    def __add__(self, other: Iterable[Module]) -> "ModuleList":
        return ModuleList([*self, *other])

    def __repr__(self) -> str:
        reprs = [repr(module) for module in self]
        if not reprs:
            return "ModuleList()"
        lines, start = [], 0
        for end in range(1, len(reprs) + 1):
            if end == len(reprs) or reprs[end] != reprs[start]:
                label = f"({start})" if end - start == 1 else f"({start}-{end - 1}): {end - start} x"
                text = reprs[start].replace("\n", "\n  ")
                lines.append(f"{label}: {text}" if end - start == 1 else f"{label} {text}")
                start = end
        return "ModuleList(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules whose parameters belong to the owner, in insertion order."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def clear(self) -> None:
        self._modules.clear()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        if not isinstance(modules, Iterable):
            raise TypeError(f"ModuleDict.update should be called with an iterable of key/value pairs, but got "
                            f"{type(modules).__name__}")
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in pairs:
            self[key] = module


__all__ = ["ModuleDict", "ModuleList", "Sequential"]
