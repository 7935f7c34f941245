"""``rematerialize``: a fused loop computes a cheap value again rather than reading it from memory.

After ``group_fusions``, a value one group computes and another reads is stored by the first and
loaded by the second: for large arrays, memory traffic is what such loops cost. When the reader could
compute the value itself from what it reads anyway (or from small arrays, or from one array that is
stored anyway, in place of the value), and the value's op is a few arithmetic instructions
(``OpDef.recompute``), the value is copied into the reading group (a node ``<name>_re`` with that
group's ``fusion_group``) and the reader uses the copy. Repeated until nothing changes, this follows
chains: a backward that reads ``(z - mean) / (std + eps)`` computed by the forward recomputes it from
``z``, which the forward stores anyway, and a row-broadcast value (``g / (std + eps)`` expanded to the
whole matrix) is never stored at all. A value nobody reads any more is removed.

Only values of at least ``MIN_BYTES`` are considered: smaller ones stay in cache, where reading is as
cheap as computing.
"""
from __future__ import annotations

from ..graph import Graph
from ..node import Node, NodeKind, Opcode
from .memory import value_bytes

MIN_BYTES = 1 << 20


def _large(node: Node) -> bool:
    return value_bytes(node) >= MIN_BYTES


def _stored(node: Node) -> bool:
    """Whether the value is in memory whatever this pass does: an argument, a constant, a statement's
    or reduction's result, or one read outside its group or by the output."""
    if node.kind is not NodeKind.ELEMENTWISE:
        return True
    group = node.meta.get("fusion_group")
    return any(u.op is Opcode.OUTPUT or u.meta.get("fusion_group") != group for u in node.users)


class _Group:
    def __init__(self, name: str, members: list[Node]) -> None:
        self.name = name
        self.members = members

    def reads(self) -> dict[Node, None]:
        """The large values the group's loop loads from memory, in order."""
        inside = set(self.members)
        return {i: None for m in self.members for i in m.all_input_nodes if i not in inside and _large(i)}

    def loads(self, value: Node, reads: dict[Node, None],
              known: dict[Node, set[Node] | None]) -> set[Node] | None:
        """The large arrays this group would load, beyond ``reads``, to compute ``value`` itself
        (recomputing what it can: an ``expand`` of a small array loads nothing); None if it cannot.
        ``known`` holds the answers so far: a chain that forks and joins is walked once."""
        if value in known:
            return known[value]
        known[value] = None
        if value.op is not Opcode.CALL_FUNCTION or not getattr(value.target, "recompute", False) or \
                value.kind is not NodeKind.ELEMENTWISE or value.meta.get("fusion_group") == self.name:
            return None
        loads: set[Node] = set()
        for i in value.all_input_nodes:
            if not _large(i) or i in reads:
                continue
            again = self.loads(i, reads, known)
            if again is not None and (not again or not _stored(i)):
                loads |= again
            elif _stored(i):
                loads.add(i)
            else:
                return None
        known[value] = loads
        return loads

    def candidate(self) -> tuple[Node, list[Node]] | None:
        """A value to compute here instead of reading it, and the readers it replaces: one that costs
        at most one other load, of an array that is in memory anyway."""
        reads = self.reads()
        known: dict[Node, set[Node] | None] = {}
        for value in reads:
            loads = self.loads(value, reads, known)
            if loads is not None and len(loads) <= 1:
                return value, [m for m in self.members if m in value.users]
        return None


def rematerialize(graph: Graph) -> Graph:
    record = graph.record_pass("rematerialize")
    members: dict[str, list[Node]] = {}
    for node in graph.nodes:
        name = node.meta.get("fusion_group")
        if name is not None and node.op is Opcode.CALL_FUNCTION:
            members.setdefault(name, []).append(node)
    replaced: list[Node] = []
    for name, nodes in members.items():
        group = _Group(name, nodes)
        while (found := group.candidate()) is not None:
            value, readers = found
            first = min(readers, key=graph.nodes.index)
            copy = graph.call_function(value.target, value.args, value.kwargs, dict(value.meta), before=first,
                                       name=f"{value.name}_re")
            copy.meta["fusion_group"] = name
            for reader in readers:
                reader.replace_input_with(value, copy)
            nodes.insert(nodes.index(first), copy)
            replaced.append(value)
            record.changes.append(f"{name}: computes {value.name} again ({copy.name})")
    removed: set[Node] = set()
    unread = list(dict.fromkeys(v for v in replaced if not v.users))
    while unread:  # removing one value may leave its inputs unread too
        value = unread.pop()
        if value in removed:
            continue
        inputs = value.all_input_nodes
        graph.erase_node(value)
        removed.add(value)
        unread += [i for i in inputs if not i.users and i.op is Opcode.CALL_FUNCTION]
    record.stats = {"recomputed": len(replaced), "removed": len(removed)}
    return graph
