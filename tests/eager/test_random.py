"""jitgrad's generator eagerly: Philox's known answers, the samplers against a plain-Python reference,
the distributions' statistics, seeding and state, and dropout."""
from __future__ import annotations

import math

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn.functional as F
from jitgrad.random import Generator, default_generator
from jitgrad.random.philox import philox4x32_10
from jitgrad.random.sampling import sample

MASK = 0xFFFFFFFF

# Random123's kat_vectors for philox4x32-10: counter, key, expected block.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((MASK,) * 4, (MASK,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def reference_philox(c: list[int], k: list[int]) -> tuple[int, ...]:
    """Philox4x32-10 on Python integers, written from the paper's description, independently of the
    numpy/numba version: the oracle for the samplers."""
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & MASK, (p0 >> 32) ^ c[3] ^ k[1], p0 & MASK]
        k = [(k[0] + 0x9E3779B9) & MASK, (k[1] + 0xBB67AE85) & MASK]
    return tuple(c)


def reference_block(counter: int, seed: int) -> tuple[int, ...]:
    """The block of element ``counter - offset`` of a draw: counter and seed split into 32-bit words."""
    return reference_philox([counter & MASK, counter >> 32, 0, 0], [seed & MASK, seed >> 32])


def reference_uniform(words: tuple[int, ...], bits: int) -> float:
    if bits <= 32:
        return (words[0] >> (32 - bits)) / 2.0 ** bits
    return (((words[0] >> 5) << 26) | (words[1] >> 6)) / 2.0 ** 53


def reference_normal(words: tuple[int, ...]) -> float:
    u1, u2 = reference_uniform(words, 53), reference_uniform(words[2:], 53)
    return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)


# ---- the bit generator and the samplers -----------------------------------------------------------------
@pytest.mark.parametrize("counter, key, expected", KNOWN_ANSWERS)
def test_philox_known_answers(counter, key, expected):
    words = philox4x32_10(*(np.uint64(w) for w in counter), *(np.uint64(w) for w in key))
    assert tuple(int(w) for w in words) == expected
    assert reference_philox(list(counter), list(key)) == expected


@pytest.mark.parametrize("seed, offset", [(0, 0), (12345, 2 ** 33 - 3), (-1, 7)])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_uniform_matches_the_reference(seed, offset, dtype):
    state = np.array([seed, offset], dtype=np.int64)
    got = sample(state, (2, 3), dtype, "uniform").reshape(-1)
    bits = np.finfo(dtype).nmant + 1
    expected = [reference_uniform(reference_block(offset + i, seed % 2 ** 64), bits) for i in range(6)]
    np.testing.assert_array_equal(got, np.array(expected, dtype=dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normal_matches_the_reference(dtype):
    state = np.array([99, 5], dtype=np.int64)
    got = sample(state, (8,), dtype, "normal")
    expected = np.array([reference_normal(reference_block(5 + i, 99)) for i in range(8)]).astype(dtype)
    np.testing.assert_allclose(got, expected, rtol=1e-15 if dtype == np.float64 else 0)


@pytest.mark.parametrize("dtype", [jg.float32, jg.float64])
def test_uniform_statistics(dtype):
    jg.manual_seed(7)
    u = jg.rand(100_000, dtype=dtype).numpy()
    assert u.dtype == dtype.numpy and u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    counts, _ = np.histogram(u, bins=10, range=(0.0, 1.0))
    assert np.all(np.abs(counts - 10_000) < 500)


@pytest.mark.parametrize("dtype", [jg.float32, jg.float64])
def test_normal_statistics(dtype):
    jg.manual_seed(8)
    z = jg.randn(100_000, dtype=dtype).numpy().astype(np.float64)
    assert abs(z.mean()) < 0.015 and abs(z.var() - 1.0) < 0.02
    assert abs((np.abs(z) < 1.0).mean() - 0.6827) < 0.006   # the mass within one standard deviation
    assert abs(np.mean(z ** 3)) < 0.05 and abs(np.mean(z ** 4) - 3.0) < 0.1


# ---- seeding and state ----------------------------------------------------------------------------------
def test_manual_seed_reproduces_every_factory():
    def draws():
        x = jg.zeros(2, 3, dtype=jg.float64)
        return [jg.rand(4), jg.randn(2, 2), jg.rand_like(x), jg.randn_like(x), jg.rand(3, dtype=jg.float64)]
    jg.manual_seed(2024)
    first = draws()
    jg.manual_seed(2024)
    for a, b in zip(first, draws()):
        assert a.dtype == b.dtype and np.array_equal(a.numpy(), b.numpy())
    jg.manual_seed(2025)
    assert not np.array_equal(first[0].numpy(), jg.rand(4).numpy())


def test_a_draw_moves_the_offset_by_its_elements():
    jg.manual_seed(3)
    whole = jg.rand(6).numpy()
    jg.manual_seed(3)
    parts = np.concatenate([jg.rand(2).numpy(), jg.rand(4).numpy()])
    np.testing.assert_array_equal(whole, parts)   # element i is block offset + i, however it is split
    assert default_generator.offset == 6


def test_get_and_set_rng_state():
    jg.manual_seed(11)
    jg.rand(5)
    state = jg.get_rng_state()
    assert state.dtype == jg.int64 and state.tolist() == [11, 5]
    first = jg.randn(3).numpy()
    jg.set_rng_state(state)
    np.testing.assert_array_equal(jg.randn(3).numpy(), first)
    with pytest.raises(ValueError, match="2 integers"):
        jg.set_rng_state(jg.zeros(3))


def test_seeds_are_taken_modulo_two_to_the_64():
    a, b = Generator(-1), Generator(2 ** 64 - 1)
    assert a.initial_seed() == b.initial_seed() == 2 ** 64 - 1
    np.testing.assert_array_equal(a.take(3), b.take(3))


def test_replaying_draws_again_and_puts_the_generator_back():
    g = Generator(5)
    state = g.take(4)
    first = sample(state, (4,), np.float64, "uniform")
    g.take(10)
    with g.replaying(state):
        again = sample(g.take(4), (4,), np.float64, "uniform")
    np.testing.assert_array_equal(first, again)
    assert g.offset == 14


def test_random_factories_need_a_floating_dtype():
    with pytest.raises(TypeError, match="floating"):
        jg.rand(3, dtype=jg.int64)


# ---- dropout ----------------------------------------------------------------------------------------------
def test_dropout_zeroes_with_probability_p_and_scales_the_rest():
    jg.manual_seed(1)
    x = jg.ones(100_000, dtype=jg.float64, requires_grad=True)
    y = F.dropout(x, p=0.3)
    values = y.detach().numpy()
    assert set(np.unique(values)) <= {0.0, 1 / 0.7}
    assert abs((values == 0).mean() - 0.3) < 0.01
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), values)   # the gradient is the scaled mask


def test_dropout_edges():
    x = jg.randn(4, 5, requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    dropped = F.dropout(x, 1.0)
    assert np.array_equal(dropped.detach().numpy(), np.zeros((4, 5), np.float32))
    dropped.sum().backward()
    assert np.array_equal(x.grad.numpy(), np.zeros((4, 5), np.float32))
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match=f"p={p}"):
            F.dropout(x, p)


def test_dropout_scaling_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.linspace(-2.0, 2.0, 4000).astype(np.float32)
    ours = F.dropout(jg.tensor(x), p=0.25).numpy()
    theirs = torch.nn.functional.dropout(torch.tensor(x), p=0.25).numpy()
    for out in (ours, theirs):
        kept = out != 0
        np.testing.assert_allclose(out[kept], x[kept] / 0.75, rtol=1e-6)
        assert abs(kept.mean() - 0.75) < 0.05
    assert F.dropout(jg.tensor(x), p=0.25, training=False).numpy().tolist() == \
        torch.nn.functional.dropout(torch.tensor(x), p=0.25, training=False).numpy().tolist()
