"""No layer reaches into another layer's private names: a call from ``@jitgrad.compile`` down to a
kernel (compile → fx → ops → autograd → tensor, and the backends) goes through public names only.

The rule, checked on the source of every module of jitgrad with ``ast``:

- A *folder* is a top-level package of jitgrad (``autograd/``, ``compile/``, ``fx/``...) or a top-level
  module (``tensor.py``, ``dtypes.py``...). A private name (``_x``, not ``__x__``) belongs to the folders
  that define it: as a module-level name, a class's method or attribute, a ``__slots__`` entry, a
  dataclass field, or an attribute assigned through ``self`` or ``cls``.
- A module may use ``obj._x`` (read, write or delete, also through ``getattr``/``setattr``/``hasattr``)
  or ``from ... import _x`` only when ``_x`` belongs to its own folder, or to no folder of jitgrad (a
  library's own, such as numba's). A subclass reading its base's private slots (``self._next_edges``
  in a Node defined elsewhere) is a reach too: the base offers public accessors for that.
- Tensor's data model is shared: the fields in ``Tensor.__slots__`` and ``Tensor._make`` are the record
  every layer built on tensors reads and writes on its hot path (the engine, every op, the tracer, a
  compiled call's inputs and outputs), as PyTorch's layers share ``TensorImpl``. Tensor's public
  properties are the user's surface, with checks the layers must not trigger: ``.grad`` warns on a
  non-leaf, ``.numpy()`` refuses a tensor that requires grad, ``.data`` makes a new tensor.
- Attaching a history is not shared: only tensor.py, autograd/ and ops/ write a tensor's ``_grad_fn``,
  ``_output_nr`` or ``_requires_grad``. A node becomes the backward of its outputs through
  ``autograd.graph.set_history`` (registry ops and compiled functions alike), and ops move a history
  onto a tensor written in place; compile/ and fx/ never set one by hand.

``ast`` knows no types, so a name is judged by who defines it: one defined in the reader's own folder
as well as in another passes. ``ALLOWED`` lists the few reaches that are the owner's own business,
each with its reason; an entry no longer needed fails ``test_every_allowed_reach_is_still_there``.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import pytest

import jitgrad
from jitgrad.tensor import Tensor

ROOT = Path(jitgrad.__file__).parent
TENSOR_DATA_MODEL = frozenset(Tensor.__slots__) | {"_make"}
HISTORY = frozenset({"_grad_fn", "_output_nr", "_requires_grad"})
HISTORY_OWNERS = frozenset({"tensor", "autograd", "ops"})

ALLOWED = {
    # A non-leaf tensor's hooks and retain_grad live on its grad_fn, under its output number, as in
    # PyTorch: Tensor.register_hook and Tensor.retain_grad are the public face of these Node methods,
    # which exist for them alone.
    ("tensor.py", "_register_tensor_pre_hook"): "a tensor's own hooks, kept on its grad_fn",
    ("tensor.py", "_retain_grad"): "a tensor's own retain_grad, kept on its grad_fn",
    # Lending a caller's tensor to a trace takes its whole state away and gives it back exactly
    # (fx/borrowing.py): a history saved and restored, not a node recorded.
    ("fx/borrowing.py", "_grad_fn"): "a lent tensor's history, restored when the trace ends",
    ("fx/borrowing.py", "_output_nr"): "a lent tensor's history, restored when the trace ends",
}


@dataclass(frozen=True)
class Reach:
    path: str     # relative to the jitgrad package
    line: int
    name: str
    why: str

    def __str__(self) -> str:
        return f"jitgrad/{self.path}:{self.line}: {self.name}: {self.why}"


def parse_package() -> dict[str, ast.Module]:
    return {p.relative_to(ROOT).as_posix(): ast.parse(p.read_text(), str(p)) for p in sorted(ROOT.rglob("*.py"))}


@pytest.fixture(scope="module")
def package() -> dict[str, ast.Module]:
    """jitgrad's modules parsed once for the module's tests (seconds of parsing and walking each time)."""
    return parse_package()


@pytest.fixture(scope="module")
def package_reaches(package: dict[str, ast.Module]) -> list[Reach]:
    """The reaches of jitgrad as it is, found once for the two tests that read them."""
    return reaches(package)


def folder(path: str) -> str:
    first = path.split("/")[0]
    return first.removesuffix(".py")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _names_defined_by(statement: ast.stmt) -> Iterator[str]:
    """The names a module-level or class-level statement defines (``__slots__`` entries included)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield statement.name
    elif isinstance(statement, (ast.Import, ast.ImportFrom)):
        yield from (alias.asname for alias in statement.names if alias.asname)
    elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        for target in targets:
            for node in ast.walk(target):
                if isinstance(node, ast.Name):
                    yield node.id
                    if node.id == "__slots__" and statement.value is not None:
                        yield from (c.value for c in ast.walk(statement.value)
                                    if isinstance(c, ast.Constant) and isinstance(c.value, str))


def _defined_names(tree: ast.Module) -> Iterator[str]:
    for statement in tree.body:
        yield from _names_defined_by(statement)
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        for statement in cls.body:
            yield from _names_defined_by(statement)
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                    and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                yield node.attr


def owners(trees: dict[str, ast.Module]) -> dict[str, set[str]]:
    """Each private name defined in jitgrad, with the folders defining it."""
    found: dict[str, set[str]] = defaultdict(set)
    for path, tree in trees.items():
        for name in _defined_names(tree):
            if _private(name):
                found[name].add(folder(path))
    return found


def _uses(node: ast.AST) -> Iterator[tuple[str, bool]]:
    """The private names ``node`` uses as attributes or imports, each with whether it writes them."""
    if isinstance(node, ast.Attribute) and _private(node.attr):
        yield node.attr, not isinstance(node.ctx, ast.Load)
    elif isinstance(node, ast.ImportFrom):
        yield from ((alias.name, False) for alias in node.names if _private(alias.name))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) >= 2 \
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr") \
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str) \
            and _private(node.args[1].value):
        yield node.args[1].value, node.func.id in ("setattr", "delattr")


def reaches(trees: dict[str, ast.Module], checked: Iterable[str] | None = None) -> list[Reach]:
    """Every use of a private name that breaks the rule of the module docstring, in the modules of
    ``checked`` (every module of ``trees`` by default; the names' owners are found in all of them)."""
    belongs = owners(trees)
    found = []
    for path in trees if checked is None else checked:
        tree = trees[path]
        here = folder(path)
        for node in ast.walk(tree):
            for name, writes in _uses(node):
                defined_in = belongs.get(name, set())
                if defined_in and here not in defined_in and name not in TENSOR_DATA_MODEL:
                    found.append(Reach(path, node.lineno, name, f"private to {', '.join(sorted(defined_in))}"))
                if writes and name in HISTORY and here not in HISTORY_OWNERS:
                    found.append(Reach(path, node.lineno, name, "a history attached outside autograd.graph."
                                                                "set_history (or an op's own rebasing)"))
    return found


def test_no_module_reaches_into_another_folders_private_names(package_reaches):
    found = [str(r) for r in package_reaches if (r.path, r.name) not in ALLOWED]
    assert not found, "private names used across folders:\n" + "\n".join(found)


def test_every_allowed_reach_is_still_there(package_reaches):
    used = {(r.path, r.name) for r in package_reaches}
    stale = sorted(set(ALLOWED) - used)
    assert not stale, f"ALLOWED entries no longer needed (remove them): {stale}"


EXAMPLE = '''\
class CompiledBackward(Node):
    def apply(self, grads, needed):
        return [None] * len(self._next_edges)
def record(node, out, tracer):
    out._grad_fn = node
    return out._data, tracer._nodes, getattr(node, "_input_metadata")
'''


def test_the_check_finds_the_reaches_of_an_example(package):
    """What the rule flags in a module of compile/: a base class's slot read through ``self``, a
    history set by hand, a tracer's and a node's internals; not the tensor's array."""
    trees = {**package, "compile/example.py": ast.parse(EXAMPLE)}
    found = {(r.line, r.name) for r in reaches(trees, ["compile/example.py"])}
    assert found == {(3, "_next_edges"), (5, "_grad_fn"), (6, "_nodes"), (6, "_input_metadata")}
