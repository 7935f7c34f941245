"""``jitgrad.compile(...)``: torch.compile's keyword arguments, checked and mapped onto ``CompiledFunction``.

A script written for ``torch.compile`` passes ``mode``, ``backend``, ``dynamic``, ``options`` and
``disable``; each is accepted with torch's meaning where jitgrad can honour it, and refused with torch's
error where torch refuses it (an unknown mode, backend or option), so that a typo is never ignored.
What each does here is in docs/compile.md ("torch.compile's arguments").
"""
from __future__ import annotations

from typing import Any, Callable

from .decorator import CompiledFunction

# torch.compile's modes; here each compiles as "default" does: they choose CUDA graphs and autotuning,
# which jitgrad's kernels do not have.
MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
# The backends that mean something here: jitgrad's compiler (torch's default name for it), the
# interpreter (aot_eager: traced, graphs run on the eager ops) and plain eager calls.
BACKENDS = ("inductor", "aot_eager", "eager")
# The inductor options torch's own modes set: performance settings with no counterpart in jitgrad's
# kernels, accepted and ignored. Any other key raises, as torch does for a key it does not know: an
# option that changes results (a fast-math flag) must not be dropped silently.
PERFORMANCE_OPTIONS = ("triton.cudagraphs", "max_autotune", "max_autotune_pointwise", "max_autotune_gemm",
                       "coordinate_descent_tuning")


class InvalidBackend(RuntimeError):
    """``jitgrad.compile(backend=...)`` names a backend jitgrad does not have (torch's ``InvalidBackend``)."""


def check_mode(mode: str | None, options: dict[str, Any] | None) -> None:
    """torch's checks: one of its modes, not both a mode and options, options' keys known here."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(MODES)}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"jitgrad.compile: options must be a dict, got {type(options).__name__}")
    for key in options or ():
        if key not in PERFORMANCE_OPTIONS:
            raise RuntimeError(f"Unexpected optimization option {key}, known options are {list(PERFORMANCE_OPTIONS)}"
                               " (jitgrad's own settings are keyword arguments: fastmath=, parallel=, cache=)")


def check_backend(backend: str | Callable | None) -> str:
    """The backend's name here ("inductor" for None); a custom backend (a callable) or an unknown name raises."""
    if backend is None:
        return "inductor"
    if callable(backend):
        raise InvalidBackend(f"jitgrad.compile(backend={getattr(backend, '__name__', backend)!r}): jitgrad has no "
                             f"custom backends (it never hands an FX graph to user code); use one of {list(BACKENDS)}")
    if backend not in BACKENDS:
        raise InvalidBackend(f"Invalid backend: {backend!r}, jitgrad.compile's backends are {list(BACKENDS)}")
    return backend


def compile(fn: Callable | None = None, *, device: Any = None, fastmath: bool = False,  # noqa: A001
            parallel: bool | None = None, cache: bool = True, fullgraph: bool = False, check: bool = False,
            dynamic: bool | None = None, backend: str | Callable | None = None, mode: str | None = None,
            options: dict[str, Any] | None = None, disable: bool = False, name: str | None = None,
            recompile_limit: int | None = None, isolate_recompiles: bool = False) -> Any:
    """``@jitgrad.compile`` or ``@jitgrad.compile(fastmath=True, ...)``: see docs/compile.md. ``device``
    (``"cpu"``, ``"cuda"``): the one device its inputs must be on; by default, theirs.
    torch.compile's arguments: ``disable=True`` and ``backend="eager"`` return ``fn`` itself;
    ``backend="aot_eager"`` traces and runs the graphs on the interpreter; ``dynamic=None`` makes a number
    argument a run-time input after its first change, ``True`` from the first call, ``False`` never (a
    new value recompiles); shapes are specialised either way (a new size retraces); every ``mode`` and
    the ``options`` its modes set compile as the default does. ``recompile_limit`` (8 by default) counts
    this function's recompiles, ``name`` is what its logs call it, and ``isolate_recompiles`` changes
    nothing: each ``jitgrad.compile`` call has programs and a count of its own."""
    check_mode(mode, options)
    backend_name = check_backend(backend)
    if dynamic not in (None, True, False):
        raise TypeError(f"jitgrad.compile: dynamic must be None, True or False, got {dynamic!r}")
    if backend_name == "aot_eager" and device is not None and str(device).partition(":")[0] != "cpu":
        raise ValueError(f"jitgrad.compile(backend='aot_eager', device={str(device)!r}): the aot_eager backend runs "
                         "graphs on jitgrad's interpreter, on the CPU only; use the default backend on the GPU")
    if recompile_limit is not None and (type(recompile_limit) is not int or recompile_limit < 0):
        raise ValueError(f"jitgrad.compile: recompile_limit must be an int >= 0 or None, got {recompile_limit!r}")
    settings = dict(device=device, fastmath=fastmath, parallel=parallel, cache=cache, fullgraph=fullgraph,
                    check=check, dynamic=dynamic, interpreted=backend_name == "aot_eager",
                    recompile_limit=recompile_limit, name=name)

    def wrap(f: Callable) -> Any:
        return f if disable or backend_name == "eager" else CompiledFunction(f, **settings)
    return wrap if fn is None else wrap(fn)


__all__ = ["BACKENDS", "InvalidBackend", "MODES", "PERFORMANCE_OPTIONS", "check_backend", "check_mode", "compile"]
