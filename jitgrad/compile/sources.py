"""Sources: where a value a compiled function reads lives, so that every call can read it afresh.

A source is a root the compiled function can always get at (a positional or keyword argument, a cell
of a closure, an entry of a module's globals, a default argument) followed by steps: an attribute, a
sequence item, a dict key. ``W`` captured by a closure is ``Source("cell", cell, "W")``; the weight of
the first layer of a model held by a global is ``Source("global", module_globals, "model", (("attr",
"layers"), ("item", 0), ("attr", "weight")))``. Holding the cell or the globals dict, not the value,
is what lets a call see a rebinding (``W = new_tensor``) as well as an in-place change.

``reader`` turns a list of sources into one generated Python function that reads them all: a call
of a compiled function pays one function call for its free variables, not a walk.
"""
from __future__ import annotations

import types
from typing import Any, Callable, Sequence

ROOT_KINDS = ("arg", "kwarg", "cell", "global", "default", "kwdefault", "held")


class Source:
    """``root`` is one of ``ROOT_KINDS``; ``holder`` the object the root is read from (the cell, the
    globals dict, the function whose defaults these are, or for ``"held"`` the value itself: the
    compiled callable when it is a bound method or an object; None for arguments); ``key`` the argument's
    position or name, the variable's name, or the default's position; ``steps`` a tuple of
    ``("attr", name)``, ``("item", index)`` or ``("key", dict_key)``. Sources compare by the holder's
    identity, so two cells holding equal values stay two sources."""

    __slots__ = ("root", "holder", "key", "steps", "_identity")

    def __init__(self, root: str, holder: Any, key: Any, steps: tuple = ()) -> None:
        if root not in ROOT_KINDS:
            raise ValueError(f"unknown source root {root!r}")
        self.root, self.holder, self.key, self.steps = root, holder, key, tuple(steps)
        self._identity = (root, id(holder), key, self.steps)

    def attr(self, name: str) -> "Source":
        return Source(self.root, self.holder, self.key, (*self.steps, ("attr", name)))

    def item(self, index: int) -> "Source":
        return Source(self.root, self.holder, self.key, (*self.steps, ("item", index)))

    def entry(self, key: Any) -> "Source":
        return Source(self.root, self.holder, self.key, (*self.steps, ("key", key)))

    def parent(self) -> "Source | None":
        """The source of the container this one reads an item, entry or attribute of (None at a root)."""
        return Source(self.root, self.holder, self.key, self.steps[:-1]) if self.steps else None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Source) and self._identity == other._identity

    def __hash__(self) -> int:
        return hash(self._identity)

    # ---- reading ------------------------------------------------------------------------------------
    def read(self, args: tuple = (), kwargs: dict | None = None) -> Any:
        value = _root_value(self.root, self.holder, self.key, args, kwargs or {})
        for kind, key in self.steps:
            value = getattr(value, key) if kind == "attr" else value[key]
        return value

    def expression(self, holder_name: str) -> str:
        """Python source reading this source, with the holder bound to ``holder_name`` and the call's
        arguments to ``args`` and ``kwargs``."""
        return self.root_expression(holder_name) + _steps_text(self.steps)

    def root_expression(self, holder_name: str) -> str:
        """Python source reading this source's root (``expression`` without the steps)."""
        return {"arg": f"args[{self.key}]", "kwarg": f"kwargs[{self.key!r}]",
                "cell": f"{holder_name}.cell_contents", "global": f"{holder_name}[{self.key!r}]",
                "default": f"{holder_name}.__defaults__[{self.key}]",
                "kwdefault": f"{holder_name}.__kwdefaults__[{self.key!r}]", "held": holder_name}[self.root]

    # ---- writing (replaying a side effect) ----------------------------------------------------------
    def store(self, value: Any, args: tuple = (), kwargs: dict | None = None) -> None:
        """Puts ``value`` where this source reads from (the last step, or the root itself)."""
        if not self.steps:
            if self.root == "cell":
                self.holder.cell_contents = value
            elif self.root == "global":
                self.holder[self.key] = value
            else:
                raise TypeError(f"cannot rebind {self.describe()}")
            return
        parent = Source(self.root, self.holder, self.key, self.steps[:-1]).read(args, kwargs)
        kind, key = self.steps[-1]
        if kind == "attr":
            setattr(parent, key, value)
        else:
            parent[key] = value

    # ---- naming -------------------------------------------------------------------------------------
    def describe(self, parameter_names: Sequence[str] = ()) -> str:
        """How a user would write it: ``W`` (closure), ``model.layers[0].weight`` (global), ``params[1]``
        (argument), with what the root is: ``closure variable 'W'``, ``global 'model.layers[0]'``..."""
        if self.root == "arg":
            base = parameter_names[self.key] if self.key < len(parameter_names) else f"args[{self.key}]"
        elif self.root == "held":
            base = "self" if isinstance(self.holder, types.MethodType) else type(self.holder).__name__
        else:
            base = str(self.key)
        text = base + "".join(f".{k}" if kind == "attr" else f"[{k!r}]" for kind, k in self.steps)
        what = {"arg": "argument", "kwarg": "keyword argument", "cell": "closure variable", "global": "global",
                "default": "default argument", "kwdefault": "default argument", "held": "attribute"}[self.root]
        if self.root == "default":
            text = f"#{self.key}" + text[len(base):]
        return f"{what} '{text}'"

    def placeholder_name(self, parameter_names: Sequence[str] = ()) -> str:
        """A readable identifier for the graph input this source feeds (``model_layers_0_weight``)."""
        if self.root == "arg":
            base = parameter_names[self.key] if self.key < len(parameter_names) else f"arg{self.key}"
        elif self.root == "default":
            base = f"default{self.key}"
        elif self.root == "held":
            base = "self"
        else:
            base = str(self.key)
        return "_".join([base, *(str(k) for _, k in self.steps)])

    def __repr__(self) -> str:
        return f"<Source {self.describe()}>"


def _root_value(root: str, holder: Any, key: Any, args: tuple, kwargs: dict) -> Any:
    if root == "arg":
        return args[key]
    if root == "kwarg":
        return kwargs[key]
    if root == "cell":
        return holder.cell_contents
    if root == "global":
        return holder[key]
    if root == "default":
        return holder.__defaults__[key]
    if root == "kwdefault":
        return holder.__kwdefaults__[key]
    return holder


def _steps_text(steps: tuple) -> str:
    return "".join(f".{k}" if kind == "attr" else f"[{k!r}]" for kind, k in steps)


def source_of_path(path: tuple) -> Source:
    """The source of an argument leaf, from ``pytree.call_leaf_paths``."""
    (root, key), *steps = path
    return Source(root, None, key, tuple(("item", k) if kind == "item" else ("key", k) for kind, k in steps))


READ_ERRORS = (AttributeError, KeyError, IndexError, TypeError, ValueError)


def reader(entries: Sequence[tuple[Source, str]], helpers: dict[str, Any]) -> Callable[[tuple, dict], tuple | None]:
    """One generated function ``read(args, kwargs)`` returning, for each ``(source, template)``, the
    template with ``{0}`` replaced by the expression reading the source (``"len({0})"``; ``helpers``
    are the functions templates call), or None when any source cannot be read any more (an attribute
    deleted, a list shortened): the caller then takes its slow path, which says what changed.

    A step of a training loop reads hundreds of sources down a few paths (``model._modules['0']``,
    then its class, its ``__dict__``, its parameters...): each container two or more sources read
    through is read once into a local, as hand-written code would, where every source walked its
    whole path (an Adam step's 212 free values: most of the call's time went to those walks)."""
    holders: dict[int, str] = {}
    namespace: dict[str, Any] = {"READ_ERRORS": READ_ERRORS, **helpers}
    paths = []
    for source, template in entries:
        name = ""
        if source.holder is not None:
            name = holders.get(id(source.holder))
            if name is None:
                name = holders[id(source.holder)] = f"h{len(holders)}"
                namespace[name] = source.holder
        paths.append((source.root_expression(name), source.steps, template))
    uses: dict[tuple, int] = {}
    for root, steps, _ in paths:
        for k in range(len(steps) + 1):
            prefix = (root, steps[:k])
            uses[prefix] = uses.get(prefix, 0) + 1
    locals_of: dict[tuple, str] = {}

    def read_text(root: str, steps: tuple) -> str:
        for k in range(len(steps), -1, -1):
            local = locals_of.get((root, steps[:k]))
            if local is not None:
                return local + _steps_text(steps[k:])
        return root + _steps_text(steps)
    lines, parts = [], []
    for root, steps, template in paths:
        for k in range(len(steps) + 1):   # a container's local before those of what it holds
            prefix = (root, steps[:k])
            if uses[prefix] > 1 and prefix not in locals_of and (k or "[" in root or "." in root):
                lines.append(f"        v{len(locals_of)} = {read_text(root, steps[:k])}\n")
                locals_of[prefix] = f"v{len(locals_of)}"
        parts.append(template.format(read_text(root, steps)))
    body = "(" + "".join(f"{p}, " for p in parts) + ")"
    code = (f"def read(args, kwargs):\n    try:\n{''.join(lines)}        return {body}\n"
            f"    except READ_ERRORS:\n        return None\n")
    exec(compile(code, "<jitgrad.compile source reader>", "exec"), namespace)  # noqa: S102 - our own source
    return namespace["read"]


__all__ = ["READ_ERRORS", "ROOT_KINDS", "Source", "reader", "source_of_path"]
