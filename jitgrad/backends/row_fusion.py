"""Row fusion: a fusion group run a row at a time inside the row loop of the row statement before it.

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

from ..fx.node import Node, NodeKind
from .fused_loop import group_loop
from .nodes import kernel_shape

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


__all__ = ["ROW_STATEMENTS", "fusable_after", "row_statement"]
