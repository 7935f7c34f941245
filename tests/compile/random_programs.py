"""Random programs for differential testing: a small grammar of tensor code, drawn with hypothesis.

A ``Program`` is a list of steps, each one line of Python (``v2 = v0 @ x1``), and prints as the source
of a runnable program: the differential tests show it when a run disagrees, and hypothesis shrinks
it. The source is what runs: it is executed with ``jg`` bound to jitgrad, or to PyTorch for the
reference, so every step is written in the API both share (methods, operators, ``jg.maximum``,
``jg.nn.functional.softmax``).

The grammar: elementwise unary ops and binary ops with broadcasting (operands of other ranks, size-1
dimensions) or Python numbers, reductions (``dim`` None, an int or a tuple, ``keepdim``, 0-d
tensors), ``matmul`` (1-d, 2-d, batched with broadcast batch dimensions), basic and advanced
indexing, ``softmax``/``log_softmax`` along a dimension, reshaping (``reshape``, ``transpose``,
``permute``, ``squeeze``, ``expand``...), and ``cat``/``stack``. A step whose operand must have some shape (a matrix product)
takes an earlier value that fits or a new input of a fitting shape.

Values stay where the ops are smooth, as ``tests/op_samples.py`` keeps them: inputs are uniform in
[-2, 2], an op defined on positive numbers only (``log``, ``sqrt``, a division) gets ``v * v + 0.5``,
and nothing PyTorch rejects is written (``prod`` over several dimensions, ``var`` of one element).
Kinks (``relu``, ``abs``, ``maximum``, ``amax``) are met only where values tie or vanish exactly,
which random inputs almost never do.

The loss is the sum of each unused value weighted by an input of its shape, so that no gradient is
trivially zero (a ``softmax`` summed has none).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

SIZES = st.integers(1, 4)
MAX_RANK = 4
LOW, HIGH = -2.0, 2.0


@dataclass(frozen=True)
class Layout:
    """How an input's values lie in memory when it is not a plain C-contiguous array: ``permuted`` (its
    dimensions stored in ``order``: a transpose, Fortran order), ``stepped`` (every other row of a
    bigger array along ``dim``), ``reversed`` (negative stride along ``dim``), ``sliced`` (columns of a
    wider array, a row stride larger than the row) or ``expanded`` (stride 0 along ``dim``: the values
    are drawn equal along it). jitgrad takes such an array with ``jg.from_numpy``, which keeps its
    strides; PyTorch, the reference, gets a copy (its ``from_numpy`` refuses negative strides)."""

    kind: str
    dim: int = 0
    order: tuple[int, ...] = ()

    def wrap(self, values: str, shape: tuple[int, ...]) -> str:
        """Python (numpy) making an array laid out so, holding the values ``values`` (Python) makes."""
        if self.kind == "permuted":
            inverse = tuple(int(i) for i in np.argsort(self.order))
            return f"np.ascontiguousarray({values}.transpose({self.order})).transpose({inverse})"
        if self.kind == "stepped":
            return f"np.repeat({values}, 2, axis={self.dim})[{', '.join([':'] * self.dim + ['::2'])}]"
        if self.kind == "reversed":
            return f"np.flip(np.flip({values}, {self.dim}).copy(), {self.dim})"
        if self.kind == "sliced":
            pad = [(0, 0)] * (len(shape) - 1) + [(1, 2)]
            return f"np.pad({values}, {pad})[..., 1:-2]"
        strides = [8 * math.prod(shape[d + 1:]) for d in range(len(shape))]
        strides[self.dim] = 0
        return f"np.lib.stride_tricks.as_strided({values}, strides={tuple(strides)})"

    def values_source(self, shape: tuple[int, ...]) -> str:
        """Python drawing the values (from ``rng``): equal along the expanded dimension."""
        if self.kind != "expanded":
            return f"rng.uniform({LOW}, {HIGH}, {shape!r})"
        one = shape[:self.dim] + (1,) + shape[self.dim + 1:]
        return f"np.broadcast_to(rng.uniform({LOW}, {HIGH}, {one!r}), {shape!r}).copy()"


LAYOUT_KINDS = ("permuted", "stepped", "reversed", "sliced", "expanded")


def layouts(shape: tuple[int, ...]) -> st.SearchStrategy[Layout | None]:
    """A layout for an input of ``shape``, or None (C-contiguous) half the time."""
    if not shape:
        return st.none()
    rank = len(shape)
    laid = st.sampled_from(LAYOUT_KINDS if rank > 1 else LAYOUT_KINDS[1:]).flatmap(lambda kind: st.builds(
        Layout, st.just(kind), st.integers(0, rank - 1),
        st.permutations(range(rank)).map(tuple) if kind == "permuted" else st.just(())))
    return st.one_of(st.none(), laid)


@dataclass(frozen=True)
class Input:
    """A tensor the program takes: its values are drawn when the program runs, from its seed, and laid
    out in memory as ``layout`` says (None: C-contiguous)."""

    name: str
    shape: tuple[int, ...]
    requires_grad: bool
    layout: Layout | None = None

    def values_source(self) -> str:
        return self.layout.values_source(self.shape) if self.layout else f"rng.uniform({LOW}, {HIGH}, {self.shape!r})"

    def source(self) -> str:
        if self.layout is None:
            flag = ", requires_grad=True" if self.requires_grad else ""
            return f"{self.name} = jg.tensor({self.values_source()}{flag})"
        flag = ".requires_grad_()" if self.requires_grad else ""
        return f"{self.name} = jg.from_numpy({self.layout.wrap(self.values_source(), self.shape)}){flag}"

    def renewal_source(self) -> str:
        """Python writing new values (drawn from ``rng``) into the input in place: for an expanded one,
        into its memory alone (the slice at index 0 of the expanded dimension), as eager refuses a write
        where elements share memory."""
        if self.layout is None or self.layout.kind != "expanded":
            return f"{self.name}.copy_(jg.tensor({self.values_source()}))"
        part = f".narrow({self.layout.dim}, 0, {min(1, self.shape[self.layout.dim])})"
        return f"{self.name}{part}.copy_(jg.tensor({self.values_source()}){part})"

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """The values ``source()`` makes, from the same generator in the same order."""
        if self.layout is None or self.layout.kind != "expanded":
            return rng.uniform(LOW, HIGH, self.shape)
        return eval(self.values_source(), {"np": np, "rng": rng})  # noqa: S307 - our own generated source

    def laid_out(self, values: np.ndarray) -> np.ndarray:
        """A new array holding ``values`` in this input's layout (a C-contiguous copy when it has none)."""
        copy = np.array(values)
        return copy if self.layout is None else eval(self.layout.wrap("values", self.shape), {"np": np, "values": copy})


@dataclass(frozen=True)
class Step:
    """One line of the program: ``name = expression``, reading the values named in ``operands``."""

    name: str
    expression: str
    operands: tuple[str, ...]
    shape: tuple[int, ...]

    def source(self) -> str:
        return f"{self.name} = {self.expression}"


@dataclass(frozen=True)
class Program:
    """Inputs, steps and the loss (a scalar expression), and the inputs that the closure forms of the
    differential tests read from a closure rather than take as arguments. ``repr`` is the source of the
    whole program, inputs included: paste it into a file and it runs."""

    inputs: tuple[Input, ...]
    steps: tuple[Step, ...]
    loss: str
    captured: tuple[str, ...]
    seed: int

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs)

    @property
    def grad_names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs if i.requires_grad)

    def function_source(self) -> str:
        lines = [f"def f({', '.join(self.names)}):"]
        lines += [f"    {step.source()}" for step in self.steps]
        lines.append(f"    return {self.loss}")
        return "\n".join(lines) + "\n"

    def inputs_source(self) -> str:
        lines = [f"rng = np.random.default_rng({self.seed})"] + [i.source() for i in self.inputs]
        return "\n".join(lines) + "\n"

    def draw_arrays(self, calls: int) -> list[dict[str, np.ndarray]]:
        """The inputs' values for ``calls`` calls: the first as ``inputs_source()`` makes them, the
        next ones drawn after them from the same generator."""
        rng = np.random.default_rng(self.seed)
        return [{i.name: i.draw(rng) for i in self.inputs} for _ in range(calls)]

    def __repr__(self) -> str:
        captured = f"# the closure forms read {', '.join(self.captured)} from a closure\n"
        return ("import numpy as np\nimport jitgrad as jg\n\n" + self.function_source() + "\n"
                + self.inputs_source() + captured)

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        """Hypothesis prints a falsifying example with this (it would spell out the dataclass)."""
        printer.text("\n" + repr(self))


class _Builder:
    """The program being drawn: its inputs, its steps, and every value's shape. With ``odd_inputs``, new
    inputs may have a dimension of size 0 and a layout other than C-contiguous (``Layout``)."""

    def __init__(self, draw, odd_inputs: bool = False):
        self.draw = draw
        self.odd_inputs = odd_inputs
        self.inputs: list[Input] = []
        self.steps: list[Step] = []
        self.shapes: dict[str, tuple[int, ...]] = {}

    def new_input(self, shape: tuple[int, ...], requires_grad: bool | None = None, prefix: str = "x") -> str:
        if requires_grad is None:
            requires_grad = self.draw(st.sampled_from((True, False)))
        name = f"{prefix}{sum(i.name.startswith(prefix) for i in self.inputs)}"
        layout = self.draw(layouts(tuple(shape))) if self.odd_inputs else None
        self.inputs.append(Input(name, tuple(shape), requires_grad, layout))
        self.shapes[name] = tuple(shape)
        return name

    def pick(self, fits=lambda shape: True, make_shape=None) -> str:
        """A value whose shape ``fits``: the newest one half the time (so that steps chain), else any
        earlier one or a new input of a shape made by ``make_shape`` (by default any that fits)."""
        candidates = [name for name, shape in reversed(self.shapes.items()) if fits(shape)]
        if candidates and self.draw(st.booleans()):
            return candidates[0]
        choice = self.draw(st.integers(0, len(candidates)))
        if choice < len(candidates):
            return candidates[choice]
        return self.new_input(make_shape() if make_shape else self.draw(shapes(zero=self.odd_inputs).filter(fits)))

    def add(self, expression: str, operands: tuple[str, ...], shape: tuple[int, ...]) -> None:
        name = f"v{len(self.steps)}"
        self.steps.append(Step(name, expression, operands, tuple(shape)))
        self.shapes[name] = tuple(shape)

    def program(self, seed: int) -> Program:
        used = {name for step in self.steps for name in step.operands}
        sinks = [step for step in self.steps if step.name not in used]
        terms = [f"({step.name} * {self.new_input(step.shape, False, prefix='w')}).sum()" for step in sinks]
        captured = self.draw(st.lists(st.sampled_from([i.name for i in self.inputs]), min_size=1, unique=True))
        return Program(tuple(self.inputs), tuple(self.steps), " + ".join(terms), tuple(sorted(captured)), seed)

    def depends_on_a_grad_input(self) -> bool:
        needs = {i.name for i in self.inputs if i.requires_grad}
        for step in self.steps:
            if needs & set(step.operands):
                needs.add(step.name)
        return bool(needs & {s.name for s in self.steps})


def shapes(max_rank: int = 3, zero: bool = False) -> st.SearchStrategy[tuple[int, ...]]:
    """Shapes of up to ``max_rank`` dimensions; with ``zero``, a dimension is 0 one time in nine."""
    sizes = st.integers(0, 8).map(lambda n: (n + 1) // 2) if zero else SIZES
    return st.lists(sizes, max_size=max_rank).map(tuple)


# ---- elementwise ----------------------------------------------------------------------------------
POSITIVE = "({a} * {a} + 0.5)"   # where an op is smooth only for positive numbers
UNARY = ("-{a}", "{a}.sin()", "{a}.cos()", "{a}.tanh()", "{a}.sigmoid()", "{a}.exp()", "{a}.erf()", "{a}.expm1()",
         "jg.nn.functional.gelu({a})", "{a}.relu()", "{a}.abs()", "{a}.tanh().tan()", "{a} ** 2", "{a} ** 3",
         POSITIVE + ".log()", POSITIVE + ".sqrt()", POSITIVE + ".rsqrt()", "({a} * {a}).log1p()",
         POSITIVE + " ** 1.5", POSITIVE + " ** -0.5", "2.0 ** {a}", "{a}.clamp(-0.5, 0.5)", "{a}.clamp(min=0.2)",
         "{a}.sign() * {a}")
BINARY = ("{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / " + POSITIVE.format(a="{b}"), "jg.maximum({a}, {b})",
          "jg.minimum({a}, {b})", "jg.where({b} > 0, {a}, {b} * 0.5)", POSITIVE + " ** {b}")
WITH_NUMBER = ("{a} * {n}", "{n} * {a}", "{a} + {n}", "{n} - {a}", "{a} - {n}", "{a} / {n}",
               "{n} / " + POSITIVE, "jg.where({a} > {n}, {a}, {n})")
NUMBERS = (2.0, 0.5, -1.5, 3, -1)


def unary(b: _Builder) -> None:
    a = b.pick()
    b.add(b.draw(st.sampled_from(UNARY)).format(a=a), (a,), b.shapes[a])


def broadcastable_shape(draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with ``shape``: trailing dimensions equal, 1, or anything against a 1,
    and any number of leading ones (up to ``MAX_RANK``)."""
    rank = draw(st.integers(0, min(MAX_RANK, len(shape) + 1)))
    out = []
    for position in range(1, rank + 1):
        if position > len(shape):
            out.append(draw(SIZES))
        elif shape[-position] == 1:
            out.append(draw(st.sampled_from((1, draw(SIZES)))))
        else:
            out.append(draw(st.sampled_from((shape[-position], 1))))
    return tuple(reversed(out))


def broadcasts_with(shape: tuple[int, ...]):
    def fits(other: tuple[int, ...]) -> bool:
        try:
            return len(np.broadcast_shapes(shape, other)) <= MAX_RANK
        except ValueError:
            return False
    return fits


def binary(b: _Builder) -> None:
    a = b.pick()
    other = b.pick(broadcasts_with(b.shapes[a]), lambda: broadcastable_shape(b.draw, b.shapes[a]))
    if b.draw(st.booleans()):
        a, other = other, a
    expression = b.draw(st.sampled_from(BINARY)).format(a=a, b=other)
    b.add(expression, (a, other), np.broadcast_shapes(b.shapes[a], b.shapes[other]))


def with_number(b: _Builder) -> None:
    a = b.pick()
    expression = b.draw(st.sampled_from(WITH_NUMBER)).format(a=a, n=b.draw(st.sampled_from(NUMBERS)))
    b.add(expression, (a,), b.shapes[a])


# ---- reductions -----------------------------------------------------------------------------------
def _dims(draw, rank: int, tuples: bool) -> int | tuple[int, ...]:
    """One dimension or (with ``tuples``) several, each maybe counted from the end; a 0-d tensor has
    the dimensions 0 and -1, as PyTorch has it."""
    count = max(rank, 1)
    if not tuples or rank < 2 or draw(st.booleans()):
        d = draw(st.integers(0, count - 1))
        return d - count if draw(st.booleans()) else d
    chosen = sorted(draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True)))
    return tuple(d - rank if draw(st.booleans()) else d for d in chosen)


def _reduced_shape(shape: tuple[int, ...], dims, keepdim: bool) -> tuple[int, ...]:
    if dims is None:
        axes = set(range(len(shape)))
    else:
        axes = {d % max(len(shape), 1) for d in (dims if isinstance(dims, tuple) else (dims,))}
    return tuple(1 if i in axes else s for i, s in enumerate(shape) if keepdim or i not in axes)


def _call(method: str, dims, keepdim: bool) -> str:
    return f".{method}(dim={dims!r}{', keepdim=True' if keepdim else ''})"


REDUCTIONS = ("sum", "mean", "amax", "logsumexp", "var", "max", "prod", "std", "amin", "min")


def reduction(b: _Builder) -> None:
    """``x.sum()``, ``x.sum(dim=None, keepdim=True)``, ``x.mean(dim=(0, -1))``, ``x.max(dim=1).values``..."""
    a = b.pick()
    shape = b.shapes[a]
    kind = b.draw(st.sampled_from(REDUCTIONS))
    keepdim = b.draw(st.booleans())
    one_dim = kind in ("max", "min", "prod")          # PyTorch's max(dim) and prod take one dimension
    if kind != "logsumexp" and b.draw(st.booleans()):  # over every dimension (logsumexp needs dim)
        if kind in ("sum", "mean") and b.draw(st.booleans()):
            call, dims = _call(kind, None, keepdim), None
        else:
            call, dims, keepdim = f".{kind}()", None, False
    else:
        dims = _dims(b.draw, len(shape), tuples=not one_dim)
        call = _call(kind, dims, keepdim) + (".values" if kind in ("max", "min") else "")
    reduced = _reduced_shape(shape, dims, keepdim)
    if kind in ("var", "std"):   # an unbiased variance needs two elements
        assume(math.prod(shape) > math.prod(reduced))
    b.add(a + call, (a,), reduced)


# ---- matmul ---------------------------------------------------------------------------------------
def _matmul_partner(draw, shape: tuple[int, ...], left: bool) -> tuple[int, ...]:
    """A shape that ``shape @ it`` (``left``) or ``it @ shape`` accepts: a vector, a matrix, or a
    stack of matrices whose batch dimensions broadcast with ``shape``'s."""
    k = shape[-1] if left else shape[0] if len(shape) == 1 else shape[-2]
    rank = draw(st.integers(1, 3))
    if rank == 1:
        return (k,)
    m = draw(SIZES)
    matrix = (k, m) if left else (m, k)
    batch = broadcastable_shape(draw, shape[:-2]) if len(shape) > 2 else tuple(draw(st.lists(SIZES, max_size=1)))
    return (batch if rank == 3 else ()) + matrix


def _matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return np.matmul(np.zeros(a), np.zeros(b)).shape


def _fits_matmul(a: tuple[int, ...]):
    def fits(b: tuple[int, ...]) -> bool:
        if not b or len(b) > MAX_RANK:
            return False
        try:
            _matmul_shape(a, b)
            return True
        except ValueError:
            return False
    return fits


def matmul(b: _Builder) -> None:
    a = b.pick(lambda shape: 1 <= len(shape) <= 3)
    left = b.draw(st.booleans())
    partner_shape = lambda: _matmul_partner(b.draw, b.shapes[a], left)  # noqa: E731
    if left:
        other = b.pick(_fits_matmul(b.shapes[a]), partner_shape)
        b.add(f"{a} @ {other}", (a, other), _matmul_shape(b.shapes[a], b.shapes[other]))
    else:
        other = b.pick(lambda s: _fits_matmul(s)(b.shapes[a]), partner_shape)
        b.add(f"{other} @ {a}", (other, a), _matmul_shape(b.shapes[other], b.shapes[a]))


# ---- indexing -------------------------------------------------------------------------------------
def _index_item(draw, size: int, advanced_length: int | None):
    """One item of an index over a dimension of ``size``: (source, the item for numpy). A list after an
    earlier list or mask has as many elements as it selects, so that the two broadcast. A dimension of
    size 0 takes ``:`` alone (no integer or list indexes it)."""
    if size == 0:
        return ":", slice(None)
    kinds = ["int", "slice", "full", "list"] + (["mask"] if advanced_length is None else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "int":
        i = draw(st.integers(-size, size - 1))
        return str(i), i
    if kind == "full":
        return ":", slice(None)
    if kind == "slice":
        start = draw(st.integers(0, size - 1))
        stop = draw(st.sampled_from((None, draw(st.integers(start + 1, size)))))
        step = draw(st.sampled_from((None, 2)))
        text = f"{start or ''}:{'' if stop is None else stop}{'' if step is None else f':{step}'}"
        return text, slice(start or None, stop, step)
    if kind == "list":
        length = advanced_length or draw(st.integers(1, 4))
        items = draw(st.lists(st.integers(-size, size - 1), min_size=length, max_size=length))
        text = repr(items) if draw(st.booleans()) else f"jg.tensor({items!r})"
        return text, np.array(items)
    mask = draw(st.lists(st.booleans(), min_size=size, max_size=size).filter(any))
    return repr(mask), np.array(mask)


def _pytorch_index_shape(shape: tuple[int, ...], items: list) -> tuple[int, ...]:
    """The shape of ``x[items]`` as PyTorch has it: the integers, slices, None and ``...`` apply first
    and the lists and masks (1-d here) to the dimensions left; numpy alone would count an integer
    beside a list as a list, and an ellipsis or None between two lists as a separator."""
    basic = tuple(slice(None) if isinstance(i, np.ndarray) else i for i in items)
    spanned = len(shape) - sum(i is not None and i is not Ellipsis for i in items)
    advanced = []
    for item in items:
        if item is Ellipsis:
            advanced += [slice(None)] * spanned
        elif not isinstance(item, int):
            advanced.append(item if isinstance(item, np.ndarray) else slice(None))
    return np.empty(shape)[basic][tuple(advanced)].shape


def indexing(b: _Builder) -> None:
    """``x[1]``, ``x[:, 1:3]``, ``x[[0, 2, 0]]``, ``x[[True, False], ..., None, -1]``: items for some
    leading dimensions and, after an ellipsis, some trailing ones, and maybe a new dimension."""
    a = b.pick(lambda shape: len(shape) >= 1)
    shape = b.shapes[a]
    ellipsis = b.draw(st.booleans())
    lead = b.draw(st.integers(0 if ellipsis else 1, len(shape)))
    trail = b.draw(st.integers(0, len(shape) - lead)) if ellipsis else 0
    texts, items, advanced_length = [], [], None
    for size in shape[:lead] + shape[len(shape) - trail:]:
        text, item = _index_item(b.draw, size, advanced_length)
        if isinstance(item, np.ndarray):
            advanced_length = int(item.sum()) if item.dtype == bool else len(item)
        texts.append(text)
        items.append(item)
    if ellipsis:
        texts.insert(lead, "...")
        items.insert(lead, Ellipsis)
    if b.draw(st.booleans()):
        at = b.draw(st.integers(0, len(texts)))
        texts.insert(at, "None")
        items.insert(at, None)
    out_shape = _pytorch_index_shape(shape, items)
    assume(len(out_shape) <= MAX_RANK)
    b.add(f"{a}[{', '.join(texts)}]", (a,), out_shape)


# ---- softmax, reshaping ---------------------------------------------------------------------------
SOFTMAX = ("{a}.softmax(dim={d})", "{a}.log_softmax(dim={d})", "jg.nn.functional.softmax({a}, dim={d})",
           "jg.nn.functional.log_softmax({a}, dim={d})")


def softmax(b: _Builder) -> None:
    a = b.pick()
    d = _dims(b.draw, len(b.shapes[a]), tuples=False)
    b.add(b.draw(st.sampled_from(SOFTMAX)).format(a=a, d=d), (a,), b.shapes[a])


def _factored_shape(draw, numel: int) -> tuple[int, ...]:
    """A shape of ``numel`` elements: its prime factors dealt into up to three dimensions, with ones
    (for no elements, some sizes and a 0)."""
    if numel == 0:
        dims = draw(st.lists(SIZES, max_size=2))
        return tuple(dims[:(at := draw(st.integers(0, len(dims))))] + [0] + dims[at:])
    factors, n, p = [], numel, 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    rank = draw(st.integers(0 if numel == 1 else 1, 3))
    dims = [1] * rank
    for f in factors:
        dims[draw(st.integers(0, rank - 1))] *= f
    return tuple(dims)


def reshaping(b: _Builder) -> None:
    a = b.pick()
    shape = b.shapes[a]
    rank = len(shape)
    kinds = ["reshape", "unsqueeze", "squeeze", "flatten", "expand", "transpose"] + (["permute"] if rank else [])
    kind = b.draw(st.sampled_from(kinds + (["mT"] if rank >= 2 else []) + (["T"] if rank == 2 else [])))
    if kind == "reshape":
        new = _factored_shape(b.draw, math.prod(shape))
        written = list(new)
        if new and b.draw(st.booleans()):
            written[b.draw(st.integers(0, len(new) - 1))] = -1
        b.add(f"{a}.reshape({', '.join(map(str, written)) or '()'})", (a,), new)
    elif kind == "unsqueeze":
        d = b.draw(st.integers(-rank - 1, rank))
        assume(rank < MAX_RANK)
        b.add(f"{a}.unsqueeze({d})", (a,), np.expand_dims(np.empty(shape), d).shape)
    elif kind == "squeeze":
        if b.draw(st.booleans()):
            b.add(f"{a}.squeeze()", (a,), tuple(s for s in shape if s != 1))
        else:
            d = _dims(b.draw, rank, tuples=False)
            b.add(f"{a}.squeeze({d})", (a,), tuple(s for i, s in enumerate(shape) if i != d % rank or s != 1))
    elif kind == "flatten":
        b.add(f"{a}.flatten()", (a,), (math.prod(shape),))
    elif kind == "expand":
        new = tuple(b.draw(SIZES) if s == 1 else s for s in shape)
        lead = tuple(b.draw(st.lists(SIZES, max_size=MAX_RANK - rank)))
        b.add(f"{a}.expand({', '.join(map(str, lead + new)) or '()'})", (a,), lead + new)
    elif kind == "transpose":
        d0, d1 = _dims(b.draw, rank, tuples=False), _dims(b.draw, rank, tuples=False)
        b.add(f"{a}.transpose({d0}, {d1})", (a,), np.swapaxes(np.empty(shape), d0, d1).shape if rank else ())
    elif kind == "permute":
        order = b.draw(st.permutations(range(rank)))
        b.add(f"{a}.permute({', '.join(map(str, order))})", (a,), tuple(shape[i] for i in order))
    else:
        b.add(f"{a}.{kind}", (a,), shape[:-2] + shape[:-3:-1])


def joining(b: _Builder) -> None:
    """``jg.cat([a, b], dim=d)`` of values whose shapes differ along ``d`` only (a repeated
    sometimes), or ``jg.stack([a, b], dim=d)`` of values of one shape."""
    if b.draw(st.booleans()):
        a = b.pick(lambda shape: len(shape) >= 1)
        shape = b.shapes[a]
        d = _dims(b.draw, len(shape), tuples=False)
        along = d % len(shape)
        same_but_along = lambda s: len(s) == len(shape) and all(x == y for i, (x, y) in enumerate(zip(s, shape)) if i != along)  # noqa: E731
        other = b.pick(same_but_along, lambda: shape[:along] + (b.draw(SIZES),) + shape[along + 1:])
        parts = [a, other] + ([a] if b.draw(st.booleans()) else [])
        size = sum(b.shapes[p][along] for p in parts)
        b.add(f"jg.cat([{', '.join(parts)}], dim={d})", (a, other), shape[:along] + (size,) + shape[along + 1:])
    else:
        a = b.pick(lambda shape: len(shape) < MAX_RANK)
        shape = b.shapes[a]
        other = b.pick(lambda s: s == shape, lambda: shape)
        d = b.draw(st.integers(-len(shape) - 1, len(shape)))
        b.add(f"jg.stack([{a}, {other}], dim={d})", (a, other), np.stack([np.empty(shape)] * 2, axis=d).shape)


RULES = (unary, binary, with_number, reduction, matmul, indexing, softmax, reshaping, joining)


@st.composite
def programs(draw, max_steps: int = 6, odd_inputs: bool = False) -> Program:
    """A program of 1 to ``max_steps`` steps whose loss depends on at least one input that requires
    grad; with ``odd_inputs``, its inputs may be of size 0 or laid out other than C-contiguous."""
    b = _Builder(draw, odd_inputs)
    b.new_input(draw(shapes(zero=odd_inputs)), requires_grad=True)
    for _ in range(draw(st.integers(1, max_steps))):
        draw(st.sampled_from(RULES))(b)
    assume(b.depends_on_a_grad_input())
    return b.program(draw(st.integers(0, 2**32 - 1)))
