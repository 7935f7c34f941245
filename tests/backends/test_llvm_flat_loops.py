"""The LLVM generator's flat loops (``llvm_cpu/fused_loops.py``): a fusion group whose arrays are all
C-contiguous and of its loop's whole shape runs as one loop over every element, which must read,
write and fold exactly what the loop nest did; a group with a broadcast operand, a strided view or a
reduction over some dimensions only keeps its nest. One kernel, compiled for real."""
from __future__ import annotations

import numpy as np

import jitgrad as jg
from jitgrad import fx
from jitgrad.backends.llvm_cpu import lower
from jitgrad.fx import passes


def _lowered(program, *tensors):
    return lower(passes.PassManager().run(fx.trace(program, *tensors).graph))


def test_a_group_of_whole_contiguous_arrays_runs_flat_and_the_others_keep_their_nest():
    def program(x, row):
        d = x[1:] - x[:-1]                      # two contiguous views of x: flat
        return ((d * d).mean(),                 # a mean over everything: counts every element
                (d * d).sum(dim=(0, 1), keepdim=True),
                d * 3.0,                         # stored, flat
                (d * row).sum(),                # row broadcast along the rows: a nest
                (d * 2.0).sum(0),               # over the rows only: a nest
                (x[:, 1:] * 2.0).sum(),         # a strided view: a nest
                # the backward copies into x[1:] (contiguous: one memmove) and into x[:, 1:] (strided)
                jg.autograd.grad(((x[1:] - x[:-1]) ** 2).sum() + (x[:, 1:] * row[1:]).sum(), x)[0])

    rng = np.random.default_rng(5)
    x, row = rng.standard_normal((7, 3)), rng.standard_normal(3)
    kernel = _lowered(program, jg.tensor(x, requires_grad=True), jg.tensor(row))
    for got, want in zip(kernel(x, row), program(jg.tensor(x, requires_grad=True), jg.tensor(row)), strict=True):
        np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-14, atol=0)
    flat = _lowered(lambda x: ((x[1:] - x[:-1]) ** 2).sum(), jg.tensor(x))
    assert "i1_head" not in flat.source and "i0_head" in flat.source   # one loop, not a nest
    assert "i1_head" in kernel.source and "memmove" in kernel.source
