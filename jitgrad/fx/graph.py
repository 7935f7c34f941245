"""``Graph``: the list of nodes of one captured function, in an order where every value is defined
before it is read, ending in exactly one ``output`` node.

The graph owns its nodes' names (unique Python identifiers, so that the IR prints as Python) and its
constants (``get_attr`` nodes name them in ``graph.constants``). Passes edit a graph in place through
the methods here and record what they changed in ``graph.history``; ``lint()`` checks that an edit left
every invariant standing.
"""
from __future__ import annotations

import functools
import keyword
import re
from dataclasses import dataclass, field
from itertools import chain, filterfalse
from operator import attrgetter
from typing import Any, Iterator

from ..ops.registry import REGISTRY, OpDef
from ..tensor import Tensor
from .loop import Loop
from .node import Node, Opcode, clear_inputs, format_meta, iter_nodes, map_nodes, tuple_item
from .node_meta import meta_disagreement
from .numbers import is_number_op
from .printing import format_arg, format_fields

# Names the generated code uses for itself; no node may take them.
RESERVED_NAMES = frozenset({"REGISTRY", "np", "jitgrad", "constants", "forward", "float", "run_loop"})

_USERS = attrgetter("users")


class GraphError(RuntimeError):
    """A graph breaks one of its invariants (raised by ``lint`` and by passes that cannot proceed)."""


@dataclass
class PassRecord:
    """What one pass did to a graph: a line per change, and numbers worth comparing (bytes, counts)."""

    name: str
    changes: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.changes)


def tensor_meta(value: Any) -> dict[str, Any]:
    """``shape`` and ``dtype`` of a tensor, or tuples of them for a tuple of tensors."""
    if isinstance(value, tuple):
        return {"shape": tuple(v._data.shape for v in value), "dtype": tuple(v._data.dtype for v in value)}
    return {"shape": tuple(value._data.shape), "dtype": value._data.dtype}


@functools.lru_cache(maxsize=4096)
def _identifier(hint: str) -> str:
    """``hint`` made a Python identifier no generated code uses for itself: asked for every node a trace
    or a pass makes, with a few hints (op names) again and again."""
    base = re.sub(r"\W", "_", hint) or "v"
    if base[0].isdigit():
        base = "_" + base
    if keyword.iskeyword(base) or base in RESERVED_NAMES:
        base += "_"
    return base


class Graph:
    """An ordered list of nodes: placeholders first, the output last."""

    def __init__(self) -> None:
        self._nodes: list[Node] = []
        self._names: dict[str, int] = {}
        self.constants: dict[str, Tensor] = {}
        self.history: list[PassRecord] = []
        # what lint last found right about each call's metadata: its args and kwargs (the objects), its
        # shape and dtype and its inputs'; while all are the same, its op's rule is not asked again
        self._meta_checked: dict[Node, tuple] = {}
        # how many placeholders there are, and whether they are the first that many nodes (as a graph
        # built through these methods keeps them): ``placeholders`` is then a slice, where a trace
        # asks for them again and again while its list holds thousands of nodes
        self._placeholder_count = 0
        self._placeholders_first = True

    # ---- reading -----------------------------------------------------------------------------------
    @property
    def nodes(self) -> tuple[Node, ...]:
        """A snapshot, so that a pass may edit the graph while it walks it."""
        return tuple(self._nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(tuple(self._nodes))

    def __len__(self) -> int:
        return len(self._nodes)

    def last_nodes(self, count: int) -> list[Node]:
        """The last ``count`` nodes (without copying the whole list, as ``nodes`` does)."""
        return self._nodes[len(self._nodes) - count:] if count > 0 else []

    @property
    def placeholders(self) -> list[Node]:
        if self._placeholders_first:
            return self._nodes[:self._placeholder_count]
        return [n for n in self._nodes if n.op is Opcode.PLACEHOLDER]

    @property
    def output_node(self) -> Node:
        if not self._nodes or self._nodes[-1].op is not Opcode.OUTPUT:
            raise GraphError("the graph has no output node")
        return self._nodes[-1]

    def find(self, name: str) -> Node:
        for node in self._nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    def position(self) -> dict[Node, int]:
        return dict(zip(self._nodes, range(len(self._nodes))))  # built in C

    # ---- building ----------------------------------------------------------------------------------
    def unique_name(self, hint: str) -> str:
        """A fresh identifier based on ``hint`` (``mul``, ``mul_1``...)."""
        base, names = _identifier(hint), self._names
        count = names.get(base)
        if count is None:
            names[base] = 0
            return base
        count += 1
        name = f"{base}_{count}"
        while name in names:
            count += 1
            name = f"{base}_{count}"
        names[base] = count
        names[name] = 0
        return name

    def _insert(self, node: Node, before: Node | None) -> Node:
        if before is not None:
            at = self._nodes.index(before)
            self._nodes.insert(at, node)
            if at < self._placeholder_count:
                self._placeholders_first = False
        elif self._nodes and self._nodes[-1].op is Opcode.OUTPUT:
            self._nodes.insert(len(self._nodes) - 1, node)
        else:
            self._nodes.append(node)
        return node

    def placeholder(self, name: str, meta: dict[str, Any]) -> Node:
        """An argument of the function, placed after the existing ones."""
        node = Node(self, self.unique_name(name), Opcode.PLACEHOLDER, name, (), {}, meta)
        node.target = node.name
        self._nodes.insert(len(self.placeholders), node)
        self._placeholder_count += 1
        return node

    def get_attr(self, value: Tensor, name: str = "_tensor_constant", before: Node | None = None,
                 meta: dict[str, Any] | None = None) -> Node:
        """A constant: the graph keeps ``value`` under the node's name; ``meta`` adds to its shape and
        dtype (a trace's phase)."""
        key = self.unique_name(name)
        self.constants[key] = value
        node_meta = tensor_meta(value) if meta is None else {**tensor_meta(value), **meta}
        return self._insert(Node(self, key, Opcode.GET_ATTR, key, (), {}, node_meta), before)

    def call_function(self, target: OpDef | Any, args: tuple, kwargs: dict | None = None,
                      meta: dict[str, Any] | None = None, before: Node | None = None,
                      name: str | None = None) -> Node:
        """A call of a registry op (or ``tuple_item``); before the output unless ``before`` is given.
        An element of a multi-output value is named after it (``split_1`` for ``split[1]``)."""
        if name is None and target is tuple_item:
            name = f"{args[0].name}_{args[1]}"
        node = Node(self, self.unique_name(name or target.name), Opcode.CALL_FUNCTION, target, args,
                    kwargs or {}, meta)
        return self._insert(node, before)

    def output(self, value: Any) -> Node:
        if self._nodes and self._nodes[-1].op is Opcode.OUTPUT:
            raise GraphError("the graph already has an output node")
        return self._insert(Node(self, "output", Opcode.OUTPUT, "output", (value,), {}), None)

    def node_copy(self, node: Node, remap: dict[Node, Node], name: str | None = None) -> Node:
        """A copy of ``node`` (from any graph) in this one, reading ``remap[input]`` for each input."""
        args, kwargs = map_nodes(node.args, remap.__getitem__), map_nodes(node.kwargs, remap.__getitem__)
        if node.op is Opcode.PLACEHOLDER:
            copy = self.placeholder(name or node.name, node.meta)
        elif node.op is Opcode.GET_ATTR:
            copy = self.get_attr(node.graph.constants[node.target], name or node.name)
        elif node.op is Opcode.OUTPUT:
            copy = self.output(args[0])
        else:
            copy = self.call_function(node.target, args, kwargs, node.meta, name=name or node.name)
        copy.meta = dict(node.meta)
        return copy

    # ---- editing -----------------------------------------------------------------------------------
    def erase_node(self, node: Node) -> None:
        if node.users:
            raise GraphError(f"cannot erase {node.name}: it is still read by "
                             f"{', '.join(u.name for u in node.users)}")
        clear_inputs((node,))
        self._nodes.remove(node)
        if node.op is Opcode.GET_ATTR:
            del self.constants[node.target]
        elif node.op is Opcode.PLACEHOLDER:
            self._count_placeholders()

    def erase_nodes(self, nodes: list[Node]) -> None:
        """Erases ``nodes`` at once, each read by nobody or only by others of them: one walk of the
        list, where erasing a long run one node at a time would walk it once per node. The checks and
        the list's filtering run in C (``map``, ``chain``, ``filterfalse``): a pass on a long trace
        erases thousands of nodes."""
        gone = set(nodes)
        if not gone.issuperset(chain.from_iterable(map(_USERS, nodes))):
            for node in nodes:
                if not gone.issuperset(node.users):
                    raise GraphError(f"cannot erase {node.name}: it is still read by "
                                     f"{', '.join(u.name for u in node.users if u not in gone)}")
        clear_inputs(nodes)
        placeholders = False
        for node in nodes:
            op = node.op
            if op is Opcode.GET_ATTR:
                del self.constants[node.target]
            elif op is Opcode.PLACEHOLDER:
                placeholders = True
        self._nodes = list(filterfalse(gone.__contains__, self._nodes))
        if placeholders:
            self._count_placeholders()

    def reorder(self, order: list[Node]) -> None:
        """Puts the same nodes in a new order (``topological_sort`` decides which)."""
        if len(order) != len(self._nodes) or set(order) != set(self._nodes):
            raise GraphError("reorder must be given exactly the graph's nodes")
        self._nodes = list(order)
        # the same nodes, so as many placeholders: whether they come first is all that can change
        placeholder, count = Opcode.PLACEHOLDER, self._placeholder_count
        self._placeholders_first = all([n.op is placeholder for n in self._nodes[:count]])

    def _count_placeholders(self) -> None:
        """``_placeholder_count`` and ``_placeholders_first`` found afresh, after an edit that may have
        removed or moved placeholders."""
        count, first, other = 0, True, False
        for node in self._nodes:
            if node.op is not Opcode.PLACEHOLDER:
                other = True
                continue
            count += 1
            first = first and not other
        self._placeholder_count, self._placeholders_first = count, first

    def record_pass(self, name: str) -> PassRecord:
        """A fresh record in ``history`` for a pass about to run; the pass fills it in."""
        self.history.append(PassRecord(name))
        return self.history[-1]

    def replace_node(self, node: Node, replacement: Node) -> None:
        """Makes ``node``'s readers read ``replacement`` and removes ``node``."""
        node.replace_all_uses_with(replacement)
        self.erase_node(node)

    # ---- checking ----------------------------------------------------------------------------------
    def lint(self) -> None:
        """Raises ``GraphError`` naming the first broken invariant: nodes belong to this graph and have
        unique identifier names; placeholders come first and the one output last; every input is
        defined before it is read; ``users`` mirrors ``args``/``kwargs`` exactly; targets are what
        their opcode requires; every value has ``shape`` and ``dtype`` metadata, a call's the one its op's
        rule gives for what it reads (``node_meta``)."""
        seen: set[Node] = set()
        names: set[str] = set()
        members = set(self._nodes)
        outputs = [n for n in self._nodes if n.op is Opcode.OUTPUT]
        if len(outputs) != 1 or self._nodes[-1] is not outputs[0]:
            raise GraphError(f"the graph must end in exactly one output node (found {len(outputs)})")
        placeholders_done = False
        if self.placeholders != [n for n in self._nodes if n.op is Opcode.PLACEHOLDER]:
            raise GraphError("the graph's count of its placeholders is out of step with its nodes")
        inputs = {node: node.all_input_nodes for node in self._nodes}  # each node's walked once
        checked: dict[Node, tuple] = {}
        for node in self._nodes:
            if node.graph is not self:
                raise GraphError(f"node {node.name} belongs to another graph")
            if not isinstance(node.op, Opcode):
                raise GraphError(f"node {node.name} has opcode {node.op!r}, not an Opcode")
            if not node.name.isidentifier() or keyword.iskeyword(node.name) or node.name in names:
                raise GraphError(f"node {node.name}: the name is not a unique Python identifier")
            names.add(node.name)
            if node.op is Opcode.PLACEHOLDER and placeholders_done:
                raise GraphError(f"node {node.name}: placeholders must come before every other node")
            placeholders_done = placeholders_done or node.op is not Opcode.PLACEHOLDER
            read = inputs[node]
            if not seen.issuperset(read):  # ``seen`` holds only members: a member defined earlier
                self._lint_inputs(node, read, members, seen)
            for used in read:
                if node not in used.users or used.op is Opcode.OUTPUT:
                    self._lint_inputs(node, read, members, seen)
            for user in node.users:
                if user not in members or node not in inputs[user]:
                    raise GraphError(f"node {node.name} lists {user.name} as a user, but it does not read {node.name}")
            self._lint_target(node)
            if node.op is not Opcode.OUTPUT and ("shape" not in node.meta or "dtype" not in node.meta):
                raise GraphError(f"node {node.name} has no shape/dtype metadata")
            if node.op is Opcode.CALL_FUNCTION:
                facts = (node.meta["shape"], node.meta["dtype"],
                         tuple((i.meta.get("shape"), i.meta.get("dtype")) for i in read))
                known = self._meta_checked.get(node)
                if known is None or known[0] is not node.args or known[1] is not node.kwargs or known[2] != facts:
                    problem = meta_disagreement(node)
                    if problem is not None:
                        raise GraphError(f"node {node.name} {problem}")
                checked[node] = (node.args, node.kwargs, facts)
            seen.add(node)
        self._meta_checked = checked

    @staticmethod
    def _lint_inputs(node: Node, read: list[Node], members: set[Node], seen: set[Node]) -> None:
        """Names what is wrong with what ``node`` reads (``lint`` found something)."""
        where = f"node {node.name}"
        for used in read:
            if used not in members:
                raise GraphError(f"{where} reads {used.name}, which is not in the graph")
            if used not in seen:
                raise GraphError(f"{where} reads {used.name} before it is defined")
            if node not in used.users:
                raise GraphError(f"{where} reads {used.name} but is missing from its users")
            if used.op is Opcode.OUTPUT:
                raise GraphError(f"{where} reads the output node")

    def _lint_target(self, node: Node) -> None:
        where = f"node {node.name}"
        if node.op is Opcode.CALL_FUNCTION:
            if node.target is tuple_item:
                source, index = node.args
                if not isinstance(source, Node) or not isinstance(source.meta.get("shape"), tuple) \
                        or not isinstance(source.meta.get("dtype"), tuple) or not isinstance(index, int):
                    raise GraphError(f"{where}: tuple_item must read a multi-output node and an int")
            elif isinstance(node.target, Loop):
                problem = _loop_problem(node)
                if problem is not None:
                    raise GraphError(f"{where}: {problem}")
            elif is_number_op(node.target):
                if not node.meta.get("python_number"):
                    raise GraphError(f"{where}: a number op's value must be marked python_number")
            elif not isinstance(node.target, OpDef) or REGISTRY.get(node.target.name) is not node.target:
                raise GraphError(f"{where}: target {node.target!r} is not a registry op")
        elif node.op is Opcode.GET_ATTR:
            if node.target not in self.constants:
                raise GraphError(f"{where}: constant {node.target!r} is not held by the graph")
        elif node.op is Opcode.OUTPUT and (len(node.args) != 1 or node.kwargs or node.users):
            raise GraphError(f"{where}: the output holds one value and nobody reads it")
        elif node.op is Opcode.PLACEHOLDER and (node.args or node.kwargs):
            raise GraphError(f"{where}: a placeholder takes no inputs")

    # ---- printing ----------------------------------------------------------------------------------
    def __str__(self) -> str:
        """One line per node (``fx.printing.format_node``): ``%name: dtype[shape] = opcode
        target(args, kwargs)  # extra meta``."""
        return _listing([(n.name, n.op, n.target, n.args, n.kwargs, n.meta) for n in self._nodes])

    def tabular(self) -> str:
        rows = [("opcode", "name", "target", "args", "kwargs", "value")]
        for node in self._nodes:
            rows.append((node.op.value, node.name, node.target_name, format_arg(node.args),
                         format_arg(node.kwargs), node.format_meta()))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def print_tabular(self) -> None:
        """Prints a table of opcode, name, target, args, kwargs and value type."""
        print(self.tabular())


def _listing(rows: list[tuple]) -> str:
    """``str(graph)`` of a graph whose nodes have these fields (``format_fields``' arguments)."""
    params = ", ".join(f"{name}: {format_meta(meta)}" for name, op, _, _, _, meta in rows if op is Opcode.PLACEHOLDER)
    lines = [f"graph({params}):"]
    for fields in rows:
        lines.append(f"    {format_fields(*fields)}")
        if isinstance(fields[2], Loop):  # its body, indented under it
            lines += [f"        {line}" for line in str(fields[2].body).splitlines()]
    return "\n".join(lines)


class _NodeName(str):
    """A node's name where a ``Listing`` keeps an argument: it prints as the node does (``%name``),
    without keeping the node, its graph and everything they reach alive with the listing."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"%{self}"


class Listing:
    """``str(graph)`` as the graph is now, printed when first read (``str(listing)``). ``jitgrad.compile``
    keeps the IR a trace made for ``explain``, and the passes then edit that graph in place; printing it
    cost a first call of W4 over 500 steps 27-44 ms, while keeping each node's fields costs about half
    of that. They are kept in one flat list, with the nodes among a node's arguments by name (a bit
    per argument says which are names; a nested argument keeps ``_NodeName``s), so that what stays
    alive until ``explain`` asks is mostly strings and tuples of them, which the cycle collector stops
    tracking, not a graph of objects. A loop's body is printed now (no trace makes loops)."""

    _PER_NODE = 8  # name, opcode, target, args, which args are node names (bits), kwargs, meta keys, values

    def __init__(self, graph: Graph) -> None:
        self._kept: list[Any] = []
        self._text: str | None = None
        key_sets: dict[tuple, tuple] = {}
        add = self._kept.extend
        for node in graph._nodes:
            if isinstance(node.target, Loop):
                self._text, self._kept = str(graph), []
                return
            args, kwargs, bits = node.args, node.kwargs, 0
            if node._inputs:  # each argument: a node by its name, a plain value as it is, or walked
                kept = []
                for i, a in enumerate(args):
                    if type(a) is Node:
                        kept.append(a.name)
                        bits |= 1 << i
                    else:
                        kept.append(a if type(a) in _AS_THEY_ARE else map_nodes(a, _name_of))
                args = tuple(kept)
            if kwargs:
                kwargs = {k: v if type(v) in _AS_THEY_ARE else map_nodes(v, _name_of) for k, v in kwargs.items()}
            meta = node.meta  # its keys (one tuple per set of keys) and values: a third of a dict's bytes
            keys = tuple(meta)
            add((node.name, node.op, node.target, args, bits, kwargs or _NO_KWARGS, key_sets.setdefault(keys, keys),
                 tuple(meta.values())))

    def __str__(self) -> str:
        if self._text is None:
            fields, rows = self._kept, []
            for at in range(0, len(fields), self._PER_NODE):
                name, op, target, args, bits, kwargs, keys, values = fields[at:at + self._PER_NODE]
                if bits:
                    args = tuple(_NodeName(a) if bits >> i & 1 else a for i, a in enumerate(args))
                rows.append((name, op, target, args, kwargs, dict(zip(keys, values))))
            self._text, self._kept = _listing(rows), []
        return self._text


def _name_of(node: Node) -> _NodeName:
    return _NodeName(node.name)


_NO_KWARGS: dict[str, Any] = {}
_AS_THEY_ARE = frozenset({int, float, bool, str, type(None)})  # arguments kept as they are


def _loop_problem(node: Node) -> str | None:
    """What is wrong with a ``loop`` node (``fx.loop``): its body must lint, take one placeholder per
    value it reads (carries, one row of each sliced array, invariants) with their metadata, return a
    flat tuple of nodes whose carried values keep their metadata, and the node's metadata must be the
    final carries and the kept values stacked ``count`` times."""
    loop: Loop = node.target
    if len(node.args) != 3 or node.kwargs or not all(isinstance(a, tuple) for a in node.args):
        return "a loop reads (carries, sliced, invariants): three tuples"
    carries, sliced, invariants = node.args
    try:
        loop.body.lint()
    except GraphError as error:
        return f"its body: {error}"
    params, out = loop.body.placeholders, loop.body.output_node.args[0]
    if len(carries) != loop.carries or len(sliced) != len(loop.slices) \
            or len(params) != len(carries) + len(sliced) + len(invariants):
        return "its body's placeholders do not match its carries, sliced arrays and invariants"
    if not isinstance(out, tuple) or len(list(iter_nodes(out))) != len(out) or len(out) < loop.carries:
        return "its body must return a flat tuple of nodes, the carries first"
    expected = [(v.meta["shape"], v.meta["dtype"]) for v in carries]
    expected += [(v.meta["shape"][1:], v.meta["dtype"]) for v in sliced]
    expected += [(v.meta["shape"], v.meta["dtype"]) for v in invariants]
    if [(p.meta["shape"], p.meta["dtype"]) for p in params] != expected:
        return "its body's placeholders have other shapes or dtypes than the values it reads"
    for (start, step), base in zip(loop.slices, sliced):
        if step not in (1, -1) or not base.meta["shape"] or \
                not all(0 <= start + step * j < base.meta["shape"][0] for j in (0, loop.count - 1)):
            return f"slice ({start}, {step}) is not {loop.count} rows of {base.name}"
    if any((o.meta["shape"], o.meta["dtype"]) != (p.meta["shape"], p.meta["dtype"])
           for o, p in zip(out, params[:loop.carries])):
        return "a carried value changes shape or dtype from one iteration to the next"
    shapes = tuple(o.meta["shape"] for o in out[:loop.carries]) + \
        tuple((loop.count, *o.meta["shape"]) for o in out[loop.carries:])
    if node.meta.get("shape") != shapes or node.meta.get("dtype") != tuple(o.meta["dtype"] for o in out):
        return "its metadata is not its final carries and its stacked values"
    return None


__all__ = ["Graph", "GraphError", "Listing", "PassRecord", "format_arg", "tensor_meta"]
