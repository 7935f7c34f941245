"""Probability distributions, as ``torch.distributions``: parameters as tensors, ``sample``/``rsample``
from jitgrad's generator, ``log_prob``, ``entropy``, moments, ``cdf``/``icdf``, and ``kl_divergence``
with a registry; everything computed with jitgrad ops, so gradients reach the parameters and a
compiled function that uses a distribution compiles (docs/distributions.md)."""
from . import constraints, transforms
from .bernoulli import Bernoulli
from .cauchy import Cauchy
from .categorical import Categorical, OneHotCategorical
from .distribution import Distribution
from .continuous_bernoulli import ContinuousBernoulli
from .counts import Binomial, Geometric, Poisson
from .exponential import Exponential
from .folded import HalfCauchy, HalfNormal
from .gamma import Beta, Chi2, Dirichlet, Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal
from .normal import LogNormal, Normal
from .student_t import StudentT
from .transformed_distribution import TransformedDistribution
from .transformed_families import Gumbel, InverseGamma, Kumaraswamy, LogisticNormal, Pareto, Weibull
from .transforms import (AbsTransform, AffineTransform, ComposeTransform, ExpTransform, PowerTransform,
                         SigmoidTransform, SoftplusTransform, StickBreakingTransform, TanhTransform, Transform)
from .uniform import Uniform

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2",
           "ComposeTransform", "ContinuousBernoulli", "Dirichlet", "Distribution", "ExpTransform", "Exponential",
           "Gamma", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "InverseGamma", "Kumaraswamy",
           "Laplace", "LogNormal", "LogisticNormal", "MultivariateNormal", "Normal", "OneHotCategorical", "Pareto",
           "Poisson", "PowerTransform", "SigmoidTransform", "SoftplusTransform", "StickBreakingTransform", "StudentT",
           "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "Weibull", "constraints",
           "kl_divergence", "register_kl", "transforms"]
