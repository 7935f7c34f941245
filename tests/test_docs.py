"""Every Python block in README.md and docs/*.md runs as written."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)

SNIPPETS = [(page, i, code) for page in PAGES for i, code in enumerate(BLOCK.findall(page.read_text()))]


@pytest.mark.parametrize("page,index,code", SNIPPETS,
                         ids=[f"{p.relative_to(ROOT)}[{i}]" for p, i, _ in SNIPPETS])
def test_snippet_runs(page, index, code, capsys):
    exec(compile(code, f"{page.name}[{index}]", "exec"), {"__name__": "__doc_snippet__"})


def test_there_are_snippets():
    assert len(SNIPPETS) >= 5
