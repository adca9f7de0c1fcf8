"""The estimators against issue 19's targets, by the simulation bench (suites/tools/estimators.py)
in its quick mode: seeded, so every figure here is the same on every run. A target the
estimators miss is an xfail(strict) naming the cause and the numbers, never a looser assert."""
from __future__ import annotations

import numpy as np
import pytest

from suites.tools import estimators, noise_models
from suites.tools.noise_models import BASELINE

SEED = 0
MIN_COVERAGE = 0.93
MIN_HEADLINE_SHARE = 0.80
MAX_AA_PER_60 = 1.0
POWER_TARGETS = {1.15: 0.90, 1.30: 0.99}
SMALL_DRIFT = 0.02

# Where the bench shows an estimator short of a target, the case and why (filled from the
# bench's own numbers; see the reason).
SHORT = {
    ("flips", "iid lognormal 15%"): (
        "a 95% interval's tail, not a bias: at 15% round noise the 5%-slower variant is called "
        "faster in 1 of 800 rows here, 3 of 2000 in the full bench (10 rounds); coverage is met"),
    ("flips", "slow state p=0.4 a round"): (
        "a state that comes and goes at random: a run of 10 rounds sees 0 to 8 slow rounds, and "
        "where it sees few the variant's own mix is faster than its long-run mean: 3 of 800 "
        "rows called the other way here, 6 of 2000 in the full bench (the two_states finding "
        "says the mix may differ next run)"),
    ("speedup_coverage", "slow state p=0.4 a round"): (
        "the same: the run's mix of the two states is not the long-run mix, which 10 rounds "
        "estimate with a bimodal spread Student's t does not quite hold: 92.2% of 800 rows "
        "here, 93.2% of the full bench's 2000 (at the target, within its sampling error)"),
    ("mean_coverage", "slow state p=0.4 a round"): (
        "the same, for us/call: 92.8% of 800 rows here, 93.5% of the full bench's 2000"),
    ("power", 1.15): (
        "5% round noise, 10 rounds, 2% drift known: the 99% decision needs the log ratio ~2.9 "
        "standard errors from 0, so a 1.15x slowdown is called in 82.0% of 1200 rows (20 "
        "pairs of runs); 20 rounds (timing.rounds=20) call it in 96.7%"),
    ("mean_coverage", "bimodal calls 9.2|12.2"): (
        "a round's mean over calls that are 9.2 or 12.2 us at random: the round figures are "
        "skewed at few calls a round and Student's t covers 92.8% of 400 rows here, 93.8% of "
        "the full bench's 1000"),
}


def _short(kind: str, key) -> list:
    reason = SHORT.get((kind, key))
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


def _models(kind: str, only=lambda m: True) -> list:
    return [pytest.param(m.name, id=m.name, marks=_short(kind, m.name))
            for m in noise_models.one_run_models() if only(m)]


@pytest.fixture(scope="module")
def bench() -> estimators.Bench:
    return estimators.run_bench(quick=True, seed=SEED)


@pytest.fixture
def stats_of(bench):
    return lambda name: next(s for s in bench.one_run if s.model == name)


@pytest.mark.parametrize("name", _models("speedup_coverage"))
def test_speedup_interval_covers_the_true_speedup(stats_of, name):
    stats = stats_of(name)
    assert stats.noisy == 0 and stats.speedup_coverage >= MIN_COVERAGE, stats


@pytest.mark.parametrize("name", _models("mean_coverage"))
def test_time_interval_covers_the_true_mean(stats_of, name):
    assert stats_of(name).mean_coverage >= MIN_COVERAGE, stats_of(name)


@pytest.mark.parametrize("name", _models("flips"))
def test_no_effect_of_3_percent_is_called_the_other_way(stats_of, name):
    assert stats_of(name).flips == 0, stats_of(name)


@pytest.mark.parametrize("name", _models("headline", lambda m: m.periodic_cost_us > 0))
def test_a_periodic_cost_reaches_the_headline(stats_of, name):
    assert stats_of(name).headline_share >= MIN_HEADLINE_SHARE, stats_of(name)


def _compare(bench, known: bool) -> estimators.CompareStats:
    return next(s for s in bench.compare if s.drift == SMALL_DRIFT
                and (s.drift_sd_label == "known") == known)


@pytest.mark.parametrize("known", [True, False], ids=["drift known", "default DRIFT_SD"])
def test_compare_aa_calls_at_most_one_row_in_60(bench, known):
    stats = _compare(bench, known)
    assert stats.aa.rows >= 600 and stats.aa.per_60() <= MAX_AA_PER_60, stats


@pytest.mark.parametrize("slowdown", [pytest.param(s, marks=_short("power", s))
                                      for s in POWER_TARGETS])
def test_compare_finds_a_slowdown_with_a_small_known_drift(bench, slowdown, record_property):
    found = _compare(bench, known=True).slower_share[slowdown]
    with_default = _compare(bench, known=False).slower_share[slowdown]
    # Recorded, not asserted: with compare's default drift (no A/A control) a row must move by
    # far more than 15% to be called, by design (suites/reports/compare/drift.py).
    record_property(f"power {slowdown}x with default DRIFT_SD", with_default)
    print(f"{slowdown}x: found in {found:.1%} with the drift known, {with_default:.1%} with "
          "the default DRIFT_SD")
    assert found >= POWER_TARGETS[slowdown]


def test_the_ab_design_holds_a_a_covers_and_finds_ten_percent(bench):
    """compare --ab's default design (12 pairs) on runs with a 10% machine state each pair
    shares, 2% drift of a run's own and a case gone astray now and then
    (suites/tools/estimators_ab.py): the pairs cancel the shared state, the trimmed mean keeps
    an astray case from deciding. (8 pairs find 1.10x in 80% of the full bench's rows.)"""
    (ab,) = bench.ab  # quick: 2% drift, the default 12 pairs
    assert ab.pairs == 12 and ab.rows >= 300
    assert ab.aa_per_60 <= MAX_AA_PER_60, ab
    assert ab.coverage >= 0.98, ab
    assert ab.slower_share[1.10] >= 0.90, ab
    assert "A/B design (compare --ab)" in "\n".join(estimators.report(bench, SEED, 0.0))


def test_the_report_names_the_default_rounds_and_every_model(bench):
    text = "\n".join(estimators.report(bench, SEED, 0.0))
    assert f"{bench.timing.rounds} rounds" in text
    assert all(m.name in text for m in noise_models.one_run_models())


# The models themselves: their truth is the mean time per call they draw.

@pytest.mark.parametrize("model", noise_models.one_run_models(), ids=lambda m: m.name)
def test_a_model_draws_its_truth_on_average(model):
    rng = np.random.default_rng(1)
    draws = [model.draw(rng, 5, lambda _: 400) for _ in range(40)]
    for variant, truth in model.truth_us.items():
        calls = np.concatenate([c for d in draws for c in d[variant]])
        if model.family == "machine state":  # the boosted round is the machine's, not truth
            calls = np.concatenate([c for d in draws for c in d[variant]
                                    if c.mean() > 0.85 * truth])
        assert calls.mean() == pytest.approx(truth, rel=0.01), variant


def test_the_event_grid_reads_only_grid_steps_and_is_unbiased():
    rng = np.random.default_rng(2)
    read = noise_models.on_grid(rng, np.full(100_000, 6.3))
    assert set(np.unique(read)) == {6.0, 6.5}
    assert read.mean() == pytest.approx(6.3, rel=0.002)


def test_periodic_stalls_fall_every_kth_call_across_rounds():
    model = noise_models.periodic_stall(12)
    samples = model.draw(np.random.default_rng(3), 5, lambda _: 30)
    stalled = np.concatenate(samples["stalling"]) > 1000
    assert stalled.sum() == 150 // 12 or stalled.sum() == 150 // 12 + 1
    assert set(np.diff(np.flatnonzero(stalled))) == {12}
    assert BASELINE in samples and not (np.concatenate(samples[BASELINE]) > 1000).any()
