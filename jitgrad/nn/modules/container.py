"""Modules that hold other modules: ``Sequential`` (called in order), ``ModuleList`` and ``ModuleDict``
(held, so that their parameters are the model's, but called by the owner's own ``forward``), and
``ParameterList`` and ``ParameterDict``, which hold parameters the same way.

A Python list or dict of layers assigned to a module is a plain attribute: ``parameters()`` and
``state_dict()`` would not see the layers in it. These containers register each item as a child
under its index or key, which is what makes ``layers.0.weight`` a key of the state dict.
"""
from __future__ import annotations

import operator
from collections import OrderedDict
from typing import Any, Iterable, Iterator, Mapping

from ...tensor import Tensor
from ..parameter import Parameter
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


def _as_parameter(value: Any) -> Any:
    """A tensor that is not a ``Parameter`` becomes one, as PyTorch's parameter containers convert it."""
    return Parameter(value) if isinstance(value, Tensor) and not isinstance(value, Parameter) else value


def _describe(value: Any) -> str:
    if isinstance(value, Tensor):
        size = "x".join(str(n) for n in value.shape)
        return f"Parameter containing: [jitgrad.{value.dtype.name} of size {size}]"
    return f"Object of type: {type(value).__name__}"


class ParameterList(Module):
    """A list of parameters registered under their indices (``"0"``, ``"1"``...), so that they are the
    owner's: ``parameters()``, ``state_dict()`` and optimizers see them. A plain tensor appended
    becomes a ``Parameter``."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(self._size))

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return ParameterList(list(self)[index])
        return getattr(self, str(_index(index, self._size)))

    def __setitem__(self, index: int, value: Any) -> None:
        setattr(self, str(_index(index, self._size)), _as_parameter(value))

    def append(self, value: Any) -> "ParameterList":
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> "ParameterList":
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got {type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def __iadd__(self, values: Iterable[Any]) -> "ParameterList":
        return self.extend(values)

    def extra_repr(self) -> str:
        return "\n".join(f"({i}): {_describe(value)}" for i, value in enumerate(self))


class ParameterDict(Module):
    """A dict of parameters registered under their keys, in insertion order; a plain tensor becomes a
    ``Parameter``."""

    def __init__(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self) -> Iterable[str]:
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        return [(key, self[key]) for key in self._keys]

    def values(self) -> Iterable[Any]:
        return [self[key] for key in self._keys]

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def update(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
        if not isinstance(parameters, Iterable):
            raise TypeError(f"ParametersDict.update should be called with an iterable of key/value pairs, but got "
                            f"{type(parameters).__name__}")
        pairs = parameters.items() if isinstance(parameters, Mapping) else parameters
        for key, value in pairs:
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(f"({key}): {_describe(value)}" for key, value in self.items())


__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]
