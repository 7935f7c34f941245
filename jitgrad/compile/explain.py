"""``CompiledFunction.explain(*args)``: what a call with those arguments runs, as text.

For each lowered graph (a step; or a forward and its backward): the IR as traced and after the pass
pipeline, the pass report, the fusion groups, the memory plan (which the backend allocates as it is:
its buffers are the kernel's) and the generated source; for a loss,
what the forward saves for the backward and what it recomputes; the (re)compile log with the guard that
failed each time; or, for a call that runs eagerly, why. On CUDA the generated source holds the host
function and every ``@cuda.jit`` kernel, and a section lists the kernels the graph's last run launched
with their grid and block (``program.launches``).
"""
from __future__ import annotations

from typing import Any


def _section(title: str, body: str) -> str:
    return f"=== {title} ===\n{body.rstrip()}\n"


def launch_configuration(compiled: Any) -> str | None:
    """The kernel launches of a CUDA program's last run, one line each, or None for a backend that
    launches none (the CPU's)."""
    launches = getattr(compiled, "launches", None)
    if launches is None:
        return None
    return "\n".join(f"{name}: grid={_dims(grid)}, block={_dims(block)}" for name, grid, block in launches) \
        or "no kernels (views and copies only)"


def _dims(size: Any) -> tuple[int, ...]:
    """A launch size as CUDA's (x, y, z) dimensions, written as a tuple whether given as one or as an int."""
    return tuple(size) if isinstance(size, (tuple, list)) else (int(size),)


class Explanation:
    """What ``explain`` returns: the function's name, the backend's, the program (or ``"eager"``), why
    the call runs eagerly when it does, and the (re)compile log; ``str()`` is the report."""

    def __init__(self, name: str, backend: str, program: Any, fallback_reason: str | None, log: list[str]) -> None:
        self.name, self.backend, self.program = name, backend, program
        self.fallback_reason, self.log = fallback_reason, log

    @property
    def lowered(self) -> list:
        """The lowered graphs (``compiled_function.Lowered``) of this program: for a loss, its forward and
        whole backward (lowered now if no call has needed them yet) besides the fused kernel."""
        if self.program == "eager" or self.program is None:
            return []
        if self.program.kind == "step":
            return [self.program.lowered]
        return self.program.lower_all()

    @property
    def source(self) -> str:
        return "\n".join(l.source for l in self.lowered)

    def __str__(self) -> str:
        head = f"jitgrad.compile({self.name}) on {self.backend}"
        if not self.lowered:
            parts = [head, _section("runs eagerly", self.fallback_reason or "see the warning")]
        else:
            parts = [f"{head}: {'a whole step (one graph)' if self.program.kind == 'step' else 'a forward and a backward'}"]
            if self.program.kind == "loss":
                stats = self.program.partition_stats
                parts.append(_section("saved for backward", (
                    f"saved: {', '.join(stats['saved']) or '-'}\nrecomputed in backward: "
                    f"{', '.join(stats['recomputed']) or '-'}\nbytes saved: {stats['saved_bytes_before']} "
                    f"before recomputation, {stats['saved_bytes_after']} after")))
            for lowered in self.lowered:
                memory = ", ".join(f"{k}={v}" for k, v in lowered.memory.items())
                parts += [_section(f"{lowered.label}: IR before passes", lowered.ir_before),
                          _section(f"{lowered.label}: IR after passes", lowered.ir_after),
                          _section(f"{lowered.label}: passes", lowered.pass_report),
                          _section(f"{lowered.label}: fusion groups", "\n".join(lowered.fusion_groups) or "none"),
                          _section(f"{lowered.label}: memory plan", memory),
                          _section(f"{lowered.label}: generated source"
                                   + (" (reused kernels)" if lowered.reused else "")
                                   + (" (from the disk cache)" if lowered.from_disk else ""), lowered.source)]
                launches = launch_configuration(lowered.call)
                if launches is not None:
                    parts.append(_section(f"{lowered.label}: kernel launches (grid, block)", launches))
        if self.log:
            parts.append(_section("compile log", "\n".join(self.log)))
        return "\n".join(parts)

    def __repr__(self) -> str:
        return str(self)
