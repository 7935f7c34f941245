"""The body of a ``loop`` node (``fx.loop``, made by ``roll_loops``) planned for a kernel: fusion,
rematerialisation and a memory plan of its own (``BODY_PASSES``), as the outer graph had.

Both CPU backends write a loop's body from this plan, and the default lowering may hand one graph to
both (the LLVM generator first, numba when it refuses), so the body is planned once, on the ``Loop``
itself, and whoever lowers it next reuses the plan.
"""
from __future__ import annotations

from ..fx.graph import Graph
from ..fx.loop import Loop
from ..fx.passes import PassManager, group_fusions, plan_memory, rematerialize
from ..fx.passes.memory import is_planned

BODY_PASSES = (group_fusions, rematerialize, plan_memory)


def planned_body(loop: Loop) -> Graph:
    """The loop's body after ``BODY_PASSES`` (planned on first use, reused after)."""
    if not is_planned(loop.body):
        PassManager(BODY_PASSES).run(loop.body)
    return loop.body


__all__ = ["BODY_PASSES", "planned_body"]
