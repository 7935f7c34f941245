"""Runs a random program (``random_programs.Program``) eagerly in jitgrad and in PyTorch, and compiled
in each ``Form``, and says where they disagree, with a reproduction to paste.

PyTorch, in float64, is the reference for jitgrad's eager values and gradients; jitgrad eager is the
reference for every compiled form. A program PyTorch rejects must be rejected by jitgrad with the
same exception. Each compiled function is called twice: with the inputs' first values, then with
new values written into the same tensors in place, which it must read afresh (from its arguments
and its closure alike). A whole step keeps the ``.grad``s of its first call, so that its second
accumulates into them (a ``.grad`` is then an input of its graph); a loss starts again from none.
"""
from __future__ import annotations

import contextlib

import linecache
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from hypothesis import assume

import jitgrad as jg
from random_programs import Input, Program

RTOL = 1e-10          # relative to the largest element of the expected value
LARGEST = 1e8         # programs whose values grow past this (exp of exp...) are not compared


@dataclass
class Outcome:
    """A run's loss and, per input that requires grad, its gradient (None where it got none)."""

    loss: np.ndarray
    grads: dict[str, np.ndarray | None]

    def reasonable(self) -> bool:
        values = [self.loss] + [g for g in self.grads.values() if g is not None]
        return all(np.isfinite(v).all() and np.abs(v).max(initial=0.0) < LARGEST for v in values)

    def accumulated(self, earlier: "Outcome") -> "Outcome":
        """This run's loss, with the gradients added to those an earlier run left in ``.grad``."""
        def add(a, b):
            return b if a is None else a if b is None else a + b
        return Outcome(self.loss, {n: add(earlier.grads[n], g) for n, g in self.grads.items()})


@dataclass(frozen=True)
class Form:
    """How the program's ``f`` is compiled: as a loss (``loss = compiled(...)``, then ``loss.backward()``
    outside) or as a whole step (``backward()`` inside, returning the loss and the gradients); taking
    every input as an argument, or reading ``program.captured`` from a closure."""

    whole_step: bool
    closure: bool

    def __str__(self) -> str:
        kind = "whole step (backward inside)" if self.whole_step else "loss (backward outside)"
        return f"compiled {kind}" + (", some inputs read from a closure" if self.closure else "")

    def arguments(self, program: Program) -> tuple[str, ...]:
        return tuple(n for n in program.names if not (self.closure and n in program.captured))

    def source(self, program: Program) -> str:
        """Python defining ``fn``, the function compiled (inside a ``make`` that closes over the
        captured inputs, for a closure form); empty for the plain loss, which compiles ``f`` itself."""
        if not (self.whole_step or self.closure):
            return ""
        call = f"f({', '.join(program.names)})"
        if self.whole_step:
            grads = ", ".join(f"{n}.grad" for n in program.grad_names)
            body = [f"loss = {call}", "loss.backward()", f"return loss, ({grads},)"]
        else:
            body = [f"return {call}"]
        lines = [f"def fn({', '.join(self.arguments(program))}):"] + [f"    {line}" for line in body]
        if self.closure:
            lines = [f"def make({', '.join(program.captured)}):"] + [f"    {line}" for line in lines] + ["    return fn"]
        return "\n".join(lines) + "\n\n"

    def compiled_function(self, program: Program) -> str:
        return f"make({', '.join(program.captured)})" if self.closure else "fn" if self.whole_step else "f"

    def reproduction(self, program: Program) -> str:
        """The program and this form's two calls, as ``run_compiled`` makes them."""
        args = ", ".join(self.arguments(program))
        call = f"loss, grads = compiled({args})" if self.whole_step else f"loss = compiled({args})\nloss.backward()"
        renew = "with jg.no_grad():\n" + "".join(f"    {i.renewal_source()}\n" for i in program.inputs)
        grads = "; the .grads accumulate" if self.whole_step else ""
        renew += "" if self.whole_step else "".join(f"{n}.grad = None\n" for n in program.names)
        return (f"{program!r}\n{self.source(program)}"
                f"compiled = jg.compile({self.compiled_function(program)}, cache=False, fullgraph=True)\n"
                f"# call 1\n{call}\n# call 2: new values in the same tensors{grads}\n{renew}{call}\n")


FORMS = (Form(False, False), Form(True, False), Form(False, True), Form(True, True))


class Disagreement(AssertionError):
    """Two runs of a random program differ; the message holds a reproduction."""


def define(source: str, label: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Executes generated source, registered with linecache so that tracebacks and jitgrad's messages
    that quote a line of code can show it."""
    filename = f"<random program: {label}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def function_of(program: Program, library) -> Callable:
    """The program's ``f`` with ``jg`` bound to ``library`` (jitgrad, or torch for the reference)."""
    return define(program.function_source(), f"f with jg = {library.__name__}", {"jg": library})["f"]


def leaves(program: Program, library, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """The inputs as leaf tensors: jitgrad's in each input's layout (``jg.from_numpy`` of a new array
    laid out so), PyTorch's C-contiguous copies."""
    def leaf(i):
        if library is not jg or i.layout is None:
            return library.tensor(arrays[i.name], requires_grad=i.requires_grad)
        return jg.from_numpy(i.laid_out(arrays[i.name])).requires_grad_(i.requires_grad)
    return {i.name: leaf(i) for i in program.inputs}


def _numpy(tensor) -> np.ndarray | None:
    return None if tensor is None else np.array(tensor.detach().numpy())


def run_eager(program: Program, library, arrays: dict[str, np.ndarray]) -> Outcome:
    tensors = leaves(program, library, arrays)
    loss = function_of(program, library)(*tensors.values())
    loss.backward()
    return Outcome(_numpy(loss), {n: _numpy(tensors[n].grad) for n in program.grad_names})


def _describe(value: np.ndarray | None) -> str:
    return "no gradient" if value is None else f"{value.dtype}{list(value.shape)}"


def _difference(actual: np.ndarray | None, expected: np.ndarray | None, reference: str) -> str | None:
    """What differs between two results, or None when they agree."""
    if actual is None or expected is None or actual.shape != expected.shape or actual.dtype != expected.dtype:
        if actual is None and expected is None:
            return None
        return f"{_describe(actual)} where {reference} gives {_describe(expected)}"
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    if np.allclose(actual, expected, rtol=RTOL, atol=RTOL * scale, equal_nan=True):
        return None
    return f"largest difference {np.abs(actual - expected).max():.3g}:\n{actual!r}\nwhere {reference} gives\n{expected!r}"


def compare(actual: Outcome, expected: Outcome, reference: str, headline: str, reproduction: str) -> None:
    for what, a, e in [("the loss", actual.loss, expected.loss)] + [
            (f"the gradient of {n}", actual.grads[n], expected.grads[n]) for n in expected.grads]:
        difference = _difference(a, e, reference)
        if difference is not None:
            raise Disagreement(f"{headline}: {what} differs: {difference}\n\n{reproduction}")


def check_against_torch(program: Program, torch, arrays: dict[str, np.ndarray]) -> Outcome | None:
    """jitgrad eager against PyTorch: the same values and gradients, or the same exception. Returns
    jitgrad's outcome, or None when both rejected the program."""
    reproduction = f"{program!r}# the reference: this program with `import torch as jg` (torch {torch.__version__})\n"
    try:
        expected = run_eager(program, torch, arrays)
    except Exception as torch_error:  # noqa: BLE001 - whatever PyTorch raises, jitgrad must raise too
        kind = next(k for k in type(torch_error).__mro__ if k.__module__ == "builtins")
        try:
            outcome = run_eager(program, jg, arrays)
        except kind:
            return None
        raise Disagreement(f"PyTorch raises {type(torch_error).__name__}: {torch_error}\n"
                           f"jitgrad eager gives {outcome.loss!r}\n\n{reproduction}") from torch_error
    assume(expected.reasonable())
    try:
        with _noting_equal_spreads() as equal_spread:
            actual = run_eager(program, jg, arrays)
    except Exception as error:  # noqa: BLE001 - reported with the program that raised it
        raise Disagreement(f"PyTorch runs the program, jitgrad eager raises {type(error).__name__}: {error}"
                           f"\n\n{reproduction}") from error
    # std's and var's gradients at equal values: jitgrad's is 0 (told by max == min), PyTorch's follows
    # the rounding of its std (README, "Differences from PyTorch"); such programs are not compared
    assume(not equal_spread)
    compare(actual, expected, "PyTorch", "jitgrad eager differs from PyTorch (float64)", reproduction)
    return actual


@contextlib.contextmanager
def _noting_equal_spreads():
    """Notes (in the list it yields) each ``std``/``var`` call whose values are all equal along the
    dimensions it reduces, somewhere."""
    noted: list[str] = []
    originals = {name: getattr(jg.Tensor, name) for name in ("std", "var")}

    def noting(name):
        def method(self, dim=None, *args, **kwargs):
            data = self.detach().numpy()
            axes = None if dim is None else tuple(np.atleast_1d(dim))
            if data.size and (np.max(data, axis=axes) == np.min(data, axis=axes)).any():
                noted.append(name)
            return originals[name](self, dim, *args, **kwargs)
        return method
    try:
        for name in originals:
            setattr(jg.Tensor, name, noting(name))
        yield noted
    finally:
        for name, method in originals.items():
            setattr(jg.Tensor, name, method)


def renew(i: Input, tensor: jg.Tensor, values: np.ndarray) -> None:
    """What ``i.renewal_source()`` writes: ``values`` into ``tensor``, or for an expanded input into the
    slice at index 0 of the expanded dimension (eager refuses a write where elements share memory)."""
    if i.layout is None or i.layout.kind != "expanded":
        tensor.copy_(jg.tensor(values))
        return
    d = i.layout.dim
    k = min(1, i.shape[d])
    tensor.narrow(d, 0, k).copy_(jg.tensor(values).narrow(d, 0, k))


def run_compiled(program: Program, form: Form, value_sets: list[dict[str, np.ndarray]],
                 backend: str) -> list[tuple[int, str, Outcome]]:
    """Compiles the program in ``form`` and calls it once per set of values, writing each set into the
    same tensors in place. Returns, per call (numbered from 0), what it returned and, for a step,
    also the ``.grad``s it left on the inputs."""
    tensors = leaves(program, jg, value_sets[0])
    namespace = define(form.source(program), str(form), {"f": function_of(program, jg)})
    fn = namespace["make"](*(tensors[n] for n in program.captured)) if form.closure else namespace.get("fn", namespace["f"])
    compiled = jg.compile(fn, cache=False, fullgraph=True)
    assert compiled.backend.name == backend, f"compiled on {compiled.backend.name}, not {backend}"
    outcomes = []
    for call, arrays in enumerate(value_sets):
        if call:
            with jg.no_grad():
                for i in program.inputs:
                    renew(i, tensors[i.name], arrays[i.name])
            if not form.whole_step:
                for t in tensors.values():
                    t.grad = None
        loss = compiled(*(tensors[n] for n in form.arguments(program)))
        if form.whole_step:
            loss, grads = loss
            returned = dict(zip(program.grad_names, map(_numpy, grads)))
            outcomes.append((call, f"call {call + 1}, as returned", Outcome(_numpy(loss), returned)))
        else:
            loss.backward()
        left = {n: _numpy(tensors[n].grad) for n in program.grad_names}
        outcomes.append((call, f"call {call + 1}, the .grad on the inputs", Outcome(_numpy(loss), left)))
    return outcomes


def check_program(program: Program, backend: str, torch=None) -> None:
    """Every comparison for one program: eager against PyTorch (when ``torch`` is given), then each form
    compiled on ``backend`` against eager, for two calls."""
    value_sets = program.draw_arrays(2)
    first = run_eager(program, jg, value_sets[0]) if torch is None else check_against_torch(program, torch, value_sets[0])
    if first is None:
        return
    second = run_eager(program, jg, value_sets[1])
    assume(first.reasonable() and second.reasonable())
    for form in FORMS:
        expected = [first, second.accumulated(first) if form.whole_step else second]
        reproduction = form.reproduction(program)
        try:
            outcomes = run_compiled(program, form, value_sets, backend)
        except Exception as error:  # noqa: BLE001 - reported with the program that raised it
            raise Disagreement(f"{form} on {backend} raises {type(error).__name__}: {error}\n\n{reproduction}") from error
        for call, label, outcome in outcomes:
            compare(outcome, expected[call], "eager", f"{form} on {backend}, {label}", reproduction)
