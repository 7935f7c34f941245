"""Thread-local grad modes: whether ops record the graph.

Each thread starts with grad mode on, as in PyTorch, so a worker thread that calls ``no_grad`` does not
change what the main thread records. Every mode is a context manager and a decorator.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar

from ..thread_settings import ThreadSettings

F = TypeVar("F", bound=Callable[..., Any])


class _ModeState(ThreadSettings):
    grad_enabled = True
    inference = False


state = _ModeState()


def is_grad_enabled() -> bool:
    return state.grad_enabled


def is_inference_mode_enabled() -> bool:
    return state.inference


class _DecoratorContextManager:
    """A context manager that can also decorate a function (and generator) with itself."""

    def __call__(self, fn: F) -> F:
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def generator(*args, **kwargs):
                # Only the generator's own steps run in the mode: the caller's code between two
                # ``next`` calls keeps the caller's mode, as in PyTorch.
                gen = fn(*args, **kwargs)
                try:
                    with self.clone():
                        response = gen.send(None)
                    while True:
                        try:
                            request = yield response
                        except GeneratorExit:
                            with self.clone():
                                gen.close()
                            raise
                        except BaseException as error:
                            with self.clone():
                                response = gen.throw(error)
                        else:
                            with self.clone():
                                response = gen.send(request)
                except StopIteration as stop:
                    return stop.value
            return generator  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper  # type: ignore[return-value]

    def clone(self) -> "_DecoratorContextManager":
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """A mode with no argument also decorates bare (``@no_grad`` as well as ``@no_grad()``), as in
    PyTorch."""

    def __new__(cls, orig_func: Callable | None = None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode now (as a function call) and restores the previous mode on leaving a ``with``."""

    def __init__(self, mode: bool) -> None:
        self.prev = state.grad_enabled
        self.mode = bool(mode)
        state.grad_enabled = self.mode

    def __enter__(self) -> None:
        state.grad_enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        state.grad_enabled = self.prev

    def __call__(self, fn: F) -> F:
        # Used as a decorator, construction must not change the mode of the code around it.
        state.grad_enabled = self.prev
        return super().__call__(fn)

    def clone(self) -> "set_grad_enabled":
        clone = object.__new__(set_grad_enabled)
        clone.mode, clone.prev = self.mode, state.grad_enabled
        return clone


class no_grad(_NoParamDecoratorContextManager):
    """Ops run inside record no graph: their outputs do not require grad."""

    def __enter__(self) -> None:
        self.prev = state.grad_enabled
        state.grad_enabled = False

    def __exit__(self, *exc: object) -> None:
        state.grad_enabled = self.prev


class enable_grad(_NoParamDecoratorContextManager):
    """Turns grad mode back on inside a ``no_grad`` region."""

    def __enter__(self) -> None:
        self.prev = state.grad_enabled
        state.grad_enabled = True

    def __exit__(self, *exc: object) -> None:
        state.grad_enabled = self.prev


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad``, for code that will never need the results in autograd. Nothing is recorded
    inside, even where ``enable_grad`` turns grad mode back on (PyTorch leaves autograd out of inference
    mode altogether)."""

    def __new__(cls, mode: bool | Callable = True):
        if callable(mode):  # used bare: ``@inference_mode``
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    def __enter__(self) -> None:
        # As PyTorch's InferenceMode(mode): ``inference_mode(False)`` turns grad mode back on, too.
        self.prev = (state.grad_enabled, state.inference)
        state.grad_enabled, state.inference = not self.mode, self.mode

    def __exit__(self, *exc: object) -> None:
        state.grad_enabled, state.inference = self.prev

    def clone(self) -> "inference_mode":
        return inference_mode(self.mode)


class set_multithreading_enabled(_DecoratorContextManager):
    """PyTorch's switch between running backward on per-device worker threads (``True``, its default) and
    on the calling thread (``False``), as a call, a block or a decorator. jitgrad's engine runs every
    backward on the calling thread, serving each device's queue from it (``engine.ReadyQueues``), so
    either mode is accepted and nothing changes: code written for PyTorch runs as it is."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        pass

    def clone(self) -> "set_multithreading_enabled":
        return set_multithreading_enabled(self.mode)
