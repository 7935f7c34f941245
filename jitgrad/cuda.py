"""``jitgrad.cuda``: the GPU as PyTorch's ``torch.cuda`` shows it, over numba.cuda.

Importing this module imports nothing of numba: ``is_available()`` and the rest import ``numba.cuda``
when called, and the eager CUDA runner (``jitgrad.backends.numba_cuda.eager``) is installed when the
first CUDA tensor is made (``when_first_used`` of ``jitgrad/device.py``), so a CPU-only program pays for neither.
jitgrad uses one GPU, ``cuda:0``. Under numba's simulator (``NUMBA_ENABLE_CUDASIM=1``, set before numba is
imported) everything here works with no GPU, slowly.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from .device import cuda_available, register_strided_copy, set_current_stream, when_first_used
from .device import current_stream as _current_numba_stream
from .device import synchronize as _synchronize_device


def is_available() -> bool:
    """Whether numba finds a CUDA GPU (or its simulator is on)."""
    return cuda_available()


def device_count() -> int:
    """How many GPUs jitgrad can use: 1 when CUDA is available (jitgrad uses ``cuda:0`` only), else 0."""
    return 1 if is_available() else 0


def current_device() -> int:
    """The index of the GPU CUDA tensors are made on: always 0."""
    if not is_available():
        raise RuntimeError("current_device(): CUDA is not available (no GPU, and NUMBA_ENABLE_CUDASIM is not set)")
    return 0


def synchronize(device: Any = None) -> None:  # noqa: ARG001 - one GPU: every device is cuda:0
    """Waits until every kernel and copy queued on the GPU has finished."""
    _synchronize_device()


class Stream:
    """A CUDA stream: kernels queued on one run in order, and may overlap another stream's.
    ``Stream()`` makes a new numba stream; ``with jitgrad.cuda.stream(s):`` makes it current."""

    def __init__(self, device: Any = None, priority: int = 0, *, _numba_stream: Any = None) -> None:  # noqa: ARG002
        if _numba_stream is None:
            from numba import cuda  # lazily, like everything here
            _numba_stream = cuda.stream()
        self.numba_stream = _numba_stream

    def synchronize(self) -> None:
        """Waits for the work queued on this stream."""
        self.numba_stream.synchronize()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other.numba_stream is self.numba_stream

    def __hash__(self) -> int:
        return id(self.numba_stream)

    def __repr__(self) -> str:
        return f"<jitgrad.cuda.Stream device=cuda:0 stream={self.numba_stream!r}>"


def current_stream(device: Any = None) -> Stream:  # noqa: ARG001 - one GPU
    """The stream CUDA work is queued on now (numba's default stream unless ``stream(...)`` set one)."""
    return Stream(_numba_stream=_current_numba_stream())


@contextmanager
def stream(s: Stream | None) -> Iterator[None]:
    """Queues the block's CUDA work on ``s`` (``None``: leaves the current stream as it is)."""
    if s is None:
        yield
        return
    previous = set_current_stream(s.numba_stream)
    try:
        yield
    finally:
        set_current_stream(previous)


def _install_eager_runner() -> None:
    """Puts the CUDA runner into ``jitgrad.ops.registry.DEVICE_RUNNERS`` (launching on the current numba
    stream) and the backend's strided copy into ``jitgrad.device``: the one place they are installed."""
    try:
        from .backends.numba_cuda import eager
    except ModuleNotFoundError as error:
        if error.name is None or not error.name.startswith("jitgrad.backends.numba_cuda"):
            raise
        return  # this checkout has no CUDA backend: ops on CUDA tensors say no runner is installed
    from .compile.cache import shared_cache

    eager.install(current_stream=_current_numba_stream, disk_cache=lambda: shared_cache("cuda"))
    register_strided_copy(lambda source, destination, stream: eager.write_into(destination, source))


when_first_used(_install_eager_runner)
