"""Every Python block in README.md and docs/*.md runs as written, and prints what its comments show.

A ``print(...)`` line whose ``# comment`` starts with a literal value (``tensor(...)``, ``<...>``, a
list, tuple, dict, string, number, ``None``) must print that value; ``...`` in the comment stands for
any text (addresses, elided output), whitespace is ignored, and prose after the value (``: why``,
``, why``) is not compared. Comments in words (``# the gradient``) are not checked.
"""
from __future__ import annotations

import builtins
import io
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)

SNIPPETS = [(page, i, code) for page in PAGES for i, code in enumerate(BLOCK.findall(page.read_text()))]


@pytest.mark.parametrize("page,index,code", SNIPPETS,
                         ids=[f"{p.relative_to(ROOT)}[{i}]" for p, i, _ in SNIPPETS])
def test_snippet_runs(page, index, code, capsys):
    name = f"{page.name}[{index}]"
    printed = []  # (line number, text) of each print from the snippet itself

    def recording_print(*args, **kwargs):
        if "file" not in kwargs and sys._getframe(1).f_code.co_filename == name:
            text = io.StringIO()
            builtins.print(*args, **kwargs, file=text)
            printed.append((sys._getframe(1).f_lineno, text.getvalue()))
        builtins.print(*args, **kwargs)

    exec(compile(code, name, "exec"), {"__name__": "__doc_snippet__", "print": recording_print})
    shown = shown_values(code)
    for line, text in printed:
        if line in shown:
            assert printed_as_shown(text, shown[line]), f"{name} line {line} printed {text!r}, shows {shown[line]!r}"


LITERAL = re.compile(r"(tensor\(|<|\(|\[|\{|'|\"|None\b|True\b|False\b|-?\d+(\.\d*)?(e-?\d+)?(?![\w²]))")


def shown_values(code: str) -> dict[int, str]:
    """Line number -> comment, for the print lines whose comment starts with a literal value."""
    shown = {}
    for number, line in enumerate(code.splitlines(), start=1):
        found = re.match(r"\s*print\(.*\)\s+# (.*)$", line)
        if found and LITERAL.match(found.group(1)):
            shown[number] = found.group(1)
    return shown


def printed_as_shown(text: str, comment: str) -> bool:
    """The printed text is the comment, or the comment up to a ``: ``/``, ``/``; `` before prose."""
    text = re.sub(r"\s+", "", text)
    cuts = [m.start() for m in re.finditer(r"[:,;] ", comment)] + [len(comment)]
    for cut in cuts:
        pattern = ".*?".join(re.escape(re.sub(r"\s+", "", piece)) for piece in comment[:cut].split("..."))
        if re.fullmatch(pattern, text, re.DOTALL):
            return True
    return False


def test_printed_values_are_checked():
    """The check above is not vacuous: the pages show printed values, and a wrong one is caught."""
    assert sum(len(shown_values(code)) for _, _, code in SNIPPETS) >= 10
    assert printed_as_shown("tensor([5.])\n", "tensor([5.]): 2 + 3 summed")
    assert printed_as_shown("<AddBackward0 object at 0x7f>\n", "<AddBackward0 object at ...>")
    assert not printed_as_shown("tensor([6.])\n", "tensor([5.]): 2 + 3 summed")


def test_there_are_snippets():
    assert len(SNIPPETS) >= 5
