"""Fusion groups with the same loop nest share one function.

numba's cost is LLVM optimising a function, and that grows faster than the function: W4's unrolled
RNN step, forward and backward as one function of a hundred small loops, took a minute to compile.
Groups whose code is the same up to the names of their variables (every step of an unrolled loop,
every layer of the same width and dtype) become one function, compiled and optimised once, that the
kernel calls once per group.

Such a function takes what its code reads and does not assign (arrays, sizes, numbers) in order of
first use, and writes its results into the arrays it is given; the kernel calls it with each group's
own variables. The comments (IR lines) of the first group with that code stay in its body.
"""
from __future__ import annotations

import ast

from .imports import KERNEL_IMPORTS
from .numba_options import decorator

# Names the generated code takes from its module or from builtins, never from a variable.
GLOBALS = frozenset({"np", "math", "numba", "prange", "range", "min", "max", "abs", "bool", "float", "int", "len",
                     "sum", "True", "False", "None", *(name for names in KERNEL_IMPORTS.values() for name in names)})


def _names_in_order(tree: ast.AST) -> list[ast.Name]:
    names = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in GLOBALS]
    return sorted(names, key=lambda n: (n.lineno, n.col_offset))


def parameters(code: str) -> list[str]:
    """The variables ``code`` reads but never assigns, in order of first use: what it needs passed in."""
    names = _names_in_order(ast.parse(code))
    assigned = {n.id for n in names if isinstance(n.ctx, ast.Store)}
    ordered: list[str] = []
    for n in names:
        if n.id not in assigned and n.id not in ordered:
            ordered.append(n.id)
    return ordered


def canonical_form(code: str) -> str:
    """``code`` with every variable renamed by order of first use and comments dropped: equal for two
    loop nests that compile to the same function."""
    tree = ast.parse(code)
    renamed: dict[str, str] = {}
    for n in _names_in_order(tree):
        n.id = renamed.setdefault(n.id, f"v{len(renamed)}")
    return ast.dump(tree)


class Outliner:
    """Collects the group loop nests of one kernel; ``resolve`` then writes a loop nest that appears
    more than once (up to names) as one function and calls to it, and any other in place: a function
    of its own costs numba more than the same loops inline (W1's two big loops compile in 5 s inline,
    7 s outlined), so only sharing pays."""

    def __init__(self, fastmath: bool) -> None:
        self.fastmath = fastmath
        self.definitions: list[str] = []
        self.inline_parallel = False  # a group left inline has a prange loop: the kernel needs parallel
        self._groups: list[tuple[str, list[str], bool, str, list[str]]] = []

    def add(self, name: str, lines: list[str], parallel: bool) -> str:
        """Records a group's loop nest (statements of the kernel's body, indented one level); returns
        the line that stands for it in the body until ``resolve``."""
        code = "\n".join(line[4:] for line in lines)
        form = canonical_form(code) + f"|parallel={parallel}"
        self._groups.append((name, lines, parallel, form, parameters(code)))
        return f"{_MARK}{len(self._groups) - 1}"

    def resolve(self, body: list[str]) -> list[str]:
        """``body`` with each group's mark replaced by its loops or by a call of its shared function
        (whose definition goes to ``definitions``)."""
        counts: dict[str, int] = {}
        for *_, form, _params in self._groups:
            counts[form] = counts.get(form, 0) + 1
        functions: dict[str, str] = {}
        out: list[str] = []
        for line in body:
            mark = line.lstrip(" ")
            if not mark.startswith(_MARK):
                out.append(line)
                continue
            pad = line[:len(line) - len(mark)]  # a group inside a loop's body is indented further
            name, lines, parallel, form, params = self._groups[int(mark[len(_MARK):])]
            if counts[form] == 1:
                out += [pad + group_line for group_line in lines]
                self.inline_parallel |= parallel
                continue
            if form not in functions:
                functions[form] = name
                self.definitions += [decorator(self.fastmath, parallel),
                                     f"def {name}({', '.join(params)}):", *lines, "", ""]
            out.append(f"{pad}    {functions[form]}({', '.join(params)})")
        return out


_MARK = "\x00group "


__all__ = ["GLOBALS", "Outliner", "canonical_form", "parameters"]
