"""``pad_sequence`` and ``unpad_sequence`` of PyTorch's ``torch.nn.utils.rnn``: a batch of sequences of
different lengths as one padded tensor and back, composed of ``cat``, ``stack`` and slices, so
gradients flow to every sequence and a compiled collate or loss compiles. (Packed sequences are not
supported: docs/coming_from_pytorch.md.)"""
from __future__ import annotations

from typing import Sequence

from ...factories import full
from ...ops import cat, stack
from ...tensor import Tensor


def pad_sequence(sequences: Tensor | Sequence[Tensor], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """The sequences (each ``(length, *rest)``, ``rest`` the same for all) padded with ``padding_value``
    to the longest one's length, on the ``padding_side``: ``(longest, batch, *rest)``, or ``(batch,
    longest, *rest)`` with ``batch_first``."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences.unbind(0) if isinstance(sequences, Tensor) else sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        if s.shape[0] == longest:
            padded.append(s)
            continue
        fill = full((longest - s.shape[0], *s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
        padded.append(cat([s, fill] if padding_side == "right" else [fill, s]))
    batch = stack(padded)
    return batch if batch_first else batch.transpose(0, 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor | Sequence[int],
                   batch_first: bool = False) -> list[Tensor]:
    """The sequences ``pad_sequence`` padded on the right, each cut to its length."""
    batch = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    counts = lengths.tolist() if isinstance(lengths, Tensor) else list(lengths)
    return [row[:int(n)] for row, n in zip(batch.unbind(0), counts)]


__all__ = ["pad_sequence", "unpad_sequence"]
