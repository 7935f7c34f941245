"""``hoist_numbers``: takes the arithmetic on Python numbers out of a graph, into a Python prelude.

A graph whose Python numbers are inputs (``fx.numbers``: a learning rate, a step count) holds the
arithmetic on them as ``NumberOp`` nodes (``lr * 0.5``, ``0.9 ** step``). No backend needs to lower
them: they are a few Python operations per call, and computing them in Python gives exactly the
numbers eager mode gives. So the pass moves them into a ``NumberPrelude``, a generated Python function
from the graph's number placeholders to the numbers its tensor ops read, and each of those becomes a
placeholder of its own, after the existing ones. What is left for a backend is tensor ops, with
Python numbers only as placeholders.

The comparisons the function branched on (``fx.numbers``: predicates) are number ops read by no other
node; the prelude's ``holds`` computes them from a call's numbers and says whether each comes out as
it did in the trace, which is what the compiled function checks before it runs the program (in the
trace's order, stopping at the first that does not, as eager mode would take another branch there).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..codegen import ConstantPool, literal
from ..graph import Graph
from ..node import Node, Opcode
from ..numbers import is_number_op


@dataclass
class NumberPrelude:
    """``prelude(*numbers)`` takes the values of the number placeholders named ``inputs`` and returns
    those of the placeholders named ``outputs``; ``holds(*numbers)`` whether the comparisons named in
    ``checks`` (with the user's lines in ``lines``) come out as ``expected``; ``source`` defines both."""

    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    source: str = ""
    checks: list[str] = field(default_factory=list)
    expected: tuple[bool, ...] = ()
    lines: list[str | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._fn: Callable[..., tuple] | None = None
        self._first_change: Callable[..., int] | None = None
        if self.outputs or self.checks:
            namespace: dict[str, Any] = {}
            exec(compile(self.source, "<jitgrad.fx number prelude>", "exec"), namespace)  # noqa: S102
            self._fn = namespace["prelude"] if self.outputs else None
            self._first_change = namespace["first_change"] if self.checks else None

    def __call__(self, *numbers: Any) -> tuple:
        return self._fn(*numbers) if self._fn is not None else ()

    def holds(self, *numbers: Any) -> bool:
        return self._first_change is None or self._first_change(*numbers) < 0

    def first_change(self, *numbers: Any) -> int:
        """The index of the first comparison that comes out otherwise than in the trace; -1 for none."""
        return -1 if self._first_change is None else self._first_change(*numbers)

    def outcomes(self, *numbers: Any) -> list[str]:
        """The first comparison that comes out otherwise than in the trace, with the user's line that
        made it (the later ones eager mode would not reach as the trace did)."""
        index = self.first_change(*numbers)
        if index < 0:
            return []
        was = self.expected[index]
        return [f"a comparison made at {self.lines[index] or 'a line of the function'} ({was} when traced, "
                f"{not was} now)"]

    def __bool__(self) -> bool:
        return bool(self.outputs)


def _is_number_node(node: Node) -> bool:
    return node.op is Opcode.CALL_FUNCTION and is_number_op(node.target)


def hoist_numbers(graph: Graph, predicates: list[tuple[Node, bool, str | None]] = ()) -> NumberPrelude:
    """Moves ``graph``'s number ops (edited in place) into the returned prelude; ``predicates``: the
    comparisons the traced function branched on (``Tracer.predicates``), among those ops."""
    record = graph.record_pass("hoist_numbers")
    hoisted = [n for n in graph.nodes if _is_number_node(n)]
    if not hoisted:
        return NumberPrelude()
    hoisted, replaced = _without_repeats(graph, hoisted, record)
    predicates = _distinct(predicates, replaced)
    inputs = [p.name for p in graph.placeholders if p.meta.get("python_number")]
    pool = ConstantPool()
    body = [f"    {n.name} = {n.target.source([literal(a, pool, n.name) for a in n.args])}" for n in hoisted]
    outputs: list[str] = []
    results: list[str] = []
    for node in hoisted:
        readers = [u for u in node.users if not _is_number_node(u)]
        if not readers:
            continue
        meta = {k: node.meta[k] for k in ("shape", "dtype", "python_number")}  # an input, of no phase
        placeholder = graph.placeholder(node.name, meta)
        for user in readers:
            user.replace_input_with(node, placeholder)
        outputs.append(placeholder.name)
        results.append(node.name)
        record.changes.append(f"{node.name} computed in Python, read as {placeholder.name}")
    for node in reversed(hoisted):
        graph.erase_node(node)
    returned = "".join(f"{r}, " for r in results)
    source = f"def prelude({', '.join(inputs)}):\n" + "\n".join(body) + f"\n    return ({returned})\n"
    if predicates:
        source += "\n\n" + _first_change_source(inputs, hoisted, body, predicates)
    return NumberPrelude(inputs, outputs, source, [node.name for node, _, _ in predicates],
                         tuple(value for _, value, _ in predicates), [line for _, _, line in predicates])


def _argument_key(value: object) -> object:
    return ("node", value.name) if isinstance(value, Node) else (type(value), repr(value))


def _without_repeats(graph: Graph, hoisted: list[Node], record) -> tuple[list[Node], dict[str, Node]]:
    """The number ops, each computation once (the repeats erased, their users reading the first),
    and the first by each repeat's name: an optimizer's ``1 - beta1`` is written once per parameter,
    and each copy would be an input of the kernel and a line of every call's prelude."""
    first: dict[tuple, Node] = {}
    kept, replaced = [], {}
    for node in hoisted:
        key = (node.target.name, tuple(_argument_key(a) for a in node.args))
        same = first.setdefault(key, node)
        if same is node:
            kept.append(node)
            continue
        node.replace_all_uses_with(same)
        graph.erase_node(node)
        replaced[node.name] = same
        record.changes.append(f"{node.name} is {same.name}")
    return kept, replaced


def _distinct(predicates: list[tuple[Node, bool, str | None]],
              replaced: dict[str, Node]) -> list[tuple[Node, bool, str | None]]:
    """The predicates on the nodes ``_without_repeats`` kept, each node once (its first line)."""
    seen: set[str] = set()
    kept = []
    for node, value, line in predicates:
        node = replaced.get(node.name, node)
        if node.name not in seen:
            seen.add(node.name)
            kept.append((node, value, line))
    return kept


def _first_change_source(inputs: list[str], hoisted: list[Node], body: list[str],
                         predicates: list[tuple[Node, bool, str | None]]) -> str:
    """``first_change(*numbers)``: the index of the first predicate that comes out otherwise, or -1.
    It computes the number ops in the trace's order and returns at the first such predicate, so it
    computes what eager mode would have computed up to that comparison and nothing after it (a
    ``1 / (1 - m)`` the function computes only when ``m < 1``)."""
    outcome = {node.name: (i, value) for i, (node, value, _) in enumerate(predicates)}
    last = max(hoisted.index(node) for node, _, _ in predicates)
    lines = [f"def first_change({', '.join(inputs)}):"]
    for node, line in zip(hoisted[:last + 1], body):
        lines.append(line)
        if node.name in outcome:
            index, value = outcome[node.name]
            lines.append(f"    if {'not ' if value else ''}{node.name}:\n        return {index}")
    return "\n".join(lines) + "\n    return -1\n"


__all__ = ["NumberPrelude", "hoist_numbers"]
