"""Confidence intervals over replications (seeds), without SciPy.

The 95% interval of a mean over ``n`` seeds is ``mean ± t(0.975, n−1) · s / √n`` (Student),
with ``s`` the sample standard deviation. The t quantile is found by bisection on the
closed form of Student's distribution for an integer number of degrees of freedom
(Abramowitz & Stegun 26.7.3 and 26.7.4), which is exact up to floating point.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

__all__ = ["mean_ci", "paired_t_p", "sign_test_p", "t_quantile", "t_two_sided_probability"]


def t_two_sided_probability(t: float, dof: int) -> float:
    """``P(|T| ≤ t)`` for Student's T with ``dof`` degrees of freedom (A&S 26.7.3/4).

    With ``θ = atan(t / √ν)``: for odd ν, ``(2/π)(θ + sin θ · Σ)``, the sum
    ``cos θ + (2/3)cos³θ + (2·4)/(3·5)cos⁵θ + …`` up to ``cos^(ν−2)θ`` (empty for ν = 1);
    for even ν, ``sin θ · (1 + (1/2)cos²θ + (1·3)/(2·4)cos⁴θ + …)`` up to ``cos^(ν−2)θ``.
    """
    if dof < 1:
        raise ValueError(f"dof = {dof} is not allowed; expected at least 1 degree of freedom")
    if t < 0:
        raise ValueError(f"t = {t} is not allowed; expected t >= 0")
    theta = math.atan(t / math.sqrt(dof))
    sin, cos = math.sin(theta), math.cos(theta)
    if dof % 2 == 1:
        total, term = 0.0, cos
        for k in range(1, (dof - 1) // 2 + 1):  # terms cos^1 … cos^(ν−2)
            total += term
            term *= cos * cos * (2 * k) / (2 * k + 1)
        return 2.0 / math.pi * (theta + sin * total)
    total, term = 0.0, 1.0
    for k in range(1, dof // 2 + 1):  # terms cos^0 … cos^(ν−2)
        total += term
        term *= cos * cos * (2 * k - 1) / (2 * k)
    return sin * total


@functools.cache  # a comparison's bands ask for the same few quantiles many times
def t_quantile(probability: float, dof: int) -> float:
    """The ``probability`` quantile of Student's T (``probability`` in [0.5, 1)),
    e.g. ``t_quantile(0.975, 9) = 2.2622`` for a 95% interval over 10 samples."""
    if not 0.5 <= probability < 1.0:
        raise ValueError(f"probability = {probability} is not allowed; expected 0.5 <= p < 1")
    target = 2.0 * probability - 1.0  # P(|T| <= t)
    low, high = 0.0, 1.0
    while t_two_sided_probability(high, dof) < target:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_two_sided_probability(middle, dof) < target:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * high:
            break
    return (low + high) / 2.0


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """``(mean, half-width)`` of the Student-t ``confidence`` interval of the mean of
    ``values`` (NaN and None left out). The half-width is NaN with fewer than two values;
    the mean is NaN with none."""
    finite = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(finite)
    if n == 0:
        return math.nan, math.nan
    mean = math.fsum(finite) / n
    if n < 2:
        return mean, math.nan
    variance = math.fsum((v - mean) ** 2 for v in finite) / (n - 1)
    return mean, t_quantile((1.0 + confidence) / 2.0, n - 1) * math.sqrt(variance / n)


def paired_t_p(differences: Sequence[float]) -> float:
    """Two-sided p-value of the paired t-test that the mean of ``differences`` (one per
    seed, NaN left out) is 0: ``1 − P(|T| ≤ |mean| / (s / √n))`` with n − 1 degrees of
    freedom. NaN with fewer than two differences; with no spread, 1 if every difference
    is 0, else 0."""
    finite = [float(d) for d in differences if d is not None and not math.isnan(float(d))]
    n = len(finite)
    if n < 2:
        return math.nan
    mean = math.fsum(finite) / n
    sd = math.sqrt(math.fsum((d - mean) ** 2 for d in finite) / (n - 1))
    if sd == 0.0:
        return 1.0 if mean == 0.0 else 0.0
    return max(0.0, 1.0 - t_two_sided_probability(abs(mean) / (sd / math.sqrt(n)), n - 1))


def sign_test_p(differences: Sequence[float]) -> float:
    """Exact two-sided sign test: with ``k`` of the ``n`` non-zero differences on the rarer
    side, ``min(1, 2 · Σ_{i ≤ k} C(n, i) / 2^n)``; ties (zeros) and NaN left out. NaN when
    no difference is non-zero."""
    signs = [d > 0 for d in differences if d is not None and not math.isnan(float(d)) and d != 0]
    n = len(signs)
    if n == 0:
        return math.nan
    k = min(sum(signs), n - sum(signs))
    return min(1.0, 2.0 * float(sum(math.comb(n, i) for i in range(k + 1))) / float(2**n))

