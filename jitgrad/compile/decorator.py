"""``jitgrad.compile``: a decorator that traces a function on its first call and runs compiled graphs.

Per call: the guard key (``guards.py``) and the exact shapes pick a program; a miss traces and lowers
one (``capture.py``, ``compiled_function.py``). What cannot be compiled exactly (an op without a
lowering, a tensor's value read as a Python value, hooks inside) runs eagerly after one warning, or
raises ``CompileError`` with ``fullgraph=True``. Anomaly mode always runs eagerly: its reports name
eager nodes. Called while another function is being traced (a compiled function inside a compiled
function, or under ``fx.trace``), it runs its Python so that its ops join the outer graph. After ``MAX_RECOMPILES`` recompiles the function runs eagerly for keys it has not seen.
"""
from __future__ import annotations

import functools
import sys
import warnings
from typing import Any, Callable

import numpy as np

from ..autograd import anomaly_mode
from ..autograd.differentiate import grad as autograd_grad
from ..autograd.versions import version_counter
from ..fx.passes import partition_joint
from ..fx.tracer import TraceError, parameter_names
from ..ops.registry import observed
from ..tensor import Tensor
from . import guards
from .backend import get_backend
from .cache import DiskCache
from .capture import (Unsupported, capture_call, capture_loss, flatten_output, tensor_leaves,
                      with_tuple_types)
from .compiled_function import LossProgram, StepProgram, logs, lower
from .explain import Explanation

MAX_RECOMPILES = 8
EAGER = "eager"


class CompileError(RuntimeError):
    """``fullgraph=True`` and the function cannot be compiled whole (names the op and source line)."""


class CompileWarning(UserWarning):
    """A compiled function falls back to eager execution."""


class CompileCheckError(AssertionError):
    """``check=True``: the compiled function disagrees with eager execution."""


def _caller(depth: int = 2) -> str:
    frame = sys._getframe(depth)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _tolerances(dtype: np.dtype) -> tuple[float, float]:
    return (1e-4, 1e-5) if np.dtype(dtype).itemsize <= 4 else (1e-7, 1e-9)


def _compare(what: str, compiled: Any, eager: Any) -> None:
    a = None if compiled is None else np.asarray(compiled._data if isinstance(compiled, Tensor) else compiled)
    b = None if eager is None else np.asarray(eager._data if isinstance(eager, Tensor) else eager)
    if a is None and b is None:
        return
    if a is None or b is None:  # a missing gradient is a zero one
        a = np.zeros_like(b) if a is None else a
        b = np.zeros_like(a) if b is None else b
    if a.shape != b.shape or a.dtype != b.dtype:
        raise CompileCheckError(f"check=True: {what}: compiled gives {a.dtype}{list(a.shape)}, eager "
                                f"{b.dtype}{list(b.shape)}")
    rtol, atol = _tolerances(a.dtype) if a.dtype.kind == "f" else (0.0, 0.0)
    scale = float(np.max(np.abs(b))) if b.size and b.dtype.kind == "f" else 1.0
    if not np.allclose(a, b, rtol=rtol, atol=atol * max(scale, 1.0), equal_nan=True):
        worst = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
        raise CompileCheckError(f"check=True: {what} differs from eager (largest difference {worst:.3g})")


def _clone_args(args: tuple) -> tuple[tuple, list[Tensor]]:
    clones: list[Tensor] = []
    out = []
    for a in args:
        if isinstance(a, Tensor):
            c = Tensor._make(a._data.copy(), a._requires_grad)
            if a._grad is not None:
                c._grad = Tensor._make(a._grad._data.copy())
            clones.append(c)
            a = c
        out.append(a)
    return tuple(out), clones


class CompiledFunction:
    """What ``@jitgrad.compile`` returns: call it like the function; ``explain`` shows what it runs."""

    def __init__(self, fn: Callable, *, device: str = "cpu", fastmath: bool = False,
                 parallel: bool | None = None, cache: bool = True, fullgraph: bool = False,
                 check: bool = False) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.name = getattr(fn, "__name__", "function")
        self.backend = get_backend(device)
        self.options = {"fastmath": fastmath, "parallel": parallel}
        self.fullgraph, self.check = fullgraph, check
        self.disk_cache = DiskCache() if cache else None
        self._programs: dict[tuple, Any] = {}
        self._by_fast_key: dict[tuple, Any] = {}  # the same programs, by guards.fast_key
        self._names_by_count: dict[int, list[str]] = {}
        self._reasons: dict[tuple, str] = {}
        self._guards: list[tuple] = []
        self._specs: dict[tuple, list[tuple]] = {}
        self.recompiles = 0
        self._eager_from_now = False
        self._warned: set[str] = set()
        self.log: list[str] = []       # one line per (re)compile: which guard failed, where

    # ---- calling ---------------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if anomaly_mode.state.enabled or self._eager_from_now or observed():
            return self.fn(*args, **kwargs)  # inside another trace, its ops become part of that graph
        key = guards.fast_key(args) if not kwargs else None
        program = self._by_fast_key.get(key) if key is not None else None
        if program is None:
            _, program = self._program_for(args, kwargs, _caller())
            if key is not None:
                self._by_fast_key[key] = program
        if program is EAGER:
            return self.fn(*args, **kwargs)
        tensors = [a for a in args if isinstance(a, Tensor)]
        if program.kind == "step":
            return self._run_step(program, tensors, args, kwargs)
        return self._run_loss(program, tensors, args, kwargs)

    def _run_step(self, program: StepProgram, tensors: list[Tensor], args: tuple, kwargs: dict) -> Any:
        if not self.check:
            return program.run(tensors)
        eager_args, clones = _clone_args(args)
        expected = self.fn(*eager_args, **kwargs)
        result = program.run(tensors)
        for i, (a, b) in enumerate(zip(tensor_leaves(result), tensor_leaves(expected))):
            _compare(f"output {i}", a, b)
        names = self._names(len(args))
        tensor_names = [n for n, a in zip(names, args) if isinstance(a, Tensor)]
        for name, t, c in zip(tensor_names, tensors, clones):
            _compare(f"argument '{name}' after the call", t, c)
            _compare(f"argument '{name}'.grad after the call", t._grad, c._grad)
        return result

    def _run_loss(self, program: LossProgram, tensors: list[Tensor], args: tuple, kwargs: dict) -> Any:
        watched = [tensors[i] for i in program.saved_inputs]
        versions = [version_counter(t)[0] for t in watched]

        def eager_call(check_only: bool = False):
            """The inputs and an eager re-run (for create_graph); first, eager's check that no input
            the backward reads was modified in place since the forward."""
            if [version_counter(t)[0] for t in watched] != versions:
                raise RuntimeError("one of the variables needed for gradient computation has been modified "
                                   "by an inplace operation (an input of a compiled function)")
            return None if check_only else (tensors, self.fn(*args, **kwargs))

        check = None
        expected = None
        if self.check:
            eager_args, clones = _clone_args(args)
            expected = self.fn(*eager_args, **kwargs)

            def check(grads, result, mask):
                outs = [t for t, d in zip(tensor_leaves(expected), program.differentiable) if d]
                pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o._requires_grad]
                inputs = [clones[i] for i in program.wanted]
                eager = autograd_grad([o for o, _ in pairs], inputs, [g for _, g in pairs], retain_graph=True,
                                      allow_unused=True) if pairs else [None] * len(inputs)
                for i, (a, b, m) in enumerate(zip(result, eager, mask)):
                    if m:
                        _compare(f"gradient of input {program.wanted[i]}", a, b)
        result = program.run(tensors, eager_call, check)
        if expected is not None:
            for i, (a, b) in enumerate(zip(tensor_leaves(result), tensor_leaves(expected))):
                _compare(f"output {i}", a, b)
        return result

    # ---- compiling -------------------------------------------------------------------------------------
    def _names(self, count: int) -> list[str]:
        names = self._names_by_count.get(count)
        if names is None:
            names = self._names_by_count[count] = parameter_names(self.fn, count)
        return names

    def _program_for(self, args: tuple, kwargs: dict, caller: str) -> tuple[tuple | None, Any]:
        names = self._names(len(args))
        try:
            if any(isinstance(v, Tensor) for v in kwargs.values()):
                raise Unsupported("tensors passed as keyword arguments are not supported; pass them "
                                  "positionally")
            guard = guards.guard_key(names, args, kwargs)
        except Unsupported as error:
            self._fall_back(error)
            return None, EAGER
        spec = guards.specialization(args)
        key = (guard, spec)
        program = self._programs.get(key)
        if program is not None:
            return key, program
        retrace = None
        if guard not in self._specs:
            if self._guards:
                if self.recompiles >= MAX_RECOMPILES:
                    self._eager_from_now = True
                    self._warn(f"{self.name} was recompiled {self.recompiles} times; running it eagerly "
                               "from now on (its arguments keep changing rank, dtype, requires_grad or "
                               "non-tensor values)", "recompiles")
                    return key, EAGER
                self.recompiles += 1
                why = guards.describe_change(names, guards.closest(self._guards, guard), guard)
                self._note(f"recompiling {self.name} (recompile {self.recompiles}): guard failed: {why} "
                           f"(called from {caller})")
            self._guards.append(guard)
            self._specs[guard] = []
        else:
            why = guards.describe_specialization(
                [n for n, a in zip(names, args) if isinstance(a, Tensor)], self._specs[guard][-1], spec)
            retrace = f"retracing {self.name} for new sizes: {why} (called from {caller})"
        self._specs[guard].append(spec)
        try:
            program = self._build(args, kwargs)
        except (TraceError, Unsupported) as error:
            self._reasons[key] = str(error)
            self._fall_back(error)
            program = EAGER
        if retrace is not None and program is not EAGER:
            lowered = Explanation(self.name, self.backend.name, program, None, []).lowered
            reused = all(item.reused for item in lowered)
            self._note(f"{retrace}; {'kernels reused' if reused else 'the backend compiled new kernels'}")
        self._programs[key] = program
        return key, program

    def _build(self, args: tuple, kwargs: dict) -> Any:
        captured = capture_call(self.fn, args, kwargs)
        n_tensors = sum(isinstance(a, Tensor) for a in args)
        name = self.name
        if captured.kind == "step":
            graph = captured.graph
            tensor_names = [p.name for p in graph.placeholders][:n_tensors]
            result, grads, writes = flatten_output(graph)
            template = (with_tuple_types(result, captured.result_types), grads, writes)
            tensors = [a for a in args if isinstance(a, Tensor)]
            example = [t._data for t in tensors] + [tensors[i]._grad._data for i in captured.grad_inputs]
            lowered = lower(graph, self.backend, self.options, f"{name} (step)", captured.sources,
                            self.disk_cache, example)
            return StepProgram(lowered, template, tensor_names, captured.grad_inputs)
        loss = capture_loss(self.fn, args, kwargs)
        split = partition_joint(loss.graph)
        forward = split.forward
        template = flatten_output(forward)
        template = (with_tuple_types(template[0], loss.result_types), *template[1:])
        tensors = [a for a in args if isinstance(a, Tensor)]
        lowered = lower(forward, self.backend, self.options, f"{name} (forward)", captured.sources,
                        self.disk_cache, [t._data for t in tensors])
        stats = {"saved": split.saved, "recomputed": split.recomputed,
                 "saved_bytes_before": split.saved_bytes_before, "saved_bytes_after": split.saved_bytes_after}
        program = LossProgram(loss.graph, lowered, template[0], len(template[1]), loss.differentiable,
                              loss.wanted, self.options, self.backend, captured.sources, stats, self.disk_cache)
        primals = [p.name for p in loss.graph.placeholders][:n_tensors]
        program.saved_inputs = [i for i, p in enumerate(primals) if p in split.saved]
        if loss.wanted:  # an op without a lowering fails now, not in the middle of a backward
            out, lowered.example_out = lowered.example_out, None
            saved = out[len(out) - program.saved_count:] if program.saved_count else []
            tangents = [np.ones_like(out[i]) for i, d in program._differentiable_slots.items() if d]
            program.backward_for((True,) * len(loss.wanted), [*saved, *tangents])
        return program

    # ---- reporting -------------------------------------------------------------------------------------
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
        key, program = self._program_for(args, kwargs, _caller())
        return Explanation(self.name, self.backend.name, program, self._reasons.get(key), list(self.log))

    def __repr__(self) -> str:
        return f"<jitgrad.compile({self.name}) on {self.backend.name}>"


def compile(fn: Callable | None = None, *, device: str = "cpu", fastmath: bool = False,  # noqa: A001
            parallel: bool | None = None, cache: bool = True, fullgraph: bool = False,
            check: bool = False) -> Any:
    """``@jitgrad.compile`` or ``@jitgrad.compile(fastmath=True, ...)``: see docs/compile.md."""
    options = dict(device=device, fastmath=fastmath, parallel=parallel, cache=cache, fullgraph=fullgraph,
                   check=check)
    if fn is None:
        return lambda f: CompiledFunction(f, **options)
    return CompiledFunction(fn, **options)


__all__ = ["CompileCheckError", "CompileError", "CompileWarning", "CompiledFunction", "MAX_RECOMPILES",
           "compile"]
