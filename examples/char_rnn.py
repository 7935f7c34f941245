"""A character-level language model: a GRU learns to continue text one character at a time.

The text is the opening of *Alice's Adventures in Wonderland* (Lewis Carroll, 1865; public domain),
shipped as ``examples/data/alice.txt``. Each training step takes random windows of the text, feeds
their characters through ``nn.Embedding`` -> ``nn.GRU`` -> ``nn.Linear`` and minimises the
cross-entropy of the next character (truncated backpropagation through time: each window starts from
a zero state). Then the model writes: it is fed a prompt, and from the probabilities it gives the next
character (sharpened by a temperature), one character is drawn, fed back, and so on, the GRU's hidden
state carried from step to step.

The loss starts at ``log(vocabulary size)`` (a uniform guess) and falls as the model learns letter
frequencies, then common words; a few hundred steps give recognisable English-like words.

    python examples/char_rnn.py            # 600 steps, then 400 characters of text
    python examples/char_rnn.py --quick    # a few seconds: a smaller model, 60 steps
"""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

import jitgrad
import jitgrad.nn as nn
import jitgrad.nn.functional as F

TEXT = Path(__file__).resolve().parent / "data" / "alice.txt"


class CharRNN(nn.Module):
    def __init__(self, vocabulary: int, embedding: int, hidden: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocabulary, embedding)
        self.gru = nn.GRU(embedding, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocabulary)

    def forward(self, codes: jitgrad.Tensor,
                state: jitgrad.Tensor | None = None) -> tuple[jitgrad.Tensor, jitgrad.Tensor]:
        """Logits of the next character at every position ``(batch, time, vocabulary)``, and the final state."""
        output, state = self.gru(self.embed(codes), state)
        return self.head(output), state


def windows(codes: np.ndarray, batch: int, length: int, rng: np.random.Generator) -> tuple[jitgrad.Tensor, ...]:
    """``batch`` random windows of ``length`` characters, and the same shifted by one (the targets)."""
    starts = rng.integers(0, len(codes) - length - 1, batch)
    chunk = np.stack([codes[s:s + length + 1] for s in starts])
    return jitgrad.from_numpy(chunk[:, :-1]), jitgrad.from_numpy(chunk[:, 1:])


def generate(model: CharRNN, prompt: str, chars: list[str], count: int, temperature: float,
             rng: np.random.Generator) -> str:
    index = {c: i for i, c in enumerate(chars)}
    model.eval()
    out = []
    with jitgrad.no_grad():
        logits, state = model(jitgrad.tensor([[index[c] for c in prompt]]))
        for _ in range(count):
            probs = F.softmax(logits[0, -1] / temperature, dim=-1).numpy().astype(np.float64)
            code = int(rng.choice(len(chars), p=probs / probs.sum()))
            out.append(chars[code])
            logits, state = model(jitgrad.tensor([[code]]), state)
    model.train()
    return prompt + "".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds: a smaller model, 60 steps")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--temperature", type=float, default=0.6)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    steps = args.steps or (60 if args.quick else 600)
    batch, length, hidden = (16, 16, 64) if args.quick else (32, 48, 192)

    text = TEXT.read_text(encoding="utf-8")
    chars = sorted(set(text))
    codes = np.array([chars.index(c) for c in text], dtype=np.int64)
    print(f"{TEXT.name}: {len(text)} characters, {len(chars)} distinct; "
          f"uniform guessing costs log({len(chars)}) = {math.log(len(chars)):.3f}")

    jitgrad.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    model = CharRNN(len(chars), 32, hidden)
    optimizer = jitgrad.optim.Adam(model.parameters(), lr=1e-2 if args.quick else 5e-3)
    print(f"GRU of {hidden} units, {sum(p.numel() for p in model.parameters())} parameters; "
          f"batches of {batch} windows of {length} characters")

    start, losses = time.perf_counter(), []
    for step in range(1, steps + 1):
        inputs, targets = windows(codes, batch, length, rng)
        logits, _ = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, len(chars)), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # a gradient through many steps can blow up
        optimizer.step()
        losses.append(loss.item())
        if step == 1 or step % max(1, steps // 6) == 0:
            recent = np.mean(losses[-max(1, steps // 6):])
            print(f"step {step:4d}: loss {recent:.3f} ({time.perf_counter() - start:.1f} s)")
    print(f"loss from {losses[0]:.3f} to {np.mean(losses[-10:]):.3f} "
          f"({1000 * (time.perf_counter() - start) / steps:.0f} ms per step)")

    sample = generate(model, "Alice ", chars, 120 if args.quick else 400, args.temperature, rng)
    print(f"\nsampled at temperature {args.temperature}:\n{sample}")


if __name__ == "__main__":
    main()
