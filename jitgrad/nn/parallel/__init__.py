"""Data parallelism across processes, as PyTorch's ``torch.nn.parallel`` spells it (docs/distributed.md)."""
from .distributed import DistributedDataParallel
from ...distributed.reducer import ReductionEvent

__all__ = ["DistributedDataParallel", "ReductionEvent"]
