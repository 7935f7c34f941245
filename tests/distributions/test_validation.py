"""``validate_args``: parameters and values outside their constraints raise PyTorch's ``ValueError``s,
with PyTorch's text (``torch.Size`` read as ``jitgrad.Size``); validation follows
``Distribution.set_default_validate_args`` and can be turned off per distribution."""
from __future__ import annotations

import pytest

import jitgrad
import jitgrad.distributions as jd

torch = pytest.importorskip("torch")
td = torch.distributions

NAN = float("nan")
# (family, its arguments as (kind, value) pairs); "t" marks a tensor argument, "n" a number
BAD_PARAMETERS = [
    ("Normal", dict(loc=("n", 0.0), scale=("n", -1.0))),
    ("Normal", dict(loc=("t", [0.0, NAN]), scale=("t", [1.0, 1.0]))),
    ("Laplace", dict(loc=("n", 0.0), scale=("t", [0.0, 1.0]))),
    ("LogNormal", dict(loc=("n", 0.0), scale=("n", -2.0))),
    ("Exponential", dict(rate=("t", [1.0, -1.0]))),
    ("Bernoulli", dict(probs=("t", [0.5, 1.5]))),
    ("Categorical", dict(probs=("t", [[0.5, -0.5, 1.0]]))),
    ("OneHotCategorical", dict(logits=("t", [[0.5, NAN, 1.0]]))),
    ("Gumbel", dict(loc=("n", 0.0), scale=("t", [1.0, -1.0]))),
    ("HalfNormal", dict(scale=("n", -1.0))),
    ("Pareto", dict(scale=("t", [1.0, 2.0]), alpha=("t", [0.0, 1.0]))),
    ("Kumaraswamy", dict(concentration1=("n", 1.0), concentration0=("t", [-1.0]))),
    ("Chi2", dict(df=("t", [0.0]))),
    ("Geometric", dict(probs=("t", [0.5, 0.0]))),
    ("Binomial", dict(total_count=("t", [2.5]), probs=("t", [0.5]))),
    ("Poisson", dict(rate=("t", [-1.0]))),
    ("ContinuousBernoulli", dict(probs=("t", [1.5]), validate_args=("n", True))),
]
BAD_VALUES = [
    ("Normal", dict(loc=("n", 0.0), scale=("n", 1.0)), [NAN]),
    ("Exponential", dict(rate=("t", [1.0, 2.0])), [-1.0, 1.0]),
    ("Uniform", dict(low=("n", 0.0), high=("n", 1.0)), [1.5]),
    ("Bernoulli", dict(probs=("n", 0.3)), [0.5]),
    ("Categorical", dict(probs=("t", [0.2, 0.8])), [2]),
    ("OneHotCategorical", dict(probs=("t", [0.2, 0.8])), [1.0, 1.0]),
    ("LogNormal", dict(loc=("n", 0.0), scale=("n", 1.0)), [-1.0]),
    ("Pareto", dict(scale=("t", [1.0, 2.0]), alpha=("n", 1.0)), [1.5, 1.5]),
    ("HalfCauchy", dict(scale=("n", 1.0)), [-0.5]),
    ("Weibull", dict(scale=("n", 1.0), concentration=("n", 2.0)), [0.0]),
    ("Poisson", dict(rate=("n", 2.0)), [1.5]),
    ("Binomial", dict(total_count=("n", 3), probs=("n", 0.2)), [4.0]),
]


def args(library, given):
    make = jitgrad.tensor if library is jd else torch.tensor
    return {k: make(v) if kind == "t" else v for k, (kind, v) in given.items()}


def message(call):
    with pytest.raises(ValueError) as caught:
        call()
    return str(caught.value).replace("torch.Size", "jitgrad.Size")


@pytest.mark.parametrize("family,given", BAD_PARAMETERS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD_PARAMETERS)])
def test_parameters_outside_their_constraint_raise_torchs_error(family, given):
    expected = message(lambda: getattr(td, family)(**args(td, given)))
    assert message(lambda: getattr(jd, family)(**args(jd, given))) == expected
    unchecked = {k: v for k, v in args(jd, given).items() if k != "validate_args"}
    getattr(jd, family)(**unchecked, validate_args=False)  # not checked when told not to


def test_student_t_names_itself_where_pytorch_names_its_inner_chi2():
    """PyTorch's StudentT makes a validating Chi2 of its df first, whose error names Chi2 (even under
    validate_args=False); jitgrad's names the distribution the user made, and follows validate_args."""
    expected = message(lambda: td.StudentT(torch.tensor([-1.0, 2.0])))
    got = message(lambda: jd.StudentT(jitgrad.tensor([-1.0, 2.0])))
    assert got == expected.replace("Chi2()", "StudentT(df: jitgrad.Size([2]), loc: jitgrad.Size([2]), "
                                              "scale: jitgrad.Size([2]))")
    jd.StudentT(jitgrad.tensor([-1.0, 2.0]), validate_args=False)


@pytest.mark.parametrize("family,given,value", BAD_VALUES, ids=[f for f, _, _ in BAD_VALUES])
def test_values_outside_the_support_raise_torchs_error(family, given, value):
    t_value = torch.tensor(value, dtype=torch.int64 if family == "Categorical" else torch.float32)
    j_value = jitgrad.tensor(value, dtype=jitgrad.int64 if family == "Categorical" else jitgrad.float32)
    expected = message(lambda: getattr(td, family)(**args(td, given)).log_prob(t_value))
    assert message(lambda: getattr(jd, family)(**args(jd, given)).log_prob(j_value)) == expected
    if family != "Categorical":  # unchecked, an index outside the categories is gather's error, as PyTorch's
        getattr(jd, family)(**args(jd, given), validate_args=False).log_prob(j_value)


def test_shape_errors_and_argument_errors_are_torchs():
    normal = jd.Normal(jitgrad.zeros(3), 1.0)
    assert message(lambda: normal.log_prob(jitgrad.zeros(2))) == message(
        lambda: td.Normal(torch.zeros(3), 1.0).log_prob(torch.zeros(2)))
    one_hot = jd.OneHotCategorical(jitgrad.ones(3))
    assert message(lambda: one_hot.log_prob(jitgrad.ones(2))) == message(
        lambda: td.OneHotCategorical(torch.ones(3)).log_prob(torch.ones(2)))
    for family in ("Bernoulli", "Categorical"):
        assert message(lambda: getattr(jd, family)()) == message(lambda: getattr(td, family)())
    assert message(lambda: jd.Categorical(jitgrad.tensor(1.0))) == message(lambda: td.Categorical(torch.tensor(1.0)))
    assert message(lambda: jd.Independent(jd.Normal(0.0, 1.0), 1)) == message(
        lambda: td.Independent(td.Normal(0.0, 1.0), 1))
    assert message(lambda: normal.log_prob([0.0, 0.0, 0.0])) == "The value argument to log_prob must be a Tensor"


def test_set_default_validate_args_turns_checks_off_and_on():
    try:
        jd.Distribution.set_default_validate_args(False)
        assert jd.Normal(0.0, -1.0).scale.item() == -1.0
        with pytest.raises(ValueError):
            jd.Normal(0.0, -1.0, validate_args=True)
    finally:
        jd.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        jd.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        jd.Distribution.set_default_validate_args("yes")


def test_repr_and_support_constraints_read_as_torchs():
    assert repr(jd.Normal(0.0, 1.0)) == repr(td.Normal(0.0, 1.0))
    bernoulli = repr(jd.Bernoulli(logits=jitgrad.zeros(2)))
    assert bernoulli.replace("jitgrad", "torch") == repr(td.Bernoulli(logits=torch.zeros(2)))
    assert repr(jd.OneHotCategorical(jitgrad.ones(3))) == repr(td.OneHotCategorical(torch.ones(3)))
    for name in ("real", "positive", "unit_interval", "simplex", "boolean", "nonnegative_integer", "one_hot",
                 "real_vector", "nonnegative"):
        assert repr(getattr(jd.constraints, name)) == repr(getattr(td.constraints, name))
    assert repr(jd.constraints.integer_interval(0, 2)) == repr(td.constraints.integer_interval(0, 2))


def test_a_subclass_without_arg_constraints_is_warned_about_as_in_torch():
    class Coin(jd.Distribution):
        pass

    with pytest.warns(UserWarning, match="does not define `arg_constraints`"):
        coin = Coin(batch_shape=(2,))
    assert tuple(coin.batch_shape) == (2,)
    assert tuple(Coin(validate_args=False).event_shape) == ()  # no warning when not validating
