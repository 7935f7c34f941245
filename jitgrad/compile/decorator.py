"""``jitgrad.compile``: a decorator that traces a function on its first call and runs compiled graphs.

Per call: the guard key (``guards.py``) and the exact shapes pick a program; a miss looks the call up
in the warm-start index (``warm_index.py``), else traces and lowers one (``capture.py``,
``lowering.py``) with the backend of the inputs' device (or of ``device=``): the key holds each
tensor's device, so CPU and CUDA calls never share a program. What cannot be compiled exactly (an op
without a lowering, a tensor's value read as a Python value, hooks inside) runs eagerly after one
warning, or raises ``CompileError`` with ``fullgraph=True``. Anomaly mode always runs eagerly: its
reports name eager nodes. Called while another function is being traced (a compiled function inside
a compiled function, or under ``fx.trace``), it runs its Python so that its ops join the outer graph.
After ``MAX_RECOMPILES`` recompiles (or ``recompile_limit``) the function runs eagerly for keys it has not
seen; with ``fullgraph=True`` the next recompile raises ``CompileError`` instead, as in PyTorch.

The tracing half (``capture``, ``lowering``, ``loss_program``, ``templates`` and ``jitgrad.fx`` under
them) is imported where a call first needs it, inside the methods that trace, check or describe a
miss: a process whose calls all come from the warm-start index never loads it (issue 18; the test in
tests/compile/test_llvm_backend.py lists what such a process must not import).
"""
from __future__ import annotations

import functools
import sys
import types
import warnings
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..autograd import anomaly_mode, forward_ad, grad_mode
from ..autograd.differentiate import grad as autograd_grad
from ..autograd.saved_tensor import saving_hooks
from ..ops.registry import observed
from ..random import default_generator
from ..signatures import positional_names
from ..tensor import Tensor
from . import guards, placement, warm_index
from .backend import INTERPRETER, Backend, get_backend
from .cache import DiskCache
from .check_against_eager import CompileCheckError, Snapshot, compare
from .collection_pause import cycle_collection_paused
from .compiled_function import InputLayout, NumberInputs, StepProgram, arrays_of, logs
from .explain import Explanation
from .free_variables import find_free_variables
from .pytree import call_leaf_paths, flatten
from .sources import Source, source_of_path

if TYPE_CHECKING:
    from .capture import Captured, GraphInput
    from .loss_program import LossProgram

MAX_RECOMPILES = 8
EAGER = "eager"
NO_DYNAMIC: frozenset[int] = frozenset()


class _FailedTrace:
    """What a call whose trace raised an exception of the function's own runs: the function eagerly.
    Only once eager mode has returned (the failure was the trace's, not the function's) is the call
    filed as eager by ``commit``, so that later such calls neither trace again nor lose the error a
    bad input raises."""
    __slots__ = ("error", "commit")

    def __init__(self, error: Exception, commit: Callable[[], Any]) -> None:
        self.error, self.commit = error, commit


class CompileError(RuntimeError):
    """``fullgraph=True`` and the function cannot be compiled whole (names the op and source line)."""


class CompileWarning(UserWarning):
    """A compiled function falls back to eager execution."""


def _caller(depth: int = 2) -> str:
    frame = sys._getframe(depth)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _free_kind(inp: GraphInput) -> str:
    """The free guard kind of a graph input read from outside the arguments."""
    return "number" if inp.number else "array" if inp.array else "tensor"


class CompiledFunction:
    """What ``@jitgrad.compile`` returns: call it like the function; ``explain`` shows what it runs."""

    def __init__(self, fn: Callable, *, device: Any = None, fastmath: bool = False,
                 parallel: bool | None = None, cache: bool = True, fullgraph: bool = False,
                 check: bool = False, dynamic: bool | None = None, interpreted: bool = False,
                 recompile_limit: int | None = None, name: str | None = None) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.name = name or getattr(fn, "__name__", type(fn).__name__)  # what its logs and warnings call it
        self.recompile_limit = MAX_RECOMPILES if recompile_limit is None else recompile_limit
        self.device = None if device is None else str(device)  # None: the inputs' device, call by call
        self.dynamic = dynamic        # torch.compile's: None, automatic; True, numbers from the start; False, never
        self.interpreted = interpreted  # backend="aot_eager": CPU graphs run on the interpreter
        self._backends: dict[str, Backend] = {}
        self.backend = self._backend_for(device or placement.CPU)  # the default device's, said by repr
        self.options = {"fastmath": fastmath, "parallel": parallel}
        self.fullgraph, self.check = fullgraph, check
        self.disk_cache = DiskCache() if cache else None
        self._free = guards.FreeGuards()
        self._tables: dict[int, dict[tuple, Any]] = {}  # programs, by how many free guards their key has
        # Every key traced: the key, its free guards, its leaves' sources and its number of arguments
        # (what its labels are made of, when a miss is described).
        self._seen: list[tuple[tuple, int, list[Source], int]] = []
        self._order: list[int] = []  # ids of the programs, in the order they were built
        self._dynamic: dict[Any, frozenset[int]] = {}  # per argument spec: key positions of run-time numbers
        self._static: dict[Any, set[int]] = {}         # ... and of numbers the function needs by value
        self._static_free: frozenset = frozenset()     # free run-time numbers it needs by value (sources)
        self._reasons: dict[tuple, str] = {}
        # programs traced for outcomes of comparisons of run-time numbers, by key (``fx.numbers``), and
        # the outcomes whose trace failed, as (program, index of its first comparison that changed)
        self._variants: dict[tuple, list[Any]] = {}
        self._eager_outcomes: set[tuple[int, int]] = set()
        self._names_by_count: dict[int, list[str]] = {}
        self.recompiles = 0
        self._eager_from_now = False
        self._warned: set[str] = set()
        self.log: list[str] = []       # one line per (re)compile: which guard failed, where
        # its own state, which the free-variable walk leaves out of the attributes a function reads as
        # ``f.scale`` when ``f`` is this object (``free_variables.wrapper_attributes``)
        self.own_attributes = frozenset(vars(self)) - frozenset(vars(fn) if hasattr(fn, "__dict__") else ()) \
            | {"own_attributes"}

    # ---- calling ---------------------------------------------------------------------------------------
    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        """``@jitgrad.compile`` on a ``def`` in a class body binds as the function would: the instance is
        the first argument, an object whose attributes are walked and guarded (each instance its own
        programs), where without this ``model.loss(x)`` called the function without ``self``."""
        return self if instance is None else types.MethodType(self, instance)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if anomaly_mode.state.enabled or forward_ad.state.level is not None or self._eager_from_now or observed():
            return self.fn(*args, **kwargs)  # inside another trace, its ops become part of that graph
        if saving_hooks():
            reason = ("saved-tensor hooks are active (saved_tensors_hooks, save_on_cpu, "
                      "allow_mutation_on_saved_tensors): eager mode passes what its "
                      "graph saves through them, which a compiled call does not save")
            if self.fullgraph:
                raise CompileError(f"jitgrad.compile({self.name}, fullgraph=True) cannot run this call: {reason}")
            self._warn(f"running {self.name} eagerly for such calls: {reason}", "saved-tensor hooks")
            return self.fn(*args, **kwargs)
        leaves, spec = flatten(args, kwargs)
        free = self._free.read(args, kwargs)
        program = None
        if free is not None:
            table = self._tables.get(len(free))
            if table is not None:
                program = table.get(guards.call_key(spec, leaves, free, self._free.kinds(),
                                                    self._dynamic.get(spec, NO_DYNAMIC)))
        if program is None:
            program, free = self._program_for(args, kwargs, leaves, spec, _caller())
        if program is not EAGER and type(program) is not _FailedTrace and program.numbers.checked \
                and not program.numbers.holds(leaves + list(free)):
            program, free = self._program_for(args, kwargs, leaves, spec, _caller(), program)
        if program is EAGER:
            return self.fn(*args, **kwargs)
        if type(program) is _FailedTrace:
            result = self.fn(*args, **kwargs)   # the function's own exception comes again here
            self._warn(f"running {self.name} eagerly for such calls: {program.error}")
            program.commit()
            return result
        layout = program.layout
        state = None if layout.random is None else layout.take_state()  # the common case pays no call
        inputs = layout.gather(leaves + list(free), state)
        if program.kind == "step":
            result = self._run_step(program, inputs, args, kwargs, state)
        else:
            result = self._run_loss(program, inputs, args, kwargs, state, leaves, free)
        if grad_mode.state.inference:
            from .templates import mark_inference
            mark_inference(result, leaves)
        return result

    def _run_step(self, program: StepProgram, inputs: list, args: tuple, kwargs: dict,
                  state: np.ndarray | None) -> Any:
        if program.writes_shared_memory(inputs):
            from .loss_program import replay
            reason = ("it writes in place into an input that shares memory with another input (views of one tensor "
                      "passed or captured separately, or one tensor set as the .grad of two): the compiled program "
                      "reads every input before it writes any, where eager mode sees each write through the other "
                      "at once")
            if self.fullgraph:
                raise CompileError(f"jitgrad.compile({self.name}, fullgraph=True) cannot run this call: {reason}")
            self._warn(f"running {self.name} eagerly for such calls: {reason}", "shared memory")
            return replay(self.fn, args, kwargs, state)
        if program.written and not program.writes_allowed(inputs):
            from .loss_program import replay
            return replay(self.fn, args, kwargs, state)  # raises eager's error: an expanded view is read-only
        if not self.check:
            return program.run(inputs)
        from .loss_program import replay
        from .templates import tensor_leaves
        tensors = [t for t in inputs if isinstance(t, Tensor)]
        snapshot = Snapshot(tensors)
        expected = replay(self.fn, args, kwargs, state)
        eager_state = snapshot.after()
        snapshot.restore()
        result = program.run(inputs)
        for i, (a, b) in enumerate(zip(tensor_leaves(result), tensor_leaves(expected))):
            compare(f"output {i}", a, b)
        for i, (t, (data, grad)) in enumerate(zip(tensors, eager_state)):
            compare(f"input {i} after the call", t, data)
            compare(f"input {i}.grad after the call", t._grad, grad)
        return result

    def _run_loss(self, program: LossProgram, inputs: list, args: tuple, kwargs: dict,
                  state: np.ndarray | None, leaves: list, free: tuple) -> Any:
        call = program.new_call(self.fn, args, kwargs, inputs, state,  # a loss program comes from a trace:
                                functools.partial(self._reads_changed, args, kwargs, leaves, free))  # its module
        if not self.check:                                                               # is imported by then
            return program.run(inputs, call)
        from .loss_program import replay
        from .templates import tensor_leaves
        expected = replay(self.fn, args, kwargs, state)  # a loss writes nothing: eager runs on the inputs themselves

        def check(grads, result, mask):
            outs = [t for t, d in zip(tensor_leaves(expected), program.differentiable) if d]
            pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o._requires_grad]
            wanted = [inputs[i] for i in program.wanted]
            eager = autograd_grad([o for o, _ in pairs], wanted, [g for _, g in pairs], retain_graph=True,
                                  allow_unused=True) if pairs else [None] * len(wanted)
            for i, (a, b, m) in enumerate(zip(result, eager, mask)):
                if m:
                    compare(f"gradient of input {program.wanted[i]}", a, b)
        result = program.run(inputs, call, check)
        for i, (a, b) in enumerate(zip(tensor_leaves(result), tensor_leaves(expected))):
            compare(f"output {i}", a, b)
        return result

    def _reads_changed(self, args: tuple, kwargs: dict, leaves: list, free: tuple) -> str | None:
        """What a loss's call read (its argument leaves and free variables) that reads otherwise now,
        named as the log names it; None if nothing does. The eager re-run behind a ``create_graph=True``
        backward must differentiate what the call computed. (Later traces may have added free variables
        after the call's: those are not compared.)"""
        from .loss_program import first_change
        now = list(self._free.read(args, kwargs) or ())[:len(free)]
        index = first_change(leaves + list(free), flatten(args, kwargs)[0] + now)
        if index is None:
            return None
        labels = self._call_labels(args, kwargs, len(free))
        return labels[guards.HEADER + index] if guards.HEADER + index < len(labels) - 1 else "what it reads"

    # ---- compiling -------------------------------------------------------------------------------------
    def _names(self, count: int) -> list[str]:
        names = self._names_by_count.get(count)
        if names is None:
            names = self._names_by_count[count] = positional_names(self.fn, count)
        return names

    def _labels(self, leaf_sources: list[Source], arg_count: int, free_count: int) -> list[str]:
        return guards.labels(leaf_sources, self._free.entries[:free_count], self._names(arg_count))

    def _call_labels(self, args: tuple, kwargs: dict, free_count: int) -> list[str]:
        return self._labels([source_of_path(p) for p in call_leaf_paths(args, kwargs)], len(args), free_count)

    def _key(self, spec: Any, leaves: list, free: tuple) -> tuple:
        return guards.call_key(spec, leaves, free, self._free.kinds(), self._dynamic.get(spec, NO_DYNAMIC))

    def _find(self, spec: Any, leaves: list, free: tuple) -> tuple[tuple, Any]:
        """The key of this call over every free guard, and a program traced for it before (under a
        key with fewer free guards, when it was traced before later traces added guards), or None."""
        kinds, dynamic = self._free.kinds(), self._dynamic.get(spec, NO_DYNAMIC)
        key = guards.call_key(spec, leaves, free, kinds, dynamic)
        for count, table in self._tables.items():
            program = table.get(key if count == len(free) else
                                guards.call_key(spec, leaves, free[:count], kinds, dynamic))
            if program is not None:
                self._tables.setdefault(len(free), {})[key] = program
                return key, program
        return key, None

    def _miss(self, spec: Any, leaves: list, free: tuple) -> guards.Miss | None:
        """Why no program matched: the first failed guard against the closest key traced before
        (numbers that are run-time inputs aside)."""
        if not self._seen:
            return None
        kinds, ignore = self._free.kinds(), self._dynamic.get(spec, NO_DYNAMIC)

        def new_key(count: int) -> tuple:
            return guards.call_key(spec, leaves, free[:count], kinds)
        old, count, leaf_sources, arg_count = min(reversed(self._seen),
                                                  key=lambda e: guards.distance(e[0], new_key(e[1]), ignore))
        return guards.describe_miss(old, new_key(count), self._labels(leaf_sources, arg_count, count), ignore)

    def _promote(self, spec: Any, leaves: list, miss: guards.Miss, args: tuple, kwargs: dict) -> str:
        """When only Python-number arguments changed, they become run-time inputs ("automatic
        dynamic"): the next trace takes them as inputs, later values need no trace at all."""
        arguments = range(guards.HEADER, guards.HEADER + len(leaves))
        promoted = set(miss.numbers)
        if self.dynamic is False or not promoted or not promoted <= set(arguments) \
                or promoted & self._static.get(spec, set()):
            return ""
        self._dynamic[spec] = self._dynamic.get(spec, NO_DYNAMIC) | promoted
        labels = self._call_labels(args, kwargs, 0)
        return "; made dynamic (a run-time input from now on): " + ", ".join(labels[p] for p in sorted(promoted))

    def _program_for(self, args: tuple, kwargs: dict, leaves: list, spec: Any, caller: str,
                     compared: Any = None) -> tuple[Any, tuple]:
        """The program for a call (traced now where none fits), and the call's free values.
        ``compared``: the program the call's key found, whose comparisons of run-time numbers come
        out otherwise for this call (``fx.numbers``): another traced for this call's outcomes runs."""
        free = self._free.read(args, kwargs)
        miss: guards.Miss | None = None
        if self.dynamic and spec not in self._dynamic:  # dynamic=True: number arguments are inputs from the start
            self._dynamic[spec] = frozenset(guards.HEADER + i for i, v in enumerate(leaves) if type(v) in (int, float))
        if free is None:  # a guarded place cannot be read as it was (an attribute deleted...): start over
            self._free, self._tables, self._seen, self._variants = guards.FreeGuards(), {}, [], {}
            self._eager_outcomes = set()
            miss = guards.Miss("a value the function reads from outside is no longer where it was (an attribute "
                               "or item was removed)", False, [])
            free = ()
        elif compared is not None:
            key = self._key(spec, leaves, free)
            values = leaves + list(free)
            for program in self._variants.get(key, ()):
                if program.numbers.holds(values):
                    self._tables.setdefault(len(free), {})[key] = program
                    return program, free
            outcome = (id(compared), compared.numbers.first_change(values))
            if outcome in self._eager_outcomes:  # its trace failed once: eager, the other outcomes compiled
                return EAGER, free
            miss = guards.Miss("; ".join(compared.numbers.outcomes(values)), False, [])
        else:
            key, program = self._find(spec, leaves, free)
            if program is not None:
                return program, free
            miss = self._miss(spec, leaves, free)
        retrace = None
        if miss is not None and miss.retrace:
            retrace = f"retracing {self.name} for new sizes: {miss.reason} (called from {caller})"
        elif miss is not None:
            if self.recompiles >= self.recompile_limit:
                if self.fullgraph:  # as torch.compile's FailOnRecompileLimitHit
                    raise CompileError(f"jitgrad.compile({self.name}, fullgraph=True) reached its recompile limit "
                                       f"({self.recompile_limit}); the last change: {miss.reason}")
                self._eager_from_now = True
                self._warn(f"{self.name} was recompiled {self.recompiles} times; running it eagerly from now "
                           f"on (the last change: {miss.reason})", "recompiles")
                return EAGER, free
            self.recompiles += 1
            promoted = self._promote(spec, leaves, miss, args, kwargs)
            failed = "guard failed" if compared is None else "a comparison of run-time numbers changed"
            self._note(f"recompiling {self.name} (recompile {self.recompiles}): {failed}: {miss.reason}"
                       f"{promoted} (called from {caller})")
        reason = None
        warm_key = self._warm_key(spec, leaves)
        program = None if warm_key is None else self._from_index(warm_key, leaves)
        if program is not None:
            return program, self._register(program, args, kwargs, leaves, spec, None)
        from .capture import EagerThisCall, RaisedWhileTraced, TraceError, Unsupported
        try:
            with cycle_collection_paused():
                program = self._build_specializing(args, kwargs, leaves, spec)
        except RaisedWhileTraced as error:
            if self.fullgraph:
                raise CompileError(f"jitgrad.compile({self.name}, fullgraph=True) cannot compile it: the "
                                   f"function raised {type(error.error).__name__} while traced") from error.error
            if compared is not None:
                return _FailedTrace(error, lambda: self._eager_outcomes.add(outcome)), free
            reason = str(error)
            return _FailedTrace(error, lambda: self._register(EAGER, args, kwargs, leaves, spec, reason)), free
        except EagerThisCall:  # an optimizer's first step: eager now, compiled from the next call
            return EAGER, free
        except (TraceError, Unsupported) as error:
            self._fall_back(error)
            if compared is not None:  # keep the key's compiled outcomes: only this one runs eagerly
                self._eager_outcomes.add(outcome)
                return EAGER, self._free.read(args, kwargs) or ()
            program, reason = EAGER, str(error)
        free = self._register(program, args, kwargs, leaves, spec, reason)
        if retrace is not None and program is not EAGER:
            reused = all(item.reused for item in program.lowered_graphs)
            self._note(f"{retrace}; {'kernels reused' if reused else 'the backend compiled new kernels'}")
        if warm_key is not None and program is not EAGER:
            self._store_index(warm_key, program, leaves)
        return program, free

    def _register(self, program: Any, args: tuple, kwargs: dict, leaves: list, spec: Any, reason: str | None) -> tuple:
        """Files a program (or EAGER) under the call's key over every free guard now known; returns
        the call's free values."""
        free = self._free.read(args, kwargs) or ()  # the trace may have added free guards
        key = self._key(spec, leaves, free)
        if reason is not None:
            self._reasons[key] = reason
        if program is not EAGER and program.numbers.checked:
            self._variants.setdefault(key, []).append(program)
        self._tables.setdefault(len(free), {})[key] = program
        self._order.append(id(program))
        self._seen.append((guards.call_key(spec, leaves, free, self._free.kinds()), len(free),
                           [source_of_path(p) for p in call_leaf_paths(args, kwargs)], len(args)))
        return free

    # ---- the warm-start index (warm_index.py) ------------------------------------------------------------
    def _warm_key(self, spec: Any, leaves: list) -> dict[str, Any] | None:
        """The call's key in the warm-start index, or None where the index is not used for it (said
        with ``JITGRAD_LOG=cache`` when the reason is the function or its arguments)."""
        if self.disk_cache is None or self.check:
            return None
        if self.device not in (None, placement.CPU) or \
                any(type(v._data) is not np.ndarray for v in leaves if isinstance(v, Tensor)):
            return None  # a CUDA call (or a call on several devices, which the trace refuses)
        backend = self._backend_for(placement.CPU)
        if backend.from_warm_state is None:
            return None
        if self._dynamic.get(spec) or self._static.get(spec) or self._static_free:
            self._index_log("not used: some of its numbers are run-time inputs or guarded constants now")
            return None
        try:
            return warm_index.index_key(self.fn, spec, leaves, backend, self.options)
        except warm_index.NotIndexed as reason:
            self._index_log(f"not used: {reason}")
            return None

    def _from_index(self, key: dict[str, Any], leaves: list) -> Any:
        """The program the index holds for ``key``, its in-process guards registered as a trace would
        register them (the free-variable walk gives them without running the function), or None."""
        found = self.disk_cache.of_kind("index").load_index(key)
        if found is None:
            self._index_log("no entry for this code and these arguments: tracing")
            return None
        walked = find_free_variables(self.fn, [])
        if walked.unguardable or walked.tensors or walked.arrays:
            self._index_log("not used: the function reads tensors or arrays from outside its arguments")
            return None
        backend = self._backend_for(placement.CPU)
        try:
            program = warm_index.restore(*found, backend, self.disk_cache.of_kind("objects"))
        except (KeyError, TypeError, ValueError) as error:  # a verified entry of another layout
            self._index_log(f"not used: the entry is malformed ({type(error).__name__}: {error})")
            return None
        if program is None:
            self._index_log("not used: its kernel's object code is not in the cache: tracing")
            return None
        for source, kind, value in walked.guards:
            self._free.add(source, kind, value)
        self._index_log(f"used: {program.lowered.label} runs without tracing")
        return program

    def _store_index(self, key: dict[str, Any], program: Any, leaves: list) -> None:
        try:
            entry, data = warm_index.describe(program, len(leaves), program.backend)
        except warm_index.NotIndexed as reason:
            self._index_log(f"not stored: {reason}")
            return
        if self.disk_cache.of_kind("index").store_index(key, entry, data):
            self._index_log("stored: a later process runs this call's program without tracing")

    def _index_log(self, line: str) -> None:
        DiskCache.log(f"warm-start index: {self.name}: {line}")

    def _build_specializing(self, args: tuple, kwargs: dict, leaves: list, spec: Any) -> Any:
        """``_build`` with the spec's run-time numbers; a number the trace needs as a Python value
        stays a guarded constant from then on (said in the log), and the trace runs again."""
        from .capture import NeedsValues
        while True:
            dynamic = self._dynamic.get(spec, NO_DYNAMIC)
            try:
                return self._build(args, kwargs, leaves, frozenset(p - guards.HEADER for p in dynamic
                                                                   if type(leaves[p - guards.HEADER]) in (int, float)))
            except NeedsValues as needed:
                positions = {guards.HEADER + i for i in needed.leaves}
                self._static.setdefault(spec, set()).update(positions)
                self._dynamic[spec] = dynamic - positions
                self._static_free |= needed.sources
                labels = self._call_labels(args, kwargs, 0)
                names = [labels[p] for p in sorted(positions)] + sorted(s.describe() for s in needed.sources)
                self._note(f"{self.name}: {', '.join(names)} stays a guarded constant: {needed}")

    def _layout(self, captured: Captured, args: tuple, kwargs: dict, leaves: list) -> InputLayout:
        """Registers the trace's free guards and inputs; where each input is among a call's values."""
        for source, kind, value in captured.free.guards:
            self._free.add(source, kind, value)
        leaf_index = {source_of_path(p): i for i, p in enumerate(call_leaf_paths(args, kwargs))}
        positions: list[int | None] = []
        random = None
        for inp in captured.inputs:
            for source in inp.sources:
                if source not in leaf_index:  # read from outside, or from inside an object argument
                    self._free.add(source, _free_kind(inp))
        for index, inp in enumerate(captured.inputs):
            if inp.random:
                random = index
            if inp.grad_of is not None or inp.random:
                positions.append(None)
                continue
            first = inp.sources[0]
            positions.append(leaf_index[first] if first in leaf_index else
                             len(leaves) + self._free.index(first, _free_kind(inp)))
        return InputLayout(positions, [inp.grad_of for inp in captured.inputs], random, captured.draws)

    def _build(self, args: tuple, kwargs: dict, leaves: list, dynamic: frozenset[int]) -> Any:
        from ..fx.passes.hoist_numbers import hoist_numbers
        from .capture import Unsupported, capture
        from .loss_program import loss_program
        from .lowering import lower
        from .templates import alias_inputs, flatten_output, with_tuple_types
        captured = capture(self.fn, args, kwargs, self._names(len(args)), dynamic, self._static_free,
                           runtime_free=self.dynamic is not False)
        layout = self._layout(captured, args, kwargs, leaves)
        free = self._free.read(args, kwargs)
        inputs = layout.gather(leaves + list(free), default_generator.peek())  # the state this call will draw at
        prelude = hoist_numbers(captured.graph, captured.predicates)
        names = [inp.name for inp in captured.inputs]
        positions = [names.index(n) for n in prelude.inputs]
        numbers = NumberInputs(prelude, positions, [layout.positions[i] for i in positions])
        example = arrays_of(numbers.extend(inputs))
        device = placement.call_device([v for v in inputs if isinstance(v, Tensor)], self.device,
                                       host_scalars=captured.kind == "step")
        if device != placement.CPU and captured.host_results:
            raise Unsupported("the function returns a CPU tensor computed from 0-d CPU tensors beside CUDA ones, "
                              "which its CUDA program would return on the device; return it with .to(...)")
        backend = self._backend_for(device)
        name = self.name
        if captured.kind == "step":
            graph = captured.graph
            result, grads, writes = flatten_output(graph)
            result = alias_inputs(result, graph, [inp.name for inp in captured.inputs], writes, grads,
                                  captured.returned, captured.returned_grad, captured.returned_requires_grad)
            template = (with_tuple_types(result, captured.result_types), grads, writes)
            lowered = lower(graph, backend, self.options, f"{name} (step)", captured.sources,
                            self.disk_cache, example)
            return StepProgram(lowered, template, layout, numbers, backend, frozenset(captured.grads_added_into),
                               frozenset(captured.rebound))
        return loss_program(captured, layout, numbers, backend, self.options, name, self.disk_cache, example,
                            device)

    def _backend_for(self, device: str) -> Backend:
        kind = placement.device_kind(device)
        if self.interpreted and kind != placement.CPU:
            from .unsupported import Unsupported
            raise Unsupported(f"backend='aot_eager' runs graphs on jitgrad's interpreter, on the CPU only, and this "
                              f"call's tensors are on {kind}: compile it with the default backend")
        backend = self._backends.get(kind)
        if backend is None:
            backend = self._backends[kind] = INTERPRETER if self.interpreted else get_backend(kind)
        return backend

    # ---- reporting -------------------------------------------------------------------------------------
    @property
    def programs(self) -> list[Any]:
        """The programs traced so far, in the order they were compiled (calls that run eagerly aside)."""
        found: dict[int, Any] = {}
        for programs in [*self._tables.values(), *self._variants.values()]:
            for program in (programs.values() if isinstance(programs, dict) else programs):
                if program is not EAGER:
                    found.setdefault(id(program), program)
        return sorted(found.values(), key=lambda p: self._order.index(id(p)))

    def _note(self, line: str) -> None:
        self.log.append(line)
        if logs("recompiles"):
            print(f"jitgrad.compile: {line}", file=sys.stderr)

    def _warn(self, message: str, kind: str = "fallback") -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            warnings.warn(f"jitgrad.compile: {message}", CompileWarning, stacklevel=4)

    def _fall_back(self, error: BaseException) -> None:
        if self.fullgraph:
            raise CompileError(f"jitgrad.compile({self.name}, fullgraph=True) cannot compile it: "
                               f"{error}") from None
        self._warn(f"running {self.name} eagerly: {error}")

    def explain(self, *args: Any, **kwargs: Any) -> Explanation:
        """What a call with these arguments runs: the IR before and after the passes, the fusion groups,
        the memory plan and the generated source (compiling first if needed; nothing is run)."""
        leaves, spec = flatten(args, kwargs)
        program, free = self._program_for(args, kwargs, leaves, spec, _caller())
        if program is not EAGER and type(program) is not _FailedTrace and not program.numbers.holds(leaves + list(free)):
            program, free = self._program_for(args, kwargs, leaves, spec, _caller(), program)
        key = self._key(spec, leaves, free)
        reason = self._reasons.get(key) if program is EAGER else None
        if type(program) is _FailedTrace:   # not run: whether eager mode raises too is not known
            program, reason = EAGER, f"{program.error} (if eager mode does not raise it too)"
        if program is EAGER and reason is None:
            reason = ("calls after the limit of recompiles run eagerly" if self._eager_from_now
                      else "a trace of this call failed")
        backend = self.backend if program is EAGER else program.backend
        return Explanation(self.name, backend.name, program, reason, list(self.log))

    def __repr__(self) -> str:
        return f"<jitgrad.compile({self.name}) on {self.backend.name}>"


__all__ = ["CompileCheckError", "CompileError", "CompileWarning", "CompiledFunction", "MAX_RECOMPILES"]
