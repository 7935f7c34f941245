"""Row fusion: a fusion group run a row at a time inside the row loop of the row statement before it
(and a logsumexp's gradient group inside the logsumexp's, reusing its exponentials: ``exps_reuse``).

A row statement (``softmax``, ``log_softmax`` and their backwards over the last dimension of a 2-d
value) is one loop over rows, each row read and written while it is in cache. The fusion group the
plan runs next often reads the statement's output elementwise over the same rows: K2's loss
``(softmax(x) * x).sum()`` and its gradient ``softmax + softmax_backward(x, softmax)``. Run as a loop
of its own, that group reads the whole output back from memory (4 MB each for K2) after the statement
has written it; run inside the statement's row loop, right after the row is finished, it reads the row
from cache and the statement's output costs no second trip through memory.

This module decides when that is safe; each CPU backend writes the fused loop (``numba_cpu``'s
``row_fusion``). The group's code is unchanged, only its outer loop is the statement's: every row is
computed in the same order, by the same operations, as unfused, so results are the same bits, and
the same whatever thread runs a row. A group qualifies when:

- it runs right after the statement (``units``: nothing between them moves);
- its loop is over the statement's shape and it reads the statement's output (at the loop index,
  which is the row being finished);
- it has no reduction, or one folding the rows (``dim=-1``) or the whole loop, without a second pass
  (a full reduction keeps one partial result per row, joined in row order after the loop, as unfused);
- none of its outputs is in a buffer the statement reads: the plan may hand a group the buffer of a
  value that dies at the statement, since the group ran after it; fused, the group writes row ``p``
  while later rows of that buffer are still to be read (a transposed input's row is a column).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..fx.node import Node, NodeKind, Opcode
from .fused_loop import group_loop
from .nodes import kernel_shape, node_dtype

ROW_STATEMENTS = frozenset({"softmax", "log_softmax", "softmax_backward", "log_softmax_backward"})


def _memory_of(value: Node) -> str | None:
    """The plan's buffer ``value`` lives in (through views), or None for an argument or a constant."""
    while value.kind is NodeKind.VIEW and value.args and isinstance(value.args[0], Node):
        value = value.args[0]
    return value.meta.get("buffer")


def row_statement(node: Node) -> bool:
    """Whether ``node`` is a row statement over the last dimension of a 2-d value (its rows contiguous
    in its output), which a following group may be fused into."""
    shape = kernel_shape(tuple(node.meta["shape"]))
    return node.target_name in ROW_STATEMENTS and len(shape) == 2 and node.kwargs.get("dim", -1) % 2 == 1


def fusable_after(statement: Node, members: list[Node]) -> bool:
    """Whether the fusion group ``members`` (the unit after ``statement``) can run a row at a time inside
    ``statement``'s row loop (see the module docstring)."""
    if not row_statement(statement) or not members or not all(m.kind.in_loop for m in members):
        return False
    reduction, loop = group_loop(members)
    if loop != kernel_shape(tuple(statement.meta["shape"])):
        return False
    if not any(statement in m.all_input_nodes for m in members):
        return False
    if reduction is not None:
        spec = reduction.target.lower
        dims = reduction.kwargs.get("dim")
        folds_rows = dims is not None and {d % 2 for d in dims} == {1}
        if spec.first is not None or not (dims is None or folds_rows):
            return False
    read = {_memory_of(v) for v in statement.all_input_nodes} - {None}
    return not any(m.meta.get("buffer") in read for m in members)


# ---- a group reusing a logsumexp's exponentials ----------------------------------------------------------
# ``logsumexp(x, 1)``'s gradient is ``g * exp(x - lse)`` (K10's backward): a second ``exp`` over every
# element, while the forward's row loop has just computed ``exp(x - max)`` for the row. Since ``exp(x -
# lse) = exp(x - max) / s`` (``s`` the row's sum of them), the group holding that ``exp`` can run a row at a
# time inside the logsumexp's row loop and divide the row's exps by ``s`` instead (K10: 1.84 -> 1.30 ms of
# CPU a step, one thread). These are other bits than ``exp(x - lse)`` (two roundings, of the exp and of
# the quotient, against the rounding of ``lse`` and of the exp), the same whatever thread runs the row.

@dataclass(frozen=True)
class ExpsReuse:
    """What ``exps_reuse`` found: the unit (index in the plan) of the group that reads the logsumexp's
    exponentials again, the view units it reads that move before the logsumexp's loop, and its ``exp``
    members equal to ``exp(x - lse)`` at the row, and the member whose output row can hold the exps."""

    group: int
    views: tuple[int, ...]
    exps: tuple[Node, ...]
    row_into: Node | None   # the member whose output row holds the exps (``_row_into``), or None


def _row_local(value: Node, lse: Node, rows: int) -> bool:
    """Whether ``value`` is ``lse`` read at the loop's row: ``lse`` with its dimension kept, or a reshape of
    the 1-d ``lse`` to ``(rows, 1)``."""
    if kernel_shape(tuple(value.meta["shape"])) != (rows, 1):
        return False
    if value is lse:
        return True
    return value.kind is NodeKind.VIEW and value.target_name in ("reshape", "view", "unsqueeze") \
        and value.args and value.args[0] is lse and tuple(lse.meta["shape"]) == (rows,)


def _exps_of(members: list[Node], x: Node, lse: Node, rows: int) -> list[Node]:
    """The members ``exp(sub(x, l))`` with ``l`` the row's ``lse`` (through an ``expand`` member or not)."""
    found = []
    for node in members:
        if node.target_name != "exp" or not isinstance(node.args[0], Node) or node.args[0] not in members:
            continue
        sub = node.args[0]
        if sub.target_name != "sub" or len(sub.args) != 2 or sub.args[0] is not x or sub.kwargs.get("alpha", 1) != 1:
            continue
        shift = sub.args[1]
        if isinstance(shift, Node) and shift.target_name == "expand" and shift in members:
            shift = shift.args[0]
        if isinstance(shift, Node) and _row_local(shift, lse, rows) and node_dtype(node) == node_dtype(lse):
            found.append(node)
    return found


def exps_reuse(plan: list[list[Node]], k: int) -> ExpsReuse | None:
    """The group after unit ``k`` (a large ``logsumexp`` over the rows of a 2-d value) that can run a row at
    a time inside its row loop, reading its exponentials (module comment above), or None. That group:

    - has no reduction, loops over the logsumexp's input shape and holds ``exp(x - lse)`` at the row;
    - reads nothing computed between the two but views of what is known before (moved up with it), and
      the logsumexp's result only at the row being finished;
    - writes no buffer any unit from the logsumexp to it reads or writes: it now runs before them."""
    nest = plan[k]
    if not all(m.kind.in_loop for m in nest):
        return None
    lse, loop = group_loop(nest)
    if lse is None or lse.target_name != "logsumexp" or len(loop) != 2 or not isinstance(lse.args[0], Node):
        return None
    if {d % 2 for d in lse.kwargs.get("dim") or (0,)} != {1} or len(nest) != 1:
        return None
    x, rows = lse.args[0], loop[0]
    known = {n for unit in plan[:k] for n in unit}
    views: dict[Node, int] = {}
    for j in range(k + 1, len(plan)):
        unit = plan[j]
        if len(unit) == 1 and unit[0].kind is NodeKind.VIEW and "buffer" not in unit[0].meta:  # no copy to move
            views[unit[0]] = j
            continue
        if not all(m.kind.in_loop for m in unit) or group_loop(unit) != (None, loop):
            continue
        exps = _exps_of(unit, x, lse, rows)
        if not exps:
            continue
        needed = _views_needed(unit, lse, rows, known, views)
        if needed is None or _writes_over(unit, plan[k:j]):
            return None
        return ExpsReuse(j, tuple(sorted(needed)), tuple(exps), _row_into(unit, exps, node_dtype(lse)))
    return None


def _row_into(group: list[Node], exps: list[Node], dtype: object) -> Node | None:
    """A member the group stores, of the exps' dtype, the last reused ``exp`` or computed after it, whose
    buffer the group does not read: the exps are written into its row, and each element is read (by the
    ``exp``s) before the member's store overwrites it (``x.logsumexp(1).sum()``'s gradient is the
    ``exp``). Writing them there rather than into a row buffer of their own was 1.6 -> 1.35 ms for K10
    (one thread): the row's three arrays no longer compete for the first cache."""
    read = {_memory_of(v) for m in group for v in m.all_input_nodes if v not in group} - {None}
    last = max(group.index(e) for e in exps)
    for node in group[last:]:
        if "buffer" in node.meta and node_dtype(node) == dtype and node.meta["buffer"] not in read:
            return node
    return None


def _views_needed(group: list[Node], lse: Node, rows: int, known: set[Node],
                  views: dict[Node, int]) -> set[int] | None:
    """The view units ``group`` reads (directly or through other views) when all it reads is known before
    the logsumexp, its result at the row, or views of what is known; else None."""
    needed: set[int] = set()

    def from_lse(value: Node) -> bool:
        return value is lse or (value in views and any(from_lse(v) for v in value.all_input_nodes))

    def available(value: Node) -> bool:
        if value.op in (Opcode.PLACEHOLDER, Opcode.GET_ATTR) or value in known:
            return True
        if value in views and all(available(v) for v in value.all_input_nodes):
            needed.add(views[value])
            return True
        return False

    for value in {v for node in group for v in node.all_input_nodes if v not in group}:
        if from_lse(value):
            if not _row_local(value, lse, rows):
                return None
            if value is not lse:
                needed.add(views[value])
        elif not available(value):
            return None
    return needed


def _writes_over(group: list[Node], between: list[list[Node]]) -> bool:
    """Whether ``group`` writes a buffer that a node of ``between`` (units it would now run before, and
    the logsumexp's) is in or reads."""
    written = {m.meta["buffer"] for m in group if "buffer" in m.meta}
    used = {_memory_of(v) for unit in between for n in unit for v in (n, *n.all_input_nodes)}
    return bool(written & used)


__all__ = ["ROW_STATEMENTS", "ExpsReuse", "exps_reuse", "fusable_after", "row_statement"]
