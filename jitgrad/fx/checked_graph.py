"""``CheckedGraph``: a trace checked against an earlier trace of the same call while it runs, node by node.

``jitgrad.compile`` traces every call twice and compares the two graphs as they print: a value the
function gets where no guard sees it (``random.random()``, a counter) shows as a difference, and the
function then runs eagerly (``compile/capture.py``). The second trace is only compared, so it need
not build a graph: a tracer given a ``CheckedGraph`` of the first trace's graph asks it for each node
as usual, and gets the first trace's node at the same place once that node is found to print as the
node asked for would. The quick comparisons (opcode, name, the target itself, arguments by
``printing.args_alike``, metadata) make no node, and a call's shape rule is not asked: the first
trace's metadata is checked against the value the op returned (``match_call``; the first trace
checked its rule against its value). Where they cannot tell (a float argument, an object), the node
asked for is made, printed and compared with the first trace's line, which is what deciding by the
text means; so the check is exactly the text's, node by node, and never weaker. Placeholders and the
other nodes are matched each in the order they are made, as a graph lists them.

A difference is kept in ``difference`` (the two lines, as a comparison of the texts would name them)
and raised as ``NotAlike``; once one is found, every later request raises it again, so that traced
code that catches the exception cannot hide it. Constants are kept under the first trace's names,
for the caller to compare their values as it compares a full trace's.
"""
from __future__ import annotations

from operator import is_
from typing import Any, Iterator

from ..tensor import Tensor
from .graph import Graph, tensor_meta
from .node import Node, Opcode, tuple_item
from .printing import args_alike, format_node, meta_alike
from .tracer import agrees


class NotAlike(Exception):
    """The checked trace asked for a node that prints otherwise than the first trace's (the message
    names both lines)."""


class CheckedGraph(Graph):
    """Stands for the graph of a trace of the call that made ``reference`` (see the module docstring).
    Reading it (``nodes``, ``placeholders``, ``len``) gives the nodes matched so far; ``alike`` says
    whether every node was matched. It answers what a tracer and ``jitgrad.compile``'s capture ask of a
    graph, no more: it is not for passes, printing or ``lint``."""

    def __init__(self, reference: Graph) -> None:
        super().__init__()
        self.reference = reference
        self._expected_placeholders: list[Node] = []
        self._expected_others: list[Node] = []
        for node in reference._nodes:  # one walk of a long trace's nodes, not one per kind
            (self._expected_placeholders if node.op is Opcode.PLACEHOLDER else self._expected_others).append(node)
        self._placeholders_matched = 0
        self._others_matched = 0
        self.difference: str | None = None

    # ---- what a tracer reads back ----------------------------------------------------------------------
    @property
    def nodes(self) -> tuple[Node, ...]:
        return tuple(self._expected_placeholders[:self._placeholders_matched]
                     + self._expected_others[:self._others_matched])

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return self._placeholders_matched + self._others_matched

    @property
    def placeholders(self) -> list[Node]:
        return self._expected_placeholders[:self._placeholders_matched]

    @property
    def alike(self) -> bool:
        """Every node of the reference matched, in order, and nothing else asked for."""
        return self.difference is None and self._placeholders_matched == len(self._expected_placeholders) \
            and self._others_matched == len(self._expected_others)

    # ---- matching -----------------------------------------------------------------------------------
    def _next(self, opcode: Opcode, hint: str) -> tuple[Node | None, str]:
        """The reference's next node of this kind (None past its end), and the name the node asked for
        gets: the graph's own naming, fed the same hints in the same order (the output is always
        ``output``)."""
        if self.difference is not None:
            raise NotAlike(self.difference)
        if opcode is Opcode.PLACEHOLDER:
            expected, at = self._expected_placeholders, self._placeholders_matched
        else:
            expected, at = self._expected_others, self._others_matched
        name = hint if opcode is Opcode.OUTPUT else self.unique_name(hint)
        return (expected[at] if at < len(expected) else None), name

    def _matched(self, node: Node) -> Node:
        if node.op is Opcode.PLACEHOLDER:
            self._placeholders_matched += 1
        else:
            self._others_matched += 1
        return node

    def _by_text(self, expected: Node | None, opcode: Opcode, name: str, target: Any, args: tuple, kwargs: dict,
                 meta: dict[str, Any]) -> Node:
        """Where the quick comparisons could not tell: the node asked for, printed, against the
        reference's line. Alike, the reference's node stands for it; otherwise the difference is kept
        and raised, as the two traces' texts would show it."""
        asked = Node(self, name, opcode, target, args, kwargs, meta)
        try:
            line = format_node(asked)
        finally:
            asked.args, asked.kwargs = (), {}  # no longer among its inputs' users (the reference's nodes)
        if expected is not None and expected.op is opcode and format_node(expected) == line:
            return self._matched(expected)
        self.difference = f"{format_node(expected)!r} against {line!r}" if expected is not None else \
            f"nothing against {line!r}"
        raise NotAlike(self.difference)

    @staticmethod
    def _meta_alike(node: Node, meta: dict[str, Any]) -> bool:
        expected = node.meta
        return list(meta) == list(expected) and all(meta_alike(meta[k], expected[k]) for k in meta)

    def placeholder(self, name: str, meta: dict[str, Any]) -> Node:
        expected, name = self._next(Opcode.PLACEHOLDER, name)
        if expected is not None and expected.name == name and self._meta_alike(expected, meta):
            return self._matched(expected)
        return self._by_text(expected, Opcode.PLACEHOLDER, name, name, (), {}, meta)

    def get_attr(self, value: Tensor, name: str = "_tensor_constant", before: Node | None = None,
                 meta: dict[str, Any] | None = None) -> Node:
        if before is not None:  # a trace appends; a pass inserts (and works on a real graph)
            raise TypeError("a checked graph matches a trace's nodes in order: nothing is inserted")
        expected, name = self._next(Opcode.GET_ATTR, name)
        meta = {**tensor_meta(value), **(meta or {})}
        if expected is not None and expected.op is Opcode.GET_ATTR and expected.name == name \
                and self._meta_alike(expected, meta):
            node = self._matched(expected)
        else:
            node = self._by_text(expected, Opcode.GET_ATTR, name, name, (), {}, meta)
        self.constants[node.target] = value  # its value is compared by the caller
        return node

    def call_function(self, target: Any, args: tuple, kwargs: dict | None = None,
                      meta: dict[str, Any] | None = None, before: Node | None = None,
                      name: str | None = None) -> Node:
        if before is not None:
            raise TypeError("a checked graph matches a trace's nodes in order: nothing is inserted")
        kwargs, meta = kwargs or {}, dict(meta or {})
        expected, name = self._call(target, args, name)
        if self._call_alike(expected, name, target, args, kwargs) and self._meta_alike(expected, meta):
            return self._matched(expected)
        return self._by_text(expected, Opcode.CALL_FUNCTION, name, target, args, kwargs, meta)

    def match_call(self, target: Any, args: tuple, kwargs: dict, value: Any, phase: dict[str, Any]) -> Node:
        """``Tracer.call``'s check: a call of ``target`` that returned ``value``, made where ``phase``
        holds (``Tracer._phase``: ``phase`` and ``no_grad``, nothing else). Its node would hold its
        rule's shape and dtype, which a full trace checks against ``value``, then ``phase``: the
        reference's must be those."""
        expected, name = self._call(target, args, None)
        if self._call_alike(expected, name, target, args, kwargs):
            held = expected.meta
            if len(held) == 2 + len(phase) and held.get("phase") == phase.get("phase") \
                    and held.get("no_grad") == phase.get("no_grad") and agrees(held, value):
                return self._matched(expected)
        return self._by_text(expected, Opcode.CALL_FUNCTION, name, target, args, kwargs,
                             {**tensor_meta(value), **phase})

    def _call(self, target: Any, args: tuple, name: str | None) -> tuple[Node | None, str]:
        if name is None:
            name = f"{args[0].name}_{args[1]}" if target is tuple_item else target.name
        return self._next(Opcode.CALL_FUNCTION, name)

    @staticmethod
    def _call_alike(expected: Node | None, name: str, target: Any, args: tuple, kwargs: dict) -> bool:
        """The quick comparison of a call: arguments that are the reference's own objects (its nodes,
        constants of the traced code) print as they do, whatever they are; others by ``args_alike``."""
        if expected is None or expected.op is not Opcode.CALL_FUNCTION or expected.name != name \
                or expected.target is not target:
            return False
        held, held_kwargs = expected.args, expected.kwargs
        if not (len(args) == len(held) and all(map(is_, args, held)) or args_alike(tuple(args), held)):
            return False
        return (not kwargs and not held_kwargs) or args_alike(kwargs, held_kwargs)

    def skip(self, others: int, placeholders: int, made: list[Node], names: dict[str, int]) -> bool:
        """Takes ``made``, the nodes a backward call made in the reference from where it had ``others``
        nodes other than placeholders and ``placeholders`` placeholders, as matched without being asked
        for (``backward_calls.py``), and the reference's names after them; the constants among them
        keep the reference's values. False, with nothing done, where this graph is elsewhere."""
        at = self._others_matched
        if self.difference is not None or at != others or self._placeholders_matched != placeholders \
                or self._expected_others[at:at + len(made)] != made:
            return False
        self._others_matched += len(made)
        self._names = dict(names)
        for node in made:
            if node.op is Opcode.GET_ATTR:
                self.constants[node.target] = self.reference.constants[node.target]
        return True

    def output(self, value: Any) -> Node:
        expected, name = self._next(Opcode.OUTPUT, "output")
        if expected is not None and expected.op is Opcode.OUTPUT and args_alike(value, expected.args[0]):
            return self._matched(expected)
        return self._by_text(expected, Opcode.OUTPUT, name, "output", (value,), {}, {})

__all__ = ["CheckedGraph", "NotAlike"]
