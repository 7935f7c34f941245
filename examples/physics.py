"""A hanging chain of masses and springs, its resting shape found by gradient descent.

``n`` point masses hang between two fixed anchors, neighbours joined by springs (Hooke's law, stiffness
``k``, rest length ``L0``), under gravity. At equilibrium the total potential energy

    E(p) = sum over springs ½ k (|p[i+1] - p[i]| - L0)²  +  sum over masses m g y[i]

is at a minimum, so its gradient, minus the net force on each mass, vanishes. The energy is written
with jitgrad ops and compiled (``jitgrad.compile``): each call returns the energy, and ``backward()``
takes its gradient from the same numba kernel call. Gradient descent with momentum follows it downhill.

The result is checked against physics, not against autograd: the net force on every mass, from
Hooke's law and gravity written out in numpy, must be (nearly) zero. The same descent run eagerly
gives the same shape; the script prints the time per step of both.

    python examples/physics.py [--quick]
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

import jitgrad


@dataclass
class Chain:
    masses: int = 40
    span: float = 2.0          # metres between the anchors
    length: float = 3.0        # metres of unstretched chain
    stiffness: float = 200.0   # N/m per spring
    mass: float = 0.05         # kg per mass
    gravity: float = 9.81

    @property
    def rest_length(self) -> float:
        return self.length / (self.masses + 1)

    def initial(self) -> jitgrad.Tensor:
        """The masses evenly spaced on the straight line between the anchors."""
        x = np.linspace(0, self.span, self.masses + 2)[1:-1]
        return jitgrad.from_numpy(np.stack([x, np.zeros_like(x)], axis=1)).requires_grad_()


def energy_function(chain: Chain):  # noqa: ANN201 - a function of the free positions
    """The energy as a function of the free masses' positions ``(n, 2)``.

    The spring vectors are ``incidence @ free + ends``: row ``i`` of the incidence matrix takes mass
    ``i`` minus mass ``i - 1``, and ``ends`` adds the fixed anchors to the first and last springs. One
    matrix product instead of gluing the anchors on (``cat``) and slicing: its gradient is a matrix
    product too, which compiles in a fraction of the time."""
    n = chain.masses
    incidence = np.zeros((n + 1, n))
    incidence[np.arange(n), np.arange(n)] = 1.0
    incidence[np.arange(1, n + 1), np.arange(n)] = -1.0
    ends = np.zeros((n + 1, 2))
    ends[n] = (chain.span, 0.0)  # the left anchor is the origin
    incidence, ends = jitgrad.from_numpy(incidence), jitgrad.from_numpy(ends)
    weight = jitgrad.tensor([0.0, chain.mass * chain.gravity], dtype=jitgrad.float64)

    def energy(free: jitgrad.Tensor) -> jitgrad.Tensor:
        springs = incidence @ free + ends
        stretch = (springs ** 2).sum(dim=1).sqrt() - chain.rest_length
        return 0.5 * chain.stiffness * (stretch ** 2).sum() + (free * weight).sum()

    return energy


def net_forces(chain: Chain, free: np.ndarray) -> np.ndarray:
    """Hooke's law and gravity on each mass, by hand: the check that does not use autograd."""
    points = np.concatenate([[[0.0, 0.0]], free, [[chain.span, 0.0]]])
    delta = points[1:] - points[:-1]
    length = np.linalg.norm(delta, axis=1, keepdims=True)
    tension = chain.stiffness * (length - chain.rest_length) * delta / length  # pulls i toward i+1
    return tension[1:] - tension[:-1] + np.array([0.0, -chain.mass * chain.gravity])


def descend(energy, free: jitgrad.Tensor, steps: int, lr: float,  # noqa: ANN001 - any function of free
            momentum: float = 0.9) -> tuple[list[float], float]:
    """Heavy-ball gradient descent; returns the energies every 100 steps and the seconds per step after
    the first (which compiles)."""
    velocity = jitgrad.zeros_like(free)
    energies = []
    for step in range(steps):
        if step == 1:
            start = time.perf_counter()
        e = energy(free)
        e.backward()
        with jitgrad.no_grad():
            velocity.mul_(momentum).sub_(lr * free.grad)
            free.add_(velocity)
        free.grad = None
        if step % 100 == 0:
            energies.append(e.item())
    return energies, (time.perf_counter() - start) / (steps - 1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 masses, fewer steps")
    args = parser.parse_args(argv)
    chain = Chain(masses=8) if args.quick else Chain(masses=40)
    steps = 600 if args.quick else 2000
    lr = 1.0 / (4 * chain.stiffness)  # the springs' largest curvature is about 4k
    energy = energy_function(chain)
    compiled = jitgrad.compile(energy)

    print(f"{chain.masses} masses of {chain.mass} kg on springs of k = {chain.stiffness} N/m, "
          f"{chain.length} m of chain hung across {chain.span} m")
    free = chain.initial()
    energies, per_step = descend(compiled, free, steps, lr)
    every = max(1, len(energies) // 6)
    for i, e in enumerate(energies[::every]):
        print(f"  step {100 * every * i:5d}: energy {e:.6f} J")
    forces = np.abs(net_forces(chain, free.detach().numpy())).max()
    print(f"after {steps} steps: energy {energy(free).item():.6f} J, largest net force {forces:.1e} N "
          f"(gravity on one mass: {chain.mass * chain.gravity:.3f} N)")
    lowest = free.detach().numpy()[:, 1].min()
    print(f"the chain sags {-lowest:.4f} m below its anchors")

    eager_free = chain.initial()
    eager_steps = min(steps, 150)
    _, eager_per_step = descend(energy, eager_free, eager_steps, lr)
    check_free = chain.initial()
    descend(compiled, check_free, eager_steps, lr)
    same = np.abs(check_free.detach().numpy() - eager_free.detach().numpy()).max()
    print(f"time per step: eager {1e6 * eager_per_step:.0f} us, compiled {1e6 * per_step:.0f} us "
          f"(after the first, which compiles); after {eager_steps} steps eager and compiled "
          f"positions differ by {same:.1e} m")


if __name__ == "__main__":
    main()
