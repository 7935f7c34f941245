"""``group_fusions``: marks groups of nodes that can run as one loop nest.

Elementwise nodes (``node.kind``, from the op's registry entry; with broadcasting: an input of a
smaller shape is read with a stride of 0, and ``expand`` is such a read) over the same output shape
share a loop; a reduction can end the loop nest of its input (its loop runs over the input's shape)
and closes the group, since what reads its smaller result needs a new loop. A node joins a group
only when no path leaves the group and comes back to the node, so the groups themselves stay in
dependency order. The grouping is greedy in graph order: a node joins the first group of its inputs
it can join, and merges into it the other open groups of its inputs with the same loop that do not
depend on it (``add(cos(x), mul(e, w))``: one loop).

The result is ``meta["fusion_group"]`` on every elementwise and reduction node (shown in the
printout), for a backend to lower each group to one loop nest. Nodes do not move: ``plan_memory``
puts each group's members side by side, in the order the groups run (``schedule.py``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..graph import Graph
from ..node import Node, NodeKind


@dataclass(eq=False)
class FusionGroup:
    name: str
    loop_shape: tuple[int, ...]
    closed: bool = False
    members: list[Node] = field(default_factory=list)
    merged_into: "FusionGroup | None" = None
    upstream: set["FusionGroup"] = field(default_factory=set)  # groups its members' inputs depend on

    def find(self) -> "FusionGroup":
        """The group this one now belongs to, after merges."""
        group = self
        while group.merged_into is not None:
            group = group.merged_into
        return group


def _loop_shape(node: Node) -> tuple[int, ...] | None:
    """The iteration space of the node's loop, or None when it does not fuse."""
    kind = node.kind
    if kind is NodeKind.ELEMENTWISE:
        return node.meta["shape"]
    if kind is NodeKind.REDUCTION and isinstance(node.args[0], Node):
        return node.args[0].meta["shape"]
    return None


def _meets(groups, seen: set, pending: list, other: set) -> bool:
    """One step of a side of ``_Grouping.depends_on``'s search: whether one of ``groups`` (as merged) is
    one the other side has seen; the new ones are this side's to visit."""
    for group in groups:
        group = group.find()
        if group in other:
            return True
        if group not in seen:
            seen.add(group)
            pending.append(group)
    return False


class _Grouping:
    """The groups so far, and for each node the nearest groups it depends on: its own, or for a node
    outside any group, those of its inputs. What lies further up is found through ``upstream``; keeping
    these sets to the nearest groups keeps each question linear in the groups it visits (sets of every
    group upstream made the pass quadratic: 2 s for W4's unrolled RNN).

    Whether a node depends on a group is searched from both ends (``readers``: the groups whose
    ``upstream`` holds a group, the same links the other way): from the node upwards alone, every
    group of the program before it was walked where the group asked about is a recent one, which made
    the pass quadratic again on what stays unrolled (9 s for an LSTM-like step over 800 steps); from
    the group downwards alone, the same where it is an old one (W4 unrolled)."""

    def __init__(self) -> None:
        self.group_of: dict[Node, FusionGroup] = {}
        self.reaches: dict[Node, set[FusionGroup]] = {}
        self.groups: list[FusionGroup] = []
        self.readers: dict[FusionGroup, list[FusionGroup]] = {}  # group -> groups it was added upstream of
        self.absorbed: dict[FusionGroup, list[FusionGroup]] = {}  # group -> the groups merged into it

    def group(self, node: Node) -> FusionGroup | None:
        group = self.group_of.get(node)
        return group.find() if group is not None else None

    def depends_on(self, node: Node, group: FusionGroup) -> bool:
        """Whether ``node`` needs ``group`` to have run: through its inputs, or through a group it
        needs, which runs as a whole and so needs everything any of its members needs. Searched from
        both ends at once, a step at a time on the side with fewer groups pending, until the two meet
        or one side has seen all it reaches: upwards from the node's nearest groups, downwards from
        ``group`` through the groups that read it."""
        up = {g.find() for g in self.reaches[node]}
        if group in up:
            return True
        down = {group}
        up_pending, down_pending = list(up), [group]
        while up_pending and down_pending:
            if len(up_pending) <= len(down_pending):
                if _meets(up_pending.pop().upstream, up, up_pending, down):
                    return True
            else:
                g = down_pending.pop()
                readers = [r for member in (g, *self.absorbed.get(g, ())) for r in self.readers.get(member, ())]
                if _meets(readers, down, down_pending, up):
                    return True
        return False

    def joinable(self, group: FusionGroup | None, shape: tuple[int, ...], inputs: list[Node]) -> bool:
        """Open, same loop, and no other input depends on the group from outside it (a cycle)."""
        if group is None or group.closed or group.loop_shape != shape:
            return False
        return all(self.group(i) is group or not self.depends_on(i, group) for i in inputs)

    def independent(self, a: FusionGroup, b: FusionGroup) -> bool:
        return not any(self.depends_on(m, b) for m in a.members) and \
            not any(self.depends_on(m, a) for m in b.members)

    def _add_upstream(self, group: FusionGroup, added: set[FusionGroup]) -> None:
        for upstream in added - group.upstream:
            self.readers.setdefault(upstream, []).append(group)
        group.upstream |= added

    def add(self, node: Node) -> None:
        inputs = node.all_input_nodes
        upstream = set().union(*(self.reaches[i] for i in inputs)) if inputs else set()
        upstream = {g.find() for g in upstream}
        shape = _loop_shape(node)
        if shape is not None:
            candidates = list(dict.fromkeys(g for g in map(self.group, inputs) if self.joinable(g, shape, inputs)))
            if candidates:
                group = candidates[0]
                for other in candidates[1:]:  # inputs from two independent open loops: one loop
                    if self.independent(group, other):
                        other.merged_into = group
                        group.members += other.members
                        group.upstream |= other.upstream  # ``readers`` has ``other`` for these
                        self.absorbed.setdefault(group, []).extend([other, *self.absorbed.pop(other, [])])
            else:
                group = FusionGroup(f"fused_{len(self.groups)}", shape)
                self.groups.append(group)
            group.members.append(node)
            self._add_upstream(group, upstream - {group})
            group.closed = node.kind is NodeKind.REDUCTION
            self.group_of[node] = group
            upstream = {group}
        self.reaches[node] = upstream


def group_fusions(graph: Graph) -> Graph:
    record = graph.record_pass("group_fusions")
    grouping = _Grouping()
    for node in graph.nodes:
        grouping.add(node)
    groups = [g for g in grouping.groups if g.merged_into is None]
    for node, group in grouping.group_of.items():
        node.meta["fusion_group"] = group.find().name
    for group in groups:
        if len(group.members) > 1:
            record.changes.append(f"{group.name}: {', '.join(n.name for n in group.members)}")
    record.stats = {"groups": len(groups), "fused_nodes": sum(len(g.members) for g in groups if len(g.members) > 1)}
    return graph
