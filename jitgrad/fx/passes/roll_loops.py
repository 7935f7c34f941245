"""``roll_loops``: a loop the trace unrolled becomes one ``loop`` node (``fx.loop``) holding its body once.

An RNN over T time steps is traced as T copies of its step, and its backward as T copies of the step's
derivative, run in reverse; the generated kernel, and its compile time, grow with T. This pass finds
such repeats and rolls them, so that a backend that lowers loops compiles the body once.

What is a loop here: a run of ``count`` consecutive stretches of the graph's node list, each of
``period`` nodes, where the k-th node of every stretch calls the same op with equal attributes, shapes,
dtypes and grad mode (the "signature"; a row read ``x[t]`` of an array defined before the run matches
any other row read of it), and where each input of the k-th node, compared across stretches, is:

- the same iteration's node at the same offset (a value computed inside the step);
- one node defined before the run, the same for every iteration (an invariant: a weight);
- a node before the run at the first iteration and, at iteration j > 0, iteration j-1's node at one
  fixed offset (a carried value: the hidden state, or the gradient flowing back);
- rows ``start + step * j`` of one array defined before the run, ``step`` being 1 or -1 (a sliced
  input: ``x[t]``, or the forward's saved values read backwards).

Anything else (another constant, another shape, another op at one step, an input from two
iterations back) ends the run where it breaks; a run of fewer than ``MIN_ITERATIONS`` iterations is
left alone. A value of the body read after the loop is kept from every iteration and read back as a
row of the loop's stacked value (the final value of a carry, when only the last iteration's is read).

Rolling must not cost speed: fusion groups never span a loop's iterations, so a step whose carried
value is elementwise both where it is made and where it is read (W1's chain of ``sin`` and ``tanh``,
one fused loop over its elements) is left unrolled; so is a loop that carries nothing (its
iterations are independent: ``batch_matrix_products`` makes one product of them). Runs after
``eliminate_dead_code`` and before ``group_fusions``, only for backends that lower loops
(``PassManager`` for such a backend adds it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from ...ops.registry import REGISTRY
from ..graph import Graph
from ..loop import Loop
from ..node import Node, NodeKind, iter_nodes, map_nodes, tuple_item
from ..node_meta import call_meta
from .loop_signatures import GETITEM, Signatures, candidates, input_leaves, reads_arguments, row_read

MIN_ITERATIONS = 4


@dataclass
class _Run:
    """A candidate loop: ``count`` stretches of ``period`` nodes from ``start``, and what each input is."""

    nodes: list[Node]
    start: int
    period: int
    count: int
    position: dict[Node, int]
    # (offset, leaf) -> how the leaf-th input of the offset-th node is read: ("inner", offset),
    # ("invariant", node), ("carry", init, offset of the next value), ("slice", base, start, step)
    inputs: dict[tuple[int, int], tuple] = field(default_factory=dict)
    rows: dict[int, tuple[Node, int, int]] = field(default_factory=dict)  # row-read offsets: base, start, step

    def at(self, iteration: int, offset: int) -> Node:
        return self.nodes[self.start + iteration * self.period + offset]

    def column(self, offset: int, first: int, stop: int) -> list[Node]:
        """The offset-th node of iterations ``first`` to ``stop - 1``: one slice of the node list."""
        at = self.start + offset
        return self.nodes[at + first * self.period:at + stop * self.period:self.period]

    def where(self, node: Node) -> tuple[int, int] | None:
        """(iteration, offset) of a node inside the run, or None."""
        at = self.position.get(node, -1) - self.start
        if at < 0 or at >= self.count * self.period:
            return None
        return divmod(at, self.period)


def _rows_agreeing(values: Sequence[Node], base: Node, run: _Run, outside: bool) -> tuple[int, int]:
    """How many leading ``values`` read rows of ``base`` one after another, up or down (as the first two
    set), each outside the run where ``outside`` asks; and that step. One tight loop: a check walks
    every iteration of each row read of a candidate, hundreds of them."""
    position, low, high = run.position.get, run.start, run.start + run.count * run.period
    step, previous = 0, 0
    for j, value in enumerate(values):
        row = row_read(value)  # None for what is not a row read, which may have no arguments at all
        if row is None or (outside and low <= position(value, -1) < high) or value.args[0] is not base:
            return j, step
        if j == 1:
            step = row - previous
            if step != 1 and step != -1:
                return j, step
        elif j > 1 and row - previous != step:
            return j, step
        previous = row
    return len(values), step


def _classify_row(run: _Run, offset: int, count: int) -> int:
    """How many iterations agree that the offset-th node reads rows of one array defined before the run
    (``run.rows``); ``count`` when all do."""
    first = run.at(0, offset)
    base = first.args[0]
    if not isinstance(base, Node) or run.where(base) is not None:
        return 0
    agreeing, step = _rows_agreeing(run.column(offset, 0, count), base, run, outside=False)
    if agreeing < count:
        return agreeing
    run.rows[offset] = (base, row_read(first), step)
    return count


def _agreeing(values: list[Node], expected: list[Node]) -> int:
    """How many leading ``values`` are the ``expected`` nodes (compared as lists first: nodes compare by
    identity, and most checks agree throughout)."""
    if values == expected:
        return len(values)
    return next(j for j, (value, node) in enumerate(zip(values, expected)) if value is not node)


def _classify_leaf(run: _Run, offset: int, leaf: int, leaves: list[Sequence[Node]], count: int) -> int:
    """How many iterations agree on how input ``leaf`` of the offset-th node is read (``run.inputs``)."""
    first = leaves[0][leaf]
    inside = run.where(first)
    if inside is not None:  # computed in the same iteration
        _, source = inside
        agreeing = 1 + _agreeing([values[leaf] for values in leaves[1:count]], run.column(source, 1, count))
        if agreeing < count:
            return agreeing
        run.inputs[(offset, leaf)] = ("inner", source)
        return count
    second = leaves[1][leaf]
    if second is first:
        agreeing = 2 + _agreeing([values[leaf] for values in leaves[2:count]], [first] * (count - 2))
        if agreeing < count:
            return agreeing
        run.inputs[(offset, leaf)] = ("invariant", first)
        return count
    carried = run.where(second)
    if carried is not None:
        if carried[0] != 0:
            return 1
        source = carried[1]
        agreeing = 2 + _agreeing([values[leaf] for values in leaves[2:count]], run.column(source, 1, count - 1))
        if agreeing < count:
            return agreeing
        run.inputs[(offset, leaf)] = ("carry", first, source)
        return count
    row = row_read(first)
    base = first.args[0] if row is not None else None
    if base is None or run.where(base) is not None:
        return 0
    agreeing, step = _rows_agreeing([values[leaf] for values in leaves[:count]], base, run, outside=True)
    if agreeing < count:
        return agreeing
    run.inputs[(offset, leaf)] = ("slice", base, row, step)
    return count


def _check(run: _Run) -> int:
    """The number of leading iterations that form a loop (filling ``run.inputs`` and ``run.rows`` for
    them); fewer than 2 when none do."""
    count = run.count
    for offset in range(run.period):
        node = run.at(0, offset)
        if row_read(node) is not None and isinstance(node.args[0], Node) and run.where(node.args[0]) is None:
            count = min(count, _classify_row(run, offset, count))
            if count < 2:
                return count
            continue
        column = run.column(offset, 0, count)
        # the iterations' nodes share a signature, so their arguments have one structure: when the
        # first's inputs are its arguments, each one's are
        leaves = [n.args for n in column] if reads_arguments(node) else [input_leaves(n) for n in column]
        for leaf in range(len(leaves[0])):
            count = min(count, _classify_leaf(run, offset, leaf, leaves, count))
            if count < 2:
                return count
    return count


def _typed_alike(run: _Run) -> bool:
    """Whether every value crossing the loop's edge is one tensor, and each carry keeps its initial
    value's shape and dtype."""
    for how in run.inputs.values():
        if how[0] != "inner" and isinstance(how[1].meta["dtype"], tuple):
            return False
        if how[0] == "carry" and how[1].meta.get("python_number"):  # a carry lives in an array
            return False
        if how[0] == "carry" and (how[1].meta["shape"], how[1].meta["dtype"]) != \
                (run.at(0, how[2]).meta["shape"], run.at(0, how[2]).meta["dtype"]):
            return False
    for offset in range(run.period):  # the iterations share a signature: a tuple at one offset is at all
        if isinstance(run.at(0, offset).meta["dtype"], tuple):
            for node in run.column(offset, 0, run.count):
                if any(run.where(u) is None for u in node.users):
                    return False
    return True


def _fusible_across(run: _Run) -> bool:
    """Whether some carried value of more than one element is made and read by elementwise work: fusion
    would join iterations that a loop keeps apart (a scalar, such as a loss summed over the steps,
    costs nothing to keep apart)."""
    for key, how in run.inputs.items():
        if how[0] != "carry":
            continue
        producer, reader = run.at(0, how[2]), run.at(0, key[0])
        if producer.kind is not NodeKind.OPAQUE and reader.kind is not NodeKind.OPAQUE \
                and math.prod(producer.meta["shape"]) > 1:
            return True
    return False


def _find(graph: Graph, first: int, least: int, known: Signatures) -> tuple[_Run, int] | None:
    nodes = list(graph.nodes)
    position = dict(zip(nodes, range(len(nodes))))  # in C
    rejected: dict[int, tuple[int, int]] = {}
    shifted: dict[tuple[int, int], tuple[int, int]] = {}
    for start, period, count in candidates(nodes, first, rejected, least, known, shifted):
        # A check gives min(count, the first iteration that disagrees), whatever ``count`` (from 2: an
        # iteration reads nodes of its own and earlier ones only), so checking the first iterations
        # tells a candidate that fails on them without walking all of its iterations at each of its
        # offsets (a step whose backward reads the forward's values of each step fails on its second
        # iteration, at every one of hundreds of candidates)
        probe = max(least, 2)
        if count > probe and _check(_Run(nodes, start, period, probe, position)) < least:
            continue
        run = _Run(nodes, start, period, count, position)
        agreeing = _check(run)
        if agreeing < least:
            continue
        run.count = agreeing
        # fewer than all agree: classified again over those (all agree: as the check left it)
        changed = agreeing != count and agreeing != _check(run)
        if changed or not any(how[0] == "carry" for how in run.inputs.values()) or not _typed_alike(run):
            rejected[period] = (start + 1, start + agreeing * period)
        elif _fusible_across(run):  # another rotation of the same steps may carry through an opaque op;
            # this one, shifted by whole periods, would be found fusible again (a window for every
            # rotation, as it was, was replaced by each rotation tried: W4 with an elementwise input
            # term checked every shift, quadratic: 7 s at 400 steps)
            shifted[(period, start % period)] = (start + period, start + agreeing * period)
        else:
            return run, agreeing
    return None


def _roll(graph: Graph, run: _Run) -> Node:
    """Puts the loop node in place of the run's nodes; returns it."""
    count, period = run.count, run.period
    window = run.nodes[run.start:run.start + count * period]
    inside = set(window)  # the run's nodes: what reads one from elsewhere reads it after the loop
    body = Graph()
    carries: dict[tuple[Node, int], Node] = {}
    slices: dict[tuple[Node, int, int], Node] = {}
    invariants: dict[Node, Node] = {}
    hows = list(run.inputs.values()) + [("slice", *row) for row in run.rows.values()]
    for how in hows:  # placeholders in order: carries, slices, invariants
        if how[0] == "carry" and (how[1], how[2]) not in carries:
            carries[(how[1], how[2])] = body.placeholder(f"{run.at(0, how[2]).name}_carried", dict(how[1].meta))
    for how in hows:
        if how[0] == "slice" and how[1:] not in slices:
            base = how[1]
            row_meta = {"shape": tuple(base.meta["shape"][1:]), "dtype": base.meta["dtype"]}
            slices[how[1:]] = body.placeholder(f"{base.name}_row", row_meta)
    for how in hows:
        if how[0] == "invariant" and how[1] not in invariants:
            invariants[how[1]] = body.placeholder(how[1].name, _value_meta(how[1]))
    copies: dict[int, Node] = {}
    for offset in range(period):
        node = run.at(0, offset)
        if offset in run.rows:
            copies[offset] = slices[run.rows[offset]]
            continue
        leaf = iter(range(len(list(iter_nodes((node.args, node.kwargs))))))

        def remap(value: Node, offset: int = offset) -> Node:
            how = run.inputs[(offset, next(leaf))]
            if how[0] == "inner":
                return copies[how[1]]
            if how[0] == "invariant":
                return invariants[how[1]]
            if how[0] == "carry":
                return carries[(how[1], how[2])]
            return slices[how[1:]]

        args = map_nodes(node.args, remap)
        kwargs = map_nodes(node.kwargs, remap)
        copies[offset] = body.call_function(node.target, args, kwargs, _value_meta(node, all_keys=True),
                                            name=node.name)
    # what the loop hands on: carries' next values, then values read after the loop
    outside = {}
    for offset in range(period):
        if offset in run.rows:
            continue
        readers = [j for j, n in enumerate(run.column(offset, 0, count)) if not inside.issuperset(n.users)]
        if readers:
            outside[offset] = readers
    carried_next = [offset for (_, offset) in carries]
    kept = [o for o, readers in outside.items() if readers != [count - 1] or o not in carried_next]
    body.output(tuple([copies[o] for o in carried_next] + [copies[o] for o in kept]))
    steps = [step for _, _, step in slices]
    loop = Loop(body, count, len(carries), tuple((s, t) for _, s, t in slices), reverse=bool(steps)
                and all(t == -1 for t in steps))
    first_node, after = run.at(0, 0), run.nodes[run.start + count * period] \
        if run.start + count * period < len(run.nodes) else graph.output_node
    out = body.output_node.args[0]
    meta = {"shape": tuple(o.meta["shape"] for o in out[:loop.carries])
            + tuple((count, *o.meta["shape"]) for o in out[loop.carries:]),
            "dtype": tuple(o.meta["dtype"] for o in out)}
    for key in ("phase", "no_grad"):
        values = {run.at(0, o).meta.get(key) for o in range(period)}
        if len(values) == 1 and None not in values:
            meta[key] = values.pop()
    node = graph.call_function(loop, (tuple(init for init, _ in carries), tuple(b for b, _, _ in slices),
                                      tuple(invariants)), {}, meta, before=first_node)
    _hand_on(graph, run, node, loop, outside, carried_next, kept, after, inside)
    graph.erase_nodes([n for n in window if inside.issuperset(n.users)])
    return node


def _value_meta(node: Node, all_keys: bool = False) -> dict[str, Any]:
    """A node's metadata without what later passes add; ``all_keys`` keeps phase and grad mode."""
    keep = ("shape", "dtype", "phase", "no_grad", "python_number") if all_keys else ("shape", "dtype",
                                                                                    "python_number")
    return {k: node.meta[k] for k in keep if k in node.meta}


def _hand_on(graph: Graph, run: _Run, node: Node, loop: Loop, outside: dict[int, list[int]],
             carried_next: list[int], kept: list[int], after: Node, inside: set[Node]) -> None:
    """Makes what read the run's values after it read the loop's: a final carry, or a row of a kept
    value's stack. Each reader is rewired once (a stack of every step's value reads hundreds), and the
    new nodes are put before ``after`` in one reordering (an insertion each would walk the node list
    once per row)."""
    phase = {k: node.meta[k] for k in ("phase", "no_grad") if k in node.meta}
    getitem = GETITEM
    replacement: dict[Node, Node] = {}
    added: list[Node] = []

    def add(target: Any, args: tuple, kwargs: dict, meta: dict) -> Node:
        added.append(graph.call_function(target, args, kwargs, meta))
        return added[-1]

    for offset, readers in outside.items():
        if offset in kept:
            index = loop.carries + kept.index(offset)
            stacked = add(tuple_item, (node, index), {}, call_meta(tuple_item, (node, index), {}))
            row_meta = {**call_meta(getitem, (stacked,), {"index": (0,)}), **phase}  # every row's
            for j in readers:
                replacement[run.at(j, offset)] = add(getitem, (stacked,), {"index": (loop.row(j),)}, row_meta)
        else:
            index = carried_next.index(offset)
            replacement[run.at(run.count - 1, offset)] = add(tuple_item, (node, index), {},
                                                             call_meta(tuple_item, (node, index), {}))
    nodes, cut = graph.nodes, len(graph) - 1 - len(added)
    if list(nodes[cut:-1]) == added:  # the new nodes are the last before the output, as added
        order = [*nodes[:cut], nodes[-1]]
    else:
        new = set(added)
        order = [n for n in nodes if n not in new]
    at = order.index(after)
    order[at:at] = added
    graph.reorder(order)
    users = dict.fromkeys(u for value in replacement for u in value.users if u not in inside)
    for user in users:
        user.replace_inputs(replacement)


def _row_runs(values: tuple) -> list[tuple[Node | None, int, int, Any]]:
    """``values`` cut into runs of consecutive rows of one array, ``(base, first row, rows, value)``,
    a value that is not a row read standing alone as ``(None, 0, 1, value)``."""
    runs: list[tuple[Node | None, int, int, Any]] = []
    for value in values:
        row = row_read(value) if isinstance(value, Node) else None
        base = value.args[0] if row is not None else None
        if runs and base is not None and runs[-1][0] is base and runs[-1][1] + runs[-1][2] == row:
            runs[-1] = (base, runs[-1][1], runs[-1][2] + 1, None)
        else:
            runs.append((base, row or 0, 1, value))
    return runs


def _stacks_as_slices(graph: Graph, record: Any) -> None:
    """A ``stack`` of consecutive rows of one array (a loop's stacked values, read back row by row by
    what the unrolled graph stacked: ``batch_matrix_products``'s stacks of the steps' vectors)
    becomes a ``cat`` of slices of it: no node, and no kernel line, per iteration."""
    getitem, unsqueeze, cat = REGISTRY["getitem"], REGISTRY["unsqueeze"], REGISTRY["cat"]
    stack = REGISTRY["stack"]
    for node in graph.nodes:
        if node.target is not stack or node.kwargs.get("dim") != 0 \
                or len(node.args) != 1 or not isinstance(node.args[0], tuple):
            continue
        runs = _row_runs(node.args[0])
        if all(rows < 2 for _, _, rows, _ in runs):
            continue
        phase = {k: node.meta[k] for k in ("phase", "no_grad") if k in node.meta}
        pieces = []
        for base, first, rows, value in runs:
            if rows == 1:
                value = value if value is not None else graph.call_function(
                    getitem, (base,), {"index": (first,)}, {**call_meta(getitem, (base,), {"index": (first,)}),
                                                            **phase}, before=node)
                kwargs: dict[str, Any] = {"dim": 0}
                target = unsqueeze
                args: tuple = (value,)
            elif first == 0 and rows == base.meta["shape"][0]:
                pieces.append(base)
                continue
            else:
                target, args, kwargs = getitem, (base,), {"index": (slice(first, first + rows, None),)}
            pieces.append(graph.call_function(target, args, kwargs, {**call_meta(target, args, kwargs), **phase},
                                              before=node))
        elements = [v for v in node.args[0] if isinstance(v, Node)]
        if len(pieces) == 1:
            replacement = pieces[0]
        else:
            kwargs = {"dim": 0}
            replacement = graph.call_function(cat, (tuple(pieces),), kwargs,
                                              {**call_meta(cat, (tuple(pieces),), kwargs), **phase}, before=node)
        graph.replace_node(node, replacement)
        graph.erase_nodes([v for v in dict.fromkeys(elements) if not v.users and row_read(v) is not None])
        record.changes.append(f"{node.name} -> {replacement.name}: {len(runs)} pieces")


def roll_loops(graph: Graph, least: int = MIN_ITERATIONS) -> Graph:
    """Rolls every loop of at least ``least`` iterations it finds, first to last (see the module
    docstring), then makes stacks of a loop's rows slices of its value."""
    record = graph.record_pass("roll_loops")
    first, loops = 0, 0
    known = Signatures()
    while True:
        found = _find(graph, first, least, known)
        if found is None:
            break
        run, count = found
        node = _roll(graph, run)
        loops += 1
        record.changes.append(f"{node.name}: {count} iterations of {run.period} nodes from "
                              f"{run.at(0, 0).name}")
        first = graph.nodes.index(node) + 1
    if loops:
        _stacks_as_slices(graph, record)
    record.stats["loops"] = loops
    return graph


__all__ = ["MIN_ITERATIONS", "roll_loops"]
