"""The IR's nodes: one ``Node`` per value of the program, with an opcode from a closed set.

A node's ``args`` and ``kwargs`` hold other nodes wherever the op reads a value computed in the graph;
they may be nested in tuples and lists (``cat`` takes a list of tensors) and sit beside plain Python
values (``mul(x, 2.0)``). ``users`` is kept in step with ``args`` by the node itself, so that passes can
ask "who reads this?" without scanning the graph.
"""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

if TYPE_CHECKING:
    from .graph import Graph


class _StrEnum(str, enum.Enum):
    """A ``str`` enum, so that ``node.op == "call_function"`` holds as in torch.fx (and a member hashes as
    its string), while ``node.op is Opcode.CALL_FUNCTION`` still works. ``str()`` and ``format()`` are
    pinned to ``Opcode.CALL_FUNCTION``: a ``str`` mixin would make ``format()`` (and f-strings) give the
    value on some Python versions and the name on others; listings print ``.value``."""

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __format__(self, format_spec: str) -> str:
        return format(str(self), format_spec)


class Opcode(_StrEnum):
    """What a node does. The set is closed: every consumer of the IR handles exactly these four."""

    PLACEHOLDER = "placeholder"      # an argument of the graph's function
    GET_ATTR = "get_attr"            # a constant tensor held by the graph (``graph.constants[target]``)
    CALL_FUNCTION = "call_function"  # a registry op (or ``tuple_item``) applied to ``args``/``kwargs``
    OUTPUT = "output"                # what the function returns: ``args[0]``


class NodeKind(_StrEnum):
    """What a node's value is made of, which is what fusion, rematerialization, the memory plan and the
    backends ask of it (``node.kind``)."""

    ELEMENTWISE = "elementwise"  # each element from the inputs' elements at the same (broadcast) index
    REDUCTION = "reduction"      # folds dimensions of its input: it can end a loop over that input
    VIEW = "view"                # may be its input's memory (reshape, transpose, basic indexing, split)
    OPAQUE = "opaque"            # anything else: a statement of its own (matmul, cat), or not an op

    @property
    def in_loop(self) -> bool:
        """Whether the value is computed inside a fusion group's loop, one element at a time."""
        return self is NodeKind.ELEMENTWISE or self is NodeKind.REDUCTION


class TupleItem:
    """The one call target that is not a registry op: element ``index`` of a multi-output op's result
    (``split``, ``max_dim``). Keeping the tuple and its elements apart lets every other node stand for
    exactly one tensor."""

    name = "tuple_item"

    def __call__(self, values: tuple, index: int) -> Any:
        return values[index]

    def __repr__(self) -> str:
        return "<tuple_item>"


tuple_item = TupleItem()


# Argument types that hold no node (what most keyword arguments are: ``dim=1``, ``keepdim=False``).
_PLAIN = frozenset({int, float, bool, str, type(None)})


def _holds_plain_values(kwargs: dict) -> bool:
    """Whether every keyword argument is a plain value or a tuple of them (so holds no node)."""
    for value in kwargs.values():
        kind = type(value)
        if kind in _PLAIN:
            continue
        if kind is not tuple:
            return False
        for item in value:
            if type(item) not in _PLAIN:
                return False
    return True


def map_nodes(value: Any, fn: Callable[["Node"], Any]) -> Any:
    """``value`` with every node inside it (at any depth of tuples, lists and dicts) replaced by
    ``fn(node)``."""
    if isinstance(value, Node):
        return fn(value)
    if isinstance(value, tuple):  # a node in it is mapped here, without a call per element (a ``stack``
        # of a long trace's steps holds hundreds)
        return tuple([fn(v) if type(v) is Node else map_nodes(v, fn) for v in value])
    if isinstance(value, list):
        return [fn(v) if type(v) is Node else map_nodes(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: map_nodes(v, fn) for k, v in value.items()}
    return value


def clear_inputs(nodes: Iterable["Node"]) -> None:
    """Makes each of ``nodes`` read nothing (nodes being erased): what setting their arguments to
    nothing does, without its walk of the new arguments, in one loop over the thousands of nodes a
    pass erases from a long trace."""
    for node in nodes:
        for old in node._inputs:
            old.users.pop(node, None)
        node._args, node._kwargs, node._inputs = (), {}, ()


def iter_leaves(value: Any, kind: type | tuple[type, ...] = object) -> Iterator[Any]:
    """The leaves of ``value`` (nested tuples, lists and dict values), depth-first, repeats included,
    keeping those of type ``kind``. One walk for every nested value the IR and its users flatten:
    output structures, their tensors, their nodes."""
    if isinstance(value, (tuple, list, dict)):
        leaves: list[Any] = []
        _collect_leaves(value, kind, leaves)
        yield from leaves
    elif isinstance(value, kind):
        yield value


def _collect_leaves(value: Any, kind: type | tuple[type, ...], into: list[Any]) -> None:
    """``iter_leaves``'s walk as plain recursion into one list: the IR walks argument structures on
    every node at every pass and lint, where nested generators cost more than the walk itself."""
    for v in (value.values() if isinstance(value, dict) else value):
        if isinstance(v, (tuple, list, dict)):
            _collect_leaves(v, kind, into)
        elif isinstance(v, kind):
            into.append(v)


def iter_nodes(value: Any) -> Iterator["Node"]:
    """Every node inside ``value``, in order, repeats included."""
    return iter_leaves(value, Node)


_DTYPE_TEXTS: dict[tuple[type, Any], str] = {}


def _dtype_text(dtype: Any) -> str:
    """``f"{dtype}"``, kept per dtype: numpy spells a dtype in Python code, and a listing of a long trace
    spells one per node. A structured dtype is spelled afresh (two can be equal and print apart:
    ``align=True``)."""
    if getattr(dtype, "names", None) is not None or getattr(dtype, "metadata", None):
        return f"{dtype}"
    key = (type(dtype), dtype)
    try:
        return _DTYPE_TEXTS[key]
    except KeyError:
        text = _DTYPE_TEXTS[key] = f"{dtype}"
        return text
    except TypeError:  # unhashable
        return f"{dtype}"


def format_meta(meta: dict[str, Any], size: Callable[[int], str] = str) -> str:
    """``Node.format_meta`` of a node whose metadata is ``meta`` (a listing kept for later prints a
    copy of it: ``printing.format_fields``)."""
    shape, dtype = meta.get("shape"), meta.get("dtype")
    if shape is None or dtype is None:
        return ""
    if isinstance(dtype, tuple):
        return "(" + ", ".join(f"{_dtype_text(d)}[{', '.join(map(size, s))}]" for d, s in zip(dtype, shape)) + ")"
    return f"{_dtype_text(dtype)}[{', '.join(map(size, shape))}]"


def is_call(value: Any, op: str) -> bool:
    """Whether ``value`` (an argument: a node or a plain value) is a call of the registry op ``op``."""
    return isinstance(value, Node) and value.op is Opcode.CALL_FUNCTION and value.target_name == op


class Node:
    """One value of the program. ``target`` is the registry ``OpDef`` (or ``tuple_item``) for
    ``call_function``, the parameter name for ``placeholder``, the constant's key for ``get_attr`` and
    ``"output"`` for the output. ``meta`` holds ``shape`` and ``dtype`` (tuples of them for a
    multi-output op) and whatever passes add (``fusion_group``, ``buffer``...)."""

    __slots__ = ("graph", "name", "op", "target", "_args", "_kwargs", "_inputs", "users", "meta")

    def __init__(self, graph: "Graph", name: str, op: Opcode, target: Any, args: tuple,
                 kwargs: dict, meta: dict | None = None) -> None:
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._inputs: tuple[Node, ...] = ()
        self.users: dict[Node, None] = {}  # an ordered set
        self.meta: dict[str, Any] = dict(meta) if meta else {}
        self._set_inputs(args if type(args) is tuple else tuple(args), dict(kwargs) if kwargs else {})

    # ---- inputs ------------------------------------------------------------------------------------
    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, value: tuple) -> None:
        self._set_inputs(tuple(value), self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value: dict) -> None:
        self._set_inputs(self._args, dict(value))

    @property
    def all_input_nodes(self) -> list["Node"]:
        """The distinct nodes this one reads, in the order they first appear (found once, when the
        inputs are set: passes and ``lint`` ask for them of every node, again and again)."""
        return list(self._inputs)

    @property
    def input_nodes(self) -> tuple["Node", ...]:
        """``all_input_nodes`` as the node keeps them, not copied: for a pass's walk of every node
        that only reads them."""
        return self._inputs

    def _set_inputs(self, args: tuple, kwargs: dict) -> None:
        for old in self._inputs:
            old.users.pop(self, None)
        self._args, self._kwargs = args, kwargs
        nodes: list[Node] = []
        # flat arguments, and attributes of plain values (nearly every op a trace records: ``dim=1``,
        # ``index=(3,)``), need no recursive walk
        flat = not kwargs or _holds_plain_values(kwargs)
        if flat:
            for a in args:
                if isinstance(a, Node):
                    nodes.append(a)
                elif isinstance(a, (tuple, list, dict)):
                    flat = False
                    break
        if not flat:
            nodes.clear()
            _collect_leaves(args, Node, nodes)
            if kwargs:
                _collect_leaves(kwargs, Node, nodes)
        self._inputs = inputs = tuple(dict.fromkeys(nodes)) if len(nodes) > 1 else tuple(nodes)
        for new in inputs:
            new.users[self] = None

    def replace_input_with(self, old: "Node", new: "Node") -> None:
        """Reads ``new`` wherever this node read ``old``."""
        swap = (lambda n: new if n is old else n)
        self._set_inputs(map_nodes(self._args, swap), map_nodes(self._kwargs, swap))

    def replace_inputs(self, replacement: dict["Node", "Node"]) -> None:
        """Reads ``replacement[n]`` wherever this node read a key ``n`` of it: one rewiring, however many
        of its inputs are replaced (a pass replacing many nodes rewires each reader once: a ``stack`` of
        an unrolled loop's 500 steps may read 500 of them). Keyword arguments holding no node are kept."""
        self._set_inputs(*self.inputs_replaced(replacement))

    def inputs_replaced(self, replacement: dict["Node", "Node"]) -> tuple[tuple, dict]:
        """``args`` and ``kwargs`` with ``replacement[n]`` for each key ``n`` of it they hold (the
        arguments ``replace_inputs`` gives the node); keyword arguments holding no node are kept."""
        get = replacement.get
        args, kwargs = self._args, self._kwargs
        if all([type(value) is Node for value in args]):
            args = tuple([get(value, value) for value in args])
        else:
            args = map_nodes(args, lambda n: get(n, n))
        if kwargs and not _holds_plain_values(kwargs):
            kwargs = map_nodes(kwargs, lambda n: get(n, n))
        return args, kwargs

    def replace_all_uses_with(self, replacement: "Node") -> list["Node"]:
        """Makes every user of this node read ``replacement`` instead; returns those users."""
        users = list(self.users)
        for user in users:
            user.replace_input_with(self, replacement)
        return users

    # ---- description -------------------------------------------------------------------------------
    @property
    def kind(self) -> NodeKind:
        """What the value is made of, read from the op's registry entry (``OpDef.kind`` and ``view``):
        an element of a multi-output value (``tuple_item``) is a view of it; an op that is elementwise
        and a view (``expand``) is elementwise, since a loop reads it in place and stores it as a copy;
        what is not an op call (placeholders, constants, the output, arithmetic on Python numbers) is
        opaque."""
        if self.op is not Opcode.CALL_FUNCTION:
            return NodeKind.OPAQUE
        if self.target is tuple_item:
            return NodeKind.VIEW
        declared = getattr(self.target, "kind", None)
        if declared in (NodeKind.ELEMENTWISE, NodeKind.REDUCTION):
            return NodeKind(declared)
        return NodeKind.VIEW if getattr(self.target, "view", False) else NodeKind.OPAQUE

    @property
    def target_name(self) -> str:
        return self.target.name if self.op is Opcode.CALL_FUNCTION else str(self.target)

    def format_meta(self, size: Callable[[int], str] = str) -> str:
        """``float32[3, 4]`` (or a tuple of those for a multi-output op), each size as ``size`` spells
        it (a kernel names its sizes: ``float32[x_n0, 4]``)."""
        return format_meta(self.meta, size)

    def __repr__(self) -> str:
        return self.name
