"""``kl_divergence(p, q)`` and ``register_kl``: KL(p || q) looked up by the pair of types, the most
specific registered pair winning (a subclass's pair before its base's), as PyTorch's registry; and
the pairs PyTorch registers between jitgrad's families, each in closed form (infinite where ``q``'s
support misses part of ``p``'s)."""
from __future__ import annotations

import math
import warnings
from functools import total_ordering
from typing import Callable

from ..ops import FUNCTIONS
from ..tensor import Tensor
from ..factories import full_like
from .bernoulli import Bernoulli
from .categorical import Categorical, OneHotCategorical
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .counts import Binomial, Geometric, Poisson
from .distribution import Distribution
from .exponential import Exponential
from .folded import HalfNormal
from .gamma import Beta, Dirichlet, Gamma
from .independent import Independent
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal, half_log_det, inverse_tril, mahalanobis
from .normal import LogNormal, Normal
from .parameters import sum_rightmost
from .transformed_distribution import TransformedDistribution
from .transformed_families import EULER_GAMMA, Gumbel, Pareto
from .uniform import Uniform

digamma, exp, lgamma, log, log1p, softplus, where = (FUNCTIONS[name] for name in
                                                     ("digamma", "exp", "lgamma", "log", "log1p", "softplus", "where"))

__all__ = ["kl_divergence", "register_kl"]

KLFunction = Callable[[Distribution, Distribution], Tensor]
_KL_REGISTRY: dict[tuple[type, type], KLFunction] = {}
_KL_MEMOIZE: dict[tuple[type, type], KLFunction] = {}


def register_kl(type_p: type, type_q: type) -> Callable[[KLFunction], KLFunction]:
    """A decorator that registers ``fun(p, q)`` as KL(p || q) for ``p`` of ``type_p`` and ``q`` of
    ``type_q`` (or their subclasses, where no more specific pair is registered)."""
    for name, given in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(given, type) and issubclass(given, Distribution)):
            raise TypeError(f"Expected {name} to be a Distribution subclass but got {given}")

    def decorator(fun: KLFunction) -> KLFunction:
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()  # a new pair may be more specific than one remembered
        return fun

    return decorator


@total_ordering
class _Match:
    """A registered pair ordered by specificity: one pair is below another when each of its types is a
    subclass of the other's."""

    def __init__(self, *types: type) -> None:
        self.types = types

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Match) and self.types == other.types

    def __le__(self, other: _Match) -> bool:
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p: type, type_q: type) -> KLFunction | None:
    matches = [(p, q) for p, q in _KL_REGISTRY if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return None
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun, right_fun = _KL_REGISTRY[left_p, left_q], _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please register_kl("
                      f"{left_p.__name__}, {right_q.__name__})", RuntimeWarning, stacklevel=2)
    return left_fun


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q) = E_p[log p(x) - log q(x)], batched over the distributions' batch shape."""
    key = (type(p), type(q))
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _dispatch_kl(*key)
    fun = _KL_MEMOIZE[key]
    if fun is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and "
                                  f"q type {type(q).__name__}")
    return fun(p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - log(var_ratio))


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p: LogNormal, q: LogNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = where(p.probs == 0, 0.0, where(q.probs == 0, math.inf, t1))
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = where(p.probs == 1, 0.0, where(q.probs == 1, math.inf, t2))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = where(p.probs == 0, 0.0, where(q.probs == 0, math.inf, t))
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = log((q.high - q.low) / (p.high - p.low))
    return where((q.low > p.low) | (q.high < p.high), math.inf, result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    rate_ratio = q.rate / p.rate
    return -log(rate_ratio) + rate_ratio - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -log(scale_ratio) + loc_abs_diff / q.scale + scale_ratio * exp(-loc_abs_diff / p.scale) - 1


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * log(p.rate / q.rate)
    t2 = lgamma(q.concentration) - lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    p1, p0, q1, q0 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    sum_p, sum_q = p1 + p0, q1 + q0
    t1 = lgamma(q1) + lgamma(q0) + lgamma(sum_p)
    t2 = lgamma(p1) + lgamma(p0) + lgamma(sum_q)
    return t1 - t2 + (p1 - q1) * digamma(p1) + (p0 - q0) * digamma(p0) + (sum_q - sum_p) * digamma(sum_p)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    sum_p, sum_q = p.concentration.sum(-1), q.concentration.sum(-1)
    t1 = lgamma(sum_p) - lgamma(sum_q)
    t2 = (lgamma(p.concentration) - lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = digamma(p.concentration) - digamma(sum_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    p_tril, q_tril = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = half_log_det(q_tril) - half_log_det(p_tril)
    term2 = (inverse_tril(q_tril) @ p_tril).pow(2).sum((-2, -1))  # tr(Sigma_q^-1 Sigma_p)
    term3 = mahalanobis(q_tril, q.loc - p.loc)
    result = half_term1 + 0.5 * (term2 + term3 - p.event_shape[0])
    return result.expand(tuple(p.batch_shape)) if len(p.batch_shape) else result


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    """The bases' KL, when both push them through equal transforms (a bijection keeps the KL)."""
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    return log((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)) - log(4 * p.scale * q.scale)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    scale_ratio, q_loc, p_loc = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    return (-log(scale_ratio) - q_loc + p_loc + scale_ratio * EULER_GAMMA
            + exp(q_loc + lgamma(1 + scale_ratio) - p_loc) - (1 + EULER_GAMMA))


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * log(p.scale / q.scale) - log(alpha_ratio) + alpha_ratio - 1
    return where(p.scale < q.scale, math.inf, result)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - log1p(-q.probs) / p.probs - q.logits


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (log(p.rate) - log(q.rate)) - (p.rate - q.rate)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    """Infinite where ``p`` flips more coins than ``q``; fewer is refused, as by PyTorch."""
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + log1p(-p.probs) - log1p(-q.probs))
    return where(p.total_count > q.total_count, math.inf, kl)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    return (p.mean * (p.logits - q.logits) + p._cont_bern_log_norm() + log1p(-p.probs)
            - q._cont_bern_log_norm() - log1p(-q.probs))


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p: ContinuousBernoulli, q: Exponential) -> Tensor:
    return -p.entropy() - log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p: ContinuousBernoulli, q: Normal) -> Tensor:
    """``-H(p) - E_p[log q(x)]``, from ``p``'s first two moments."""
    log_normalizer = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).pow(2)) + log(q.scale)
    return -p.entropy() + log_normalizer + (p.variance + p.mean.pow(2) - 2.0 * q.loc * p.mean) / (2.0 * q.scale.pow(2))


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    rate_scale, loc_scale = p.rate * q.scale, q.loc / q.scale
    return log(rate_scale) - 1 - loc_scale + exp(loc_scale) * rate_scale / (rate_scale + 1) + rate_scale.reciprocal()


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal) -> Tensor:
    """``-H(p) - E_p[log q]``, from the Gumbel's mean ``loc + scale gamma`` and variance ``(pi scale) ** 2 / 6``."""
    ratio = p.scale / q.scale
    mean_gap = (p.loc + p.scale * EULER_GAMMA - q.loc) / q.scale
    return (-log(ratio / math.sqrt(2 * math.pi)) + (math.pi * ratio * 0.5).pow(2) / 3 + mean_gap.pow(2) * 0.5
            - (EULER_GAMMA + 1))


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    """``-H(p) - E_p[log q]``, ``E_p[exp(-x / s)]`` being the normal's moment generating function."""
    mean_ratio, variance_ratio, loc_ratio = p.loc / q.scale, (p.scale / q.scale).pow(2), q.loc / q.scale
    return (-0.5 * log(variance_ratio) + mean_ratio - loc_ratio + exp(-mean_ratio + 0.5 * variance_ratio + loc_ratio)
            - 0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> Tensor:
    """Infinite where ``alpha <= 1`` (the Pareto's mean is)."""
    scale_rate = p.scale * q.rate
    result = log(p.alpha / scale_rate) - p.alpha.reciprocal() + p.alpha * scale_rate / (p.alpha - 1) - 1
    return where(p.alpha <= 1, math.inf, result)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    width_ratio = q.scale / (p.high - p.low)
    high, low = (p.high - q.loc) / q.scale, (p.low - q.loc) / q.scale
    return log(width_ratio) + 0.5 * (high + low) - width_ratio * (exp(-high) - exp(-low))


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    """Infinite where the uniform reaches below the Pareto's ``scale``."""
    width = p.high - p.low
    mean_log = (p.high * log(p.high) - p.low * log(p.low) - width) / width   # E_p[log x]
    result = mean_log * (q.alpha + 1) - log(q.alpha * q.scale.pow(q.alpha) * width)
    return where(p.low < q.scale, math.inf, result)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    return -p.entropy() - (p.probs * log(q.rate) - q.rate)


@register_kl(Gumbel, Beta)
@register_kl(Gumbel, ContinuousBernoulli)
@register_kl(Gumbel, Exponential)
@register_kl(Gumbel, Gamma)
@register_kl(Gumbel, Pareto)
@register_kl(Gumbel, Uniform)
@register_kl(Laplace, ContinuousBernoulli)
@register_kl(Laplace, Pareto)
@register_kl(Normal, ContinuousBernoulli)
@register_kl(Normal, Pareto)
def _kl_real_line_to_bounded(p: Gumbel | Laplace | Normal, q: Distribution) -> Tensor:
    return full_like(p.loc, math.inf)


@register_kl(Beta, Pareto)
@register_kl(ContinuousBernoulli, Pareto)
@register_kl(Exponential, ContinuousBernoulli)
@register_kl(Exponential, Pareto)
@register_kl(Gamma, ContinuousBernoulli)
@register_kl(Gamma, Pareto)
@register_kl(Pareto, Beta)
@register_kl(Pareto, ContinuousBernoulli)
@register_kl(Pareto, Uniform)
@register_kl(Poisson, Bernoulli)
@register_kl(Poisson, Binomial)
def _kl_to_smaller_support(p: Distribution, q: Distribution) -> Tensor:
    return full_like(p.mean, math.inf)
