"""The model of two runs' B/A (suites/results/intervals.py): Student's t without scipy, the
Welch-Satterthwaite degrees of freedom with a known drift part, the intervals and the minimum
detectable change, and the drift an A/A control shows."""
import math

import numpy as np
import pytest

from suites.results.intervals import (_T95, aa_drift_sd, run_ratio, t_cdf, t_quantile,
                                      welch_dof)


@pytest.mark.parametrize("dof", sorted(_T95))
def test_t_quantile_agrees_with_the_table(dof):
    assert t_quantile(0.975, dof) == pytest.approx(_T95[dof], abs=5e-4)


def test_t_quantile_for_any_dof_and_both_tails():
    assert t_quantile(0.995, 1) == pytest.approx(63.657, abs=1e-3)   # tan(pi * 0.495)
    assert t_quantile(0.995, 2) == pytest.approx(9.925, abs=1e-3)
    assert t_quantile(0.80, 18) == pytest.approx(0.862, abs=1e-3)
    assert t_quantile(0.80, math.inf) == pytest.approx(0.8416, abs=1e-4)
    assert t_quantile(0.995, 2) > t_quantile(0.995, 2.5) > t_quantile(0.995, 3)  # real dof
    assert t_quantile(0.05, 7.5) == pytest.approx(-t_quantile(0.95, 7.5))
    for p in (0.6, 0.9, 0.995):
        assert t_cdf(t_quantile(p, 4.3), 4.3) == pytest.approx(p, abs=1e-10)
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)


def test_the_drift_part_counts_as_known_in_the_degrees_of_freedom():
    rounds_only = welch_dof([(0.01, 4), (0.01, 4)])
    assert rounds_only == pytest.approx(8.0)
    assert welch_dof([(0.01, 4), (0.01, 4), (0.02, math.inf)]) == pytest.approx(32.0)
    assert welch_dof([(0.0, 4), (0.0, 4), (0.02, math.inf)]) == math.inf


def _draw(rng, ratio, n, noise):
    return 100.0 * ratio * np.exp(rng.normal(0.0, noise, n))


def test_the_intervals_and_the_minimum_detectable_change():
    rng = np.random.default_rng(3)
    a, b = _draw(rng, 1.0, 10, 0.05), _draw(rng, 1.2, 10, 0.05)
    r = run_ratio(a, b, drift_sd=0.02)
    assert r.low < r.eq_low < r.ratio < r.eq_high < r.high  # 99% around 90%
    logs_a, logs_b = np.log(a), np.log(b)
    round_var = logs_a.var(ddof=1) / 10 + logs_b.var(ddof=1) / 10
    assert r.round_se == pytest.approx(math.sqrt(round_var))
    assert r.se == pytest.approx(math.sqrt(round_var + 2 * 0.02**2))
    assert r.ratio == pytest.approx(math.exp(logs_b.mean() - logs_a.mean()))
    assert r.mde == pytest.approx(math.expm1((t_quantile(0.995, r.dof) + t_quantile(0.8, r.dof))
                                             * r.se))
    assert run_ratio(a, b, drift_sd=0.05).mde > r.mde  # more drift: less seen
    same = run_ratio([10.0] * 3, [10.0] * 3, drift_sd=0.0)
    assert same.low == same.high == 1.0 and same.mde == 0.0
    assert run_ratio([10.0] * 3, [10.0] * 3, drift_sd=0.03).high > 1.0  # drift alone: a width


def test_a_1_15x_slowdown_is_seen_and_a_a_is_rarely_called():
    """10 rounds a side at 5% round noise and no drift: the 99% interval excludes 1 for a true
    1.15x in >= 90% of draws, and for A/A in <= 1.7% (1% expected)."""
    rng = np.random.default_rng(19)
    draws = 2000
    seen = sum(run_ratio(_draw(rng, 1.0, 10, 0.05), _draw(rng, 1.15, 10, 0.05), 0.0).low > 1
               for _ in range(draws))
    called = 0
    for _ in range(draws):
        r = run_ratio(_draw(rng, 1.0, 10, 0.05), _draw(rng, 1.0, 10, 0.05), 0.0)
        called += not r.low <= 1 <= r.high
    assert seen >= 0.90 * draws
    assert called <= 0.017 * draws


def test_drift_is_carried_into_the_a_a_error_rate():
    """Runs that each land 4% off (drift), 10 rounds of 2% noise: without the drift in the model
    A/A is called a change often; with it, about 1% of the time."""
    rng = np.random.default_rng(5)
    rates = {}
    for assumed in (0.0, 0.04):
        called = 0
        for _ in range(1000):
            a = _draw(rng, math.exp(rng.normal(0, 0.04)), 10, 0.02)
            b = _draw(rng, math.exp(rng.normal(0, 0.04)), 10, 0.02)
            r = run_ratio(a, b, assumed)
            called += not r.low <= 1 <= r.high
        rates[assumed] = called / 1000
    assert rates[0.0] > 0.3 and rates[0.04] <= 0.02


def test_the_drift_an_a_a_control_shows():
    rng = np.random.default_rng(11)
    drift, noise, rounds = 0.03, 0.02, 8
    cases = []
    for _ in range(400):  # each copy lands drift off; rounds of both copies are noisy
        offset = rng.normal(0, drift) - rng.normal(0, drift)
        cases.append(offset + rng.normal(0, noise, rounds) - rng.normal(0, noise, rounds))
    assert aa_drift_sd(cases) == pytest.approx(drift, rel=0.12)
    quiet = [rng.normal(0, noise, rounds) for _ in range(50)]  # round noise only: no drift
    assert aa_drift_sd(quiet) < 0.006
    assert aa_drift_sd(cases[:2]) is None  # too few cases to replace the default
    assert aa_drift_sd([cases[0], cases[1], [0.1]]) is None  # a case of one round: unused
