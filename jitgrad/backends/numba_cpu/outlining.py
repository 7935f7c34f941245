"""Each fusion group's loop nest becomes a function of its own, one per distinct loop nest.

numba's cost is LLVM optimising a function, and that grows faster than the function: W4's unrolled
RNN step, forward and backward as one function of a hundred small loops, took a minute to compile. As
separate functions each loop nest is optimised alone, and two groups whose code is the same up to the
names of their variables (every step of an unrolled loop, every layer of the same width and dtype)
call one function, compiled once.

A group's function takes what its code reads and does not assign (arrays, sizes, numbers) in order of
first use, and writes its results into the arrays it is given; the kernel calls it with the group's
own variables. The comments (IR lines) of the first group with that code stay in its body.
"""
from __future__ import annotations

import ast

# Names the generated code takes from its module or from builtins, never from a variable.
GLOBALS = frozenset({"np", "math", "numba", "prange", "tanh_float32", "range", "min", "max", "abs", "bool",
                     "float", "int", "len", "True", "False", "None"})


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
    """Collects the group functions of one kernel and writes the calls to them."""

    def __init__(self, fastmath: bool) -> None:
        self.fastmath = fastmath
        self.definitions: list[str] = []
        self._by_form: dict[str, str] = {}

    def call(self, name: str, lines: list[str], parallel: bool) -> str:
        """The kernel's line calling a function that runs ``lines`` (statements of the kernel's body,
        indented one level); ``name`` names the function if this code is new."""
        code = "\n".join(line[4:] for line in lines)
        params = parameters(code)
        form = canonical_form(code) + f"|parallel={parallel}"
        function = self._by_form.get(form)
        if function is None:
            function = self._by_form[form] = name
            self.definitions += [f"@numba.njit(nogil=True, fastmath={self.fastmath}, parallel={parallel})",
                                 f"def {function}({', '.join(params)}):", *lines, "", ""]
        return f"    {function}({', '.join(params)})"


__all__ = ["GLOBALS", "Outliner", "canonical_form", "parameters"]
