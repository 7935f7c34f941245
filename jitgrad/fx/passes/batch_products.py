"""``batch_matrix_products``: many small products with one matrix become one matrix product.

A loop traced step by step (an RNN over its time steps) leaves two patterns behind. Its forward
multiplies one matrix by a vector per step, ``mv(W, v_t)``; the products whose vectors do not depend on
one another are one ``mm(stack(v_t), W.T)``, whose rows are the results. Its backward sums one outer
product per step into the matrix's gradient: the engine adds up ``g_t.unsqueeze(1) * v_t``, and that
sum is ``stack(g_t).T @ stack(v_t)``. Each small product pays a BLAS call and the sum of outer products
is a long scalar loop, where one matrix product runs in BLAS's vector code. Runs before
``simplify_algebra``, which reads a stack of every row of one array, in order, as that array: the
vectors ``x[t]`` of an unrolled loop over ``x`` are multiplied as ``x``, with no copy.

A group of fewer than ``MIN_PRODUCTS`` products is left alone: there the copies into a stack would cost
what the calls do. The sums come out in another order (BLAS's), as in any matrix product.
"""
from __future__ import annotations

from collections import Counter

from ...ops.registry import REGISTRY
from ..graph import Graph, PassRecord
from ..node import Node
from ..node_meta import call_meta
from .simplify import row_of, same_value_type
from .topological_sort import stable_order

MIN_PRODUCTS = 4
_MUL, _UNSQUEEZE = REGISTRY["mul"], REGISTRY["unsqueeze"]  # a call of a registry op has the op as its target


def call_like(graph: Graph, op: str, args: tuple, kwargs: dict, like: Node, before: Node | None) -> Node:
    """A new node placed before ``before`` (last when None), in the phase (forward, backward, grad
    mode) of ``like``, its shape and dtype from the op's rule."""
    phase = {k: like.meta[k] for k in ("phase", "no_grad") if k in like.meta}
    return graph.call_function(REGISTRY[op], args, kwargs, {**call_meta(REGISTRY[op], args, kwargs), **phase},
                               before=before)


def _stacked(graph: Graph, values: list[Node], like: Node, before: Node) -> Node:
    return call_like(graph, "stack", (tuple(values),), {"dim": 0}, like, before)


# ---- mv(W, v_t) for many independent v_t -----------------------------------------------------------
def _product_key(product: Node) -> tuple:
    """What products must share to be one matrix product: the matrix, the phase and the grad mode."""
    return (product.args[0], product.meta.get("phase"), product.meta.get("no_grad", False))


def _independent_groups(graph: Graph, products: list[Node]) -> list[list[Node]]:
    """The products grouped by matrix (and phase); a product joins the first group of its matrix
    none of whose products its vector depends on. ``upstream`` holds, per node, a bit per product
    that the node's value depends on. Only the products of a matrix with ``MIN_PRODUCTS`` of them or
    more can group (a backward's ``mv(permute(W), g)``, a permute for each, has one each), and only
    the nodes from the first of those to the last can hold a bit a vector reads: the walk is that
    stretch (an RNN's forward, not its backward)."""
    keys = {product: _product_key(product) for product in products}
    sizes = Counter(keys.values())
    products = [product for product in products if sizes[keys[product]] >= MIN_PRODUCTS]
    if not products:
        return []
    bit = {p: 1 << i for i, p in enumerate(products)}
    upstream: dict[Node, int] = {}
    nodes = graph.nodes
    for node in nodes[nodes.index(products[0]):nodes.index(products[-1])]:
        mask = bit.get(node, 0)
        for source in node.input_nodes:
            mask |= upstream.get(source, 0)
        upstream[node] = mask
    groups: dict[tuple, list[list]] = {}
    every: dict[tuple, int] = {}  # per key, the bits of all its groups' products
    for product in products:
        key, vector = keys[product], product.args[1]
        candidates = groups.setdefault(key, [])
        depends = upstream.get(vector, 0)
        if depends & every.get(key, 0) == every.get(key, 0):  # on a product of every group (a chain,
            candidates.append([[product], bit[product]])       # an RNN's hidden state): a new group at once
        else:
            for group in candidates:
                if not depends & group[1]:
                    group[0].append(product)
                    group[1] |= bit[product]
                    break
            else:
                candidates.append([[product], bit[product]])
        every[key] = every.get(key, 0) | bit[product]
    return [members for candidates in groups.values() for members, _ in candidates]


def _batch_vector_products(graph: Graph, record: PassRecord) -> None:
    mv = REGISTRY["mv"]
    products = [n for n in graph.nodes if n.target is mv]
    if len(products) < MIN_PRODUCTS:
        return
    rows: dict[Node, Node] = {}  # each batched product -> its row of the batch's product
    getitem = REGISTRY["getitem"]
    for members in _independent_groups(graph, products):
        if len(members) < MIN_PRODUCTS:
            continue
        first, matrix = members[0], members[0].args[0]
        stacked = _stacked(graph, [p.args[1] for p in members], first, first)
        transposed = call_like(graph, "permute", (matrix,), {"dims": (1, 0)}, first, first)
        product = call_like(graph, "mm", (stacked, transposed), {}, first, first)
        row_meta = call_meta(getitem, (product,), {"index": (0,)})  # every row's: one rule call, not one each
        for i, member in enumerate(members):
            phase = {k: member.meta[k] for k in ("phase", "no_grad") if k in member.meta}
            rows[member] = graph.call_function(getitem, (product,), {"index": (i,)}, {**row_meta, **phase})
        _read_rows(members, rows)
        record.changes.append(f"{', '.join(p.name for p in members)} -> rows of {product.name}")
    if rows:  # each row where its product was (one reordering, not an insertion and an erasure each,
        # which walked the node list twice per product), then in order: the stack was put before the
        # first product, ahead of the later products' vectors
        added = set(rows.values())
        order = [rows.get(n, n) for n in graph.nodes if n not in added]
        graph.erase_nodes(list(rows))
        graph.reorder(stable_order(order))


def _read_rows(members: list[Node], rows: dict[Node, Node]) -> None:
    """Makes what read the products read their rows, each reader rewired once, in the order of the last
    product it reads: the order one rewiring per product and reader would leave the readers in, in
    each of their inputs' ``users`` (later passes walk them), at one rebuilding of arguments per reader."""
    readers: dict[Node, None] = {}
    for member in members:
        for user in member.users:
            readers.pop(user, None)
            readers[user] = None
    for reader in readers:
        reader.replace_inputs(rows)


# ---- sums of outer products ------------------------------------------------------------------------
def _outer_factors(value: Node) -> tuple[Node, Node] | None:
    """``(a, b)`` when ``value`` is the outer product ``a.unsqueeze(1) * b`` of two vectors (either
    operand first), the form of ``mv``'s gradient with respect to its matrix."""
    if not isinstance(value, Node) or value.target is not _MUL or len(value.meta["shape"]) != 2:
        return None
    for column, row in (value.args, value.args[::-1]):
        if isinstance(column, Node) and column.target is _UNSQUEEZE and column.kwargs["dim"] in (1, -1) \
                and isinstance(row, Node):
            vector = column.args[0]
            if len(vector.meta["shape"]) == 1 and len(row.meta["shape"]) == 1 \
                    and vector.meta["dtype"] == row.meta["dtype"] == value.meta["dtype"]:
                return vector, row
    return None


def _summands(root: Node) -> tuple[list[Node], set[Node]]:
    """The values a tree of adds sums (repeats included) and the adds of the tree: an add is part of
    it when both its operands have the root's shape and dtype and, below the root, only the tree
    reads it."""
    terms, adds, pending = [], {root}, list(root.args)
    add, shape, dtype = root.target, root.meta["shape"], root.meta["dtype"]
    while pending:
        value = pending.pop()
        # ``is_call(value, "add")`` and ``same_value_type(root, ...)`` spelled out: this runs for each
        # step's term of a long trace's gradient sum
        if isinstance(value, Node) and value.target is add and len(value.users) == 1 \
                and all([isinstance(a, Node) and a.meta.get("shape") == shape and a.meta.get("dtype") == dtype
                         and not a.meta.get("python_number") for a in value.args]):
            adds.add(value)
            pending.extend(value.args)
        else:
            terms.append(value)
    return terms, adds


def _sum_outer_products(graph: Graph, record: PassRecord) -> None:
    absorbed: set[Node] = set()
    add = REGISTRY["add"]
    for root in reversed(graph.nodes):  # an outer product is a matrix: a sum of other shapes holds none
        if root.target is not add or root in absorbed or len(root.meta["shape"]) != 2 \
                or not all(same_value_type(root, a) for a in root.args):
            continue
        terms, adds = _summands(root)
        absorbed |= adds
        factors = {t: _outer_factors(t) for t in terms}
        pairs = [f for f in factors.values() if f is not None]
        if len(pairs) < MIN_PRODUCTS:
            continue
        rows = [row_of(b) for _, b in pairs]
        if all(r is not None for r in rows):  # in row order, a stack of all the rows is the array
            pairs = [p for _, p in sorted(zip(rows, pairs), key=lambda item: item[0][1])]
        left = _stacked(graph, [a for a, _ in pairs], root, root)
        right = _stacked(graph, [b for _, b in pairs], root, root)
        transposed = call_like(graph, "permute", (left,), {"dims": (1, 0)}, root, root)
        total = call_like(graph, "mm", (transposed, right), {}, root, root)
        for term in (t for t in terms if factors[t] is None):
            total = call_like(graph, "add", (total, term), {}, root, root)
        graph.replace_node(root, total)
        record.changes.append(f"{root.name}: {len(pairs)} outer products -> {total.name}")


def batch_matrix_products(graph: Graph) -> Graph:
    record = graph.record_pass("batch_matrix_products")
    _batch_vector_products(graph, record)
    _sum_outer_products(graph, record)
    return graph
