"""An op's declaration is the one place that makes it public (``jitgrad/ops/public.py``): ``jitgrad``,
``jitgrad.ops`` and ``Tensor`` export exactly what the declarations say."""
from __future__ import annotations

import pytest

import jitgrad as jg
from jitgrad.ops.public import PUBLIC, public, public_names


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_a_declared_op_is_public_where_its_declaration_says(name):
    value, variants = PUBLIC[name]
    if "function" in variants:
        assert getattr(jg, name) is value
        assert getattr(jg.ops, name) is value
        assert name in jg.ops.__all__
    else:
        assert not hasattr(jg, name) and name not in jg.ops.__all__
    if "method" in variants:
        assert getattr(jg.Tensor, name) is value


def test_ops_all_lists_the_functions_and_the_building_blocks_of_other_layers():
    assert set(jg.ops.__all__) == set(public_names("function")) | {"REGISTRY", "nll_loss", "normal", "sum_to",
                                                                    "uniform"}
    assert all(hasattr(jg.ops, name) for name in jg.ops.__all__)


def test_a_declaration_names_known_variants():
    with pytest.raises(ValueError, match="one or both of"):
        public("functoin")(lambda x: x)
    with pytest.raises(ValueError, match="one or both of"):
        public()(lambda x: x)


def test_a_name_is_declared_public_once():
    def cube_example(x):
        return x * x * x

    public("function")(cube_example)
    try:
        with pytest.raises(ValueError, match="declared public twice"):
            public("method")(cube_example)
    finally:
        del PUBLIC["cube_example"]


def test_the_names_imported_on_first_use_are_listed_and_found():
    listed = dir(jg)
    for name in ("fx", "optim", "utils", "save", "load", "distributions", "linalg", "special", "testing"):
        assert name in listed
        assert getattr(jg, name) is not None
    assert jg.optim.SGD is not None and callable(jg.save)
