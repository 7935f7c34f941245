"""Which memory each value of a kernel lives in.

``plan_memory`` gives each value a buffer and hands a buffer on once the value's last reader has run;
it does not know views, which read their base's buffer for as long as they are read, nor the order the
kernel runs its units in. ``plan_buffers`` checks its plan against both. The caller allocates the
outputs and passes them in; ``shared_memory`` says which outputs would still share memory with
something the caller does not own (an argument, a constant) or with another output: those, and the
views, are copied into what the caller passed.
"""
from __future__ import annotations

from typing import Any

from ...fx.node import Node, NodeKind, Opcode, tuple_item


def view_bases(order: list[list[Node]]) -> dict[Node, Node]:
    """The value whose memory each view (and each item of a multi-output op) may read."""
    base: dict[Node, Node] = {}
    for members in order:
        for node in members:
            if node.kind is NodeKind.VIEW:
                source = node.args[0]
                base[node] = base.get(source, source)
    return base


def plan_buffers(order: list[list[Node]], materialized: set[Node], outputs: set[Node],
                 own: set[Node]) -> dict[Node, str]:
    """The memory plan's buffer for each materialized value, checked against the emission order and
    views (a view keeps its base's buffer alive); a value whose planned buffer is still in use gets its
    own, and so does each value in ``own`` (an output computed straight into the caller's array)."""
    position: dict[Node, int] = {}
    for p, members in enumerate(order):
        for node in members:
            position[node] = p
    base = view_bases(order)
    last: dict[Node, int] = {}
    end = len(order)
    for members in order:
        for node in members:
            for used in node.all_input_nodes:
                root = base.get(used, used)
                last[root] = max(last.get(root, -1), position[node])
    for node in outputs:
        last[base.get(node, node)] = end
    free_after: dict[str, int] = {}
    buffers: dict[Node, str] = {}
    for members in order:
        for node in members:
            if node not in materialized or node in base:
                continue
            planned = node.meta.get("buffer", node.name)
            start = position[node]
            if node in own:
                planned = f"out_{node.name}"
            elif planned in free_after and free_after[planned] >= start:
                planned = f"{planned}_{node.name}"
            buffers[node] = planned
            free_after[planned] = max(last.get(node, start), start)
    return buffers


def _storage(node: Node, base: dict[Node, Node]) -> tuple[Any, tuple]:
    """Which memory a value's array is: the value it is a view of, and the pieces of split it is in
    (outermost first; distinct pieces of one split do not overlap). An item of an op that computes
    each output anew (max/min(dim)) is memory of its own."""
    pieces: list[tuple[Node, int]] = []
    while node in base:
        source = node.args[0]
        if node.target is tuple_item:
            if not source.target.view:
                return (source, node.args[1]), tuple(reversed(pieces))
            pieces.append((source, node.args[1]))
        node = source
    return node, tuple(reversed(pieces))


def _overlaps(a: tuple, b: tuple) -> bool:
    """Whether two pieces of one value's memory may overlap: one lies within the other."""
    return a[:len(b)] == b[:len(a)]


def shared_memory(order: list[list[Node]], outputs: list[Node]) -> list[str | None]:
    """For each output, what its memory would be shared with (``"an argument"``, ``"output %y"``),
    or None where it is the output's own. The caller owns what a call returns and may write into it,
    which must change neither the next call nor another output."""
    base = view_bases(order)
    claimed: dict[Any, list[tuple[tuple, Node]]] = {}
    owners: list[str | None] = []
    for node in outputs:
        root, pieces = _storage(node, base)
        shared = next((other for taken, other in claimed.get(root, []) if _overlaps(taken, pieces)), None)
        if shared is not None:
            owners.append(f"output %{shared.name}")
        elif isinstance(root, Node) and root.op is not Opcode.CALL_FUNCTION:
            owners.append("an argument")
        else:
            owners.append(None)
            claimed.setdefault(root, []).append((pieces, node))
    return owners
