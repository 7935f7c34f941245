"""DOT text for the IR and for the eager backward graph, and ``render`` with or without Graphviz."""
from __future__ import annotations

import shutil

import pytest

import jitgrad as jg
from jitgrad import fx
from jitgrad.autograd.graph import to_dot as backward_to_dot
from jitgrad.fx.passes import group_fusions


def test_fx_to_dot_draws_nodes_edges_and_fusion_clusters():
    graph = group_fusions(fx.trace(lambda x: (x.exp() * 2.0).sum(), jg.randn(3)).graph)
    text = fx.to_dot(graph)
    assert text.startswith("digraph fx {") and text.rstrip().endswith("}")
    assert '"x" -> "exp";' in text and '"sum" -> "output";' in text
    assert 'subgraph cluster_fused_0 { label="fused_0"; "exp"; "mul"; "sum"; }' in text


def test_autograd_to_dot_follows_grad_fn():
    x = jg.randn(3, requires_grad=True)
    text = backward_to_dot((x * 2.0).exp().sum())
    for name in ("SumBackward0", "ExpBackward0", "MulBackward0", "AccumulateGrad\\n[3]"):
        assert name in text
    assert "n0 -> n1" in text
    assert "->" not in backward_to_dot(jg.randn(2))  # no grad_fn: just the tensor


def test_render_writes_a_file_or_explains_how_to_get_dot(tmp_path):
    text = fx.to_dot(fx.trace(lambda x: x.exp(), jg.randn(2)).graph)
    target = tmp_path / "graph.svg"
    if shutil.which("dot") is None:
        with pytest.raises(RuntimeError, match="apt-get install graphviz"):
            text.render(target)
    else:
        assert text.render(target).read_text().lstrip().startswith("<?xml")
