"""Do the estimators tell the truth? A simulation bench: synthetic per-call samples, drawn by
known noise models (suites/tools/noise_models.py), fed through the harness's own code path, and
the answers held against the truth.

    python -m suites.tools.estimators [--quick] [--seed 0]

One run (models 1-6): a case's samples become round_checks.Slot's, and case_run.finish judges
the rounds, summarises each row (mean_us and its interval) and pairs the speedups, as a real
case's are. Per model:
- cover x, cover us: how often the 95% speedup interval holds the true speedup (the ratio of true
  mean times), and the us/call interval the true mean time, for the worst variant of the case
  (so a steady control variant does not dilute a failing one; target >= 0.93);
- bias: the median relative error of the speedup;
- flips: rows whose true effect is 3% or more that the report's own class (change.classify,
  within SAME_WITHIN) calls the other way: "faster" when it is slower (target: none);
- share: for a periodic cost of the variant's own, the share of its mean cost per call that
  reaches the headline mean_us (target >= 80%);
- noisy: rows the harness left without a result (too few clean rounds).

Two runs (compare, model 7, run-to-run drift): each run of 60 rows (30 cases of two variants, 5%
round noise, the default timing's rounds) carries a drift, one lognormal offset per row whose
variance is half run-wide (one factor for every row of the run) and half the row's own; compare's
own run_ratio and decision.change then judge each row ok on both sides with enough clean rounds,
with the drift either known (what an A/A control shows; its estimate's own noise is not
simulated) or compare's default DRIFT_SD. Per drift: A/A false faster/slower per 60 rows (B of
the same truth as A; the worst pair of runs beside the mean), and the share of rows called slower
when B is truly 1.10x, 1.15x or 1.30x slower (targets: A/A <= 1 per 60 rows; 1.15x >= 90%,
1.30x >= 99%).

The A/B design (compare --ab, suites/tools/estimators_ab.py): pairs of such runs, A and B in
turn, with a machine state each pair shares; A/A false calls, coverage of the 99% interval,
mde and power at 1.05x and 1.10x per drift and number of pairs.

Full: 1000 cases a model, 20 pairs of runs a compare cell, drifts 2/4/6% at the default rounds and
at twice as many (a few minutes on one core). --quick (the tests): 400 cases a model, and
compare at the 2% drift and the default rounds only, the same 20 pairs, 1.15x and 1.30x (about a
minute).
"""
from __future__ import annotations

import argparse
import math
import zlib
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import yaml

from suites.config.run_spec import timing_spec
from suites.harness.case_run import CaseOutcome, finish
from suites.harness.contention import RoundLoad
from suites.tools.estimators_ab import (DESIGNS, OWN_DRIFTS, PAIR_COUNTS, SHARED_DRIFT, AbStats,
                                        ab_stats, ab_table)
from suites.harness.profile_pass import ProfileSpec
from suites.harness.round_checks import Slot
from suites.harness.spec import RunSpec, SuiteSpec
from suites.harness.timing import TimingSpec, sample_count
from suites.reports.compare.decision import FLOOR, MIN_ROUNDS, change
from suites.reports.compare.drift import DRIFT_SD
from suites.reports.kit.change import SAME_WITHIN, Change, classify
from suites.results.intervals import run_ratio
from suites.results.row import ResultRow, Roofline
from suites.results.columns import Status
from kernels.base import Case
from suites.tools.noise_models import (BASELINE, NoiseModel, Samples,
                                       one_run_models, steady_case)

DEFAULT_TIMING = Path(__file__).resolve().parents[2] / "conf" / "timing" / "default.yaml"
QUIET = RoundLoad(0.1, others_cores=0.0, wait_frac=0.0)  # a machine doing nothing else
SIM_CASE = Case("simulated", (), "float32", "cpu")
NO_PROFILE = ProfileSpec(False, 0, 1, 2, False, 10)
SIGN_EFFECT = 0.03  # a true effect this large either way must never be called the other way

TRIALS = {"full": 1000, "quick": 400}       # cases per one-run model
# Pairs of 60-row runs per compare cell. The run's drift is shared by its rows, so a cell's
# figures vary with its pairs, not its rows: quick draws the same 20 as full (its cells share
# their streams), so the tests hold the figures the full table shows (12 pairs read 1.15x's
# power as 92%, 20 pairs as 82%).
PAIRS = {"full": 20, "quick": 20}
ROWS_PER_RUN = 60
COMPARE_MEANS = {BASELINE: 10.0, "variant": 9.0}
COMPARE_ROUND_SD = 0.05
COMPARE_CALLS = 20  # calls a round in compare's cases: the round noise is what compare sees
DRIFTS = {"full": (0.02, 0.04, 0.06), "quick": (0.02,)}  # quick: the small drift alone
# The true slowdowns whose power is measured; quick: the two the tests hold to a target.
SLOWDOWNS = {"full": (1.10, 1.15, 1.30), "quick": (1.15, 1.30)}


def default_timing() -> TimingSpec:
    """conf/timing/default.yaml, checked as a run checks it."""
    return timing_spec(yaml.safe_load(DEFAULT_TIMING.read_text()))


def sim_spec(timing: TimingSpec, variants) -> RunSpec:
    suite = SuiteSpec(SIM_CASE.op, ((),), (SIM_CASE.dtype,), tuple(variants), BASELINE)
    return RunSpec(suite, SIM_CASE.device, timing, NO_PROFILE, seed=0, calibrate=False,
                   progress=False, out_dir=Path("."))


def calls_for(timing: TimingSpec):
    """The calls one variant takes in one round's share at a given time per call (the budget's
    rule, so a slow variant takes fewer, as in a real run)."""
    share = timing.per_round()
    return lambda mean_us: sample_count(share, mean_us)


def slots_of(samples: Samples) -> list[Slot]:
    """The shares of the case, the order rotated from round to round as the runner does."""
    variants = list(samples)
    return [Slot(v, r, (i + r) % len(variants), tuple(calls.tolist()), QUIET)
            for i, v in enumerate(variants) for r, calls in enumerate(samples[v])]


def sim_row(variant: str) -> ResultRow:
    return ResultRow(suite=SIM_CASE.op, op=SIM_CASE.op, case_id="sim", variant=variant,
                     family=variant, dtype=SIM_CASE.dtype, device=SIM_CASE.device, params={},
                     roofline=Roofline(flops=1.0, bytes=1.0))


def measured_case(samples: Samples, spec: RunSpec) -> CaseOutcome:
    """The case as the harness finishes a real one: rounds judged, rows summarised, speedups
    paired."""
    outcome = CaseOutcome(SIM_CASE, [sim_row(v) for v in samples], slots_of(samples))
    finish(outcome, spec, None)
    return outcome


# ---- one run ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class RowResult:
    true_speedup: float
    true_us: float
    row: ResultRow


@dataclass(frozen=True)
class OneRunStats:
    model: str
    family: str
    rows: int             # variant rows (the baseline's speedup is 1 by definition)
    speedup_coverage: float  # the worst variant's (a control variant must not dilute it)
    mean_coverage: float     # likewise, over every variant, the baseline too
    bias: float           # median of speedup / true speedup - 1
    flips: int
    flip_rows: int        # rows whose true effect is SIGN_EFFECT or more
    headline_share: float | None  # periodic models only
    noisy: int


def simulate_one_run(model: NoiseModel, trials: int, rng: np.random.Generator,
                     timing: TimingSpec) -> list[RowResult]:
    spec, calls = sim_spec(timing, model.truth_us), calls_for(timing)
    out = []
    for _ in range(trials):
        outcome = measured_case(model.draw(rng, timing.rounds, calls), spec)
        out += [RowResult(model.true_speedup(r.variant), model.truth_us[r.variant], r)
                for r in outcome.rows]
    return out


def covered(low: float, high: float, truth: float) -> bool:
    return low <= truth <= high  # NaN bounds (no interval) cover nothing


def flipped(r: RowResult) -> bool:
    """The report's class says the other way from a true effect of SIGN_EFFECT or more."""
    called = classify(r.row.speedup_low, r.row.speedup_high, SAME_WITHIN)
    return (r.true_speedup >= 1 + SIGN_EFFECT and called == Change.SLOWER) or \
        (r.true_speedup <= 1 / (1 + SIGN_EFFECT) and called == Change.FASTER)


def headline_share(model: NoiseModel, results: list[RowResult]) -> float | None:
    """Median share of the periodic variant's mean cost a call that its mean_us shows."""
    if not model.periodic_cost_us:
        return None
    shares = [(r.row.timing.mean_us - model.steady_us) / model.periodic_cost_us
              for r in results if r.row.variant != BASELINE and r.row.ok]
    return statistics.median(shares) if shares else math.nan


def one_run_stats(model: NoiseModel, results: list[RowResult]) -> OneRunStats:
    ok = [r for r in results if r.row.ok]
    variants = [r for r in ok if r.row.variant != BASELINE]
    eligible = [r for r in variants if abs(math.log(r.true_speedup)) >= math.log1p(SIGN_EFFECT)]
    return OneRunStats(
        model.name, model.family, len(variants),
        _worst_share(variants, lambda r: covered(r.row.speedup_low, r.row.speedup_high,
                                                 r.true_speedup)),
        _worst_share(ok, lambda r: covered(r.row.timing.mean_low_us, r.row.timing.mean_high_us,
                                           r.true_us)),
        statistics.median(r.row.speedup / r.true_speedup - 1 for r in variants)
        if variants else math.nan,
        sum(flipped(r) for r in eligible), len(eligible), headline_share(model, results),
        len(results) - len(ok))


def _worst_share(results: list[RowResult], holds) -> float:
    """The lowest share, over the variants, of their rows for which `holds` is true."""
    by_variant: dict[str, list[bool]] = {}
    for r in results:
        by_variant.setdefault(r.row.variant, []).append(holds(r))
    return min((sum(f) / len(f) for f in by_variant.values()), default=math.nan)


# ---- two runs: compare ------------------------------------------------------------------------

@dataclass(frozen=True)
class Verdicts:
    """compare's verdicts on the rows of some pairs of runs."""
    rows: int
    faster: int
    slower: int
    false_by_pair: tuple[int, ...]  # faster + slower calls in each pair of runs
    median_mde: float

    @property
    def worst_pair(self) -> int:
        return max(self.false_by_pair, default=0)

    def pairs_over_one(self) -> float:
        """The share of pairs of runs (60 rows each) with more than one faster or slower call: a
        run-wide drift clusters them, so the mean can meet a target that single pairs miss."""
        pairs = self.false_by_pair
        return sum(n > 1 for n in pairs) / len(pairs) if pairs else math.nan

    def per_60(self) -> float:
        return (self.faster + self.slower) / self.rows * ROWS_PER_RUN if self.rows else math.nan

    def slower_share(self) -> float:
        return self.slower / self.rows if self.rows else math.nan


def run_offsets(rng: np.random.Generator, drift: float, rows: int) -> np.ndarray:
    """Each row's drift in one run: a run-wide and a row's own lognormal part, half the
    variance each, `drift` in all (in logs)."""
    part = drift / math.sqrt(2)
    return np.exp(part * rng.standard_normal() + part * rng.standard_normal(rows))


def simulated_run(rng, drift: float, slowdown: float, spec: RunSpec) -> list[list[float] | None]:
    """One run's rows: each ok row's clean round figures (None for a row left noisy)."""
    offsets = iter(run_offsets(rng, drift, ROWS_PER_RUN))
    rows = []
    for _ in range(ROWS_PER_RUN // len(COMPARE_MEANS)):
        means = {v: us * slowdown * next(offsets) for v, us in COMPARE_MEANS.items()}
        samples = steady_case(rng, means, spec.timing.rounds, lambda _: COMPARE_CALLS,
                              COMPARE_ROUND_SD)
        outcome = measured_case(samples, spec)
        rows += [_clean_figures(outcome, row) for row in outcome.rows]
    return rows


def _clean_figures(outcome: CaseOutcome, row: ResultRow) -> list[float] | None:
    if row.status != Status.OK:
        return None
    return [s.mean_us for s in sorted(outcome.slots, key=lambda s: s.round)
            if s.variant == row.variant and s.clean]


def compare_pairs(rng, drift: float, slowdown: float, pairs: int, timing: TimingSpec,
                  drift_sds: dict[str, float]) -> dict[str, Verdicts]:
    """Pairs of runs, B `slowdown` times slower than A, each row judged by compare with each
    drift sd in `drift_sds` (label -> sd): label -> the verdicts."""
    spec = sim_spec(timing, COMPARE_MEANS)
    calls = {label: [] for label in drift_sds}  # label -> per pair, its rows' verdicts and mde
    for _ in range(pairs):
        a, b = (simulated_run(rng, drift, s, spec) for s in (1.0, slowdown))
        for label, sd in drift_sds.items():
            calls[label].append([_verdict(ra, rb, sd) for ra, rb in zip(a, b)])
    return {label: _tally(per_pair) for label, per_pair in calls.items()}


def _verdict(a, b, drift_sd: float) -> tuple[str, float] | None:
    """compare's verdict on a row and its mde; None where compare would not judge it."""
    if a is None or b is None or min(len(a), len(b)) < MIN_ROUNDS:
        return None
    r = run_ratio(a, b, drift_sd)
    return str(change(r, FLOOR)), r.mde


def _tally(per_pair: list[list]) -> Verdicts:
    judged = [v for pair in per_pair for v in pair if v is not None]
    count = lambda verdict, rows: sum(1 for v in rows if v is not None and v[0] == verdict)
    by_pair = tuple(count(Change.FASTER, p) + count(Change.SLOWER, p) for p in per_pair)
    return Verdicts(len(judged), count(Change.FASTER, judged), count(Change.SLOWER, judged), by_pair,
                    statistics.median(v[1] for v in judged) if judged else math.nan)


@dataclass(frozen=True)
class CompareStats:
    drift: float
    drift_sd_label: str  # "known" or "default 12%"
    rounds: int
    aa: Verdicts
    slower_share: dict[float, float]  # true slowdown -> share of rows called slower


def compare_stats(rng, drift: float, rounds: int, pairs: int, timing: TimingSpec,
                  slowdowns: tuple[float, ...]) -> list[CompareStats]:
    """A/A and the power at `slowdowns` for one drift, with the drift known and with
    DRIFT_SD."""
    timing = _with_rounds(timing, rounds)
    sds = {"known": drift, f"default {DRIFT_SD:.0%}": DRIFT_SD}
    aa = compare_pairs(rng, drift, 1.0, pairs, timing, sds)
    power = {s: compare_pairs(rng, drift, s, pairs, timing, sds) for s in slowdowns}
    return [CompareStats(drift, label, rounds, aa[label],
                         {s: power[s][label].slower_share() for s in slowdowns})
            for label in sds]


def _with_rounds(timing: TimingSpec, rounds: int) -> TimingSpec:
    return replace(timing, rounds=rounds)


# ---- the bench --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Bench:
    timing: TimingSpec
    one_run: list[OneRunStats]
    compare: list[CompareStats]
    trials: int
    pairs: int
    ab: list[AbStats]


def _stream(seed: int, name: str) -> np.random.Generator:
    """The random stream of one part of the bench, from the seed and the part's name."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def run_bench(quick: bool = False, seed: int = 0, models: list[NoiseModel] | None = None,
              compare_rounds: tuple[int, ...] | None = None) -> Bench:
    """Every model's statistics; quick: fewer trials, and compare at the default rounds and the
    small drift only (full: every drift, at the default rounds and at twice as many: what more
    rounds buy)."""
    mode = "quick" if quick else "full"
    timing = default_timing()
    # A stream of its own per model and per compare cell: a change to one model's draws leaves
    # every other figure as it was.
    one_run = [one_run_stats(m, simulate_one_run(m, TRIALS[mode], _stream(seed, m.name), timing))
               for m in (models if models is not None else one_run_models())]
    rounds = compare_rounds or ((timing.rounds,) if quick else (timing.rounds, 2 * timing.rounds))
    compare = [s for r in rounds for d in DRIFTS[mode]
               for s in compare_stats(_stream(seed, f"compare {r} rounds {d} drift"), d, r,
                                      PAIRS[mode], timing, SLOWDOWNS[mode])]
    spec = sim_spec(timing, COMPARE_MEANS)
    ab = [ab_stats(_stream(seed, f"ab {n} pairs {d} drift"), simulated_run, spec, d, n,
                   DESIGNS[mode])
          for d in OWN_DRIFTS[mode] for n in PAIR_COUNTS[mode]]
    return Bench(timing, one_run, compare, TRIALS[mode], PAIRS[mode], ab)


def _pct(x: float) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.1%}"


def one_run_table(stats: list[OneRunStats]) -> list[str]:
    head = (f"{'model':30} {'rows':>5} {'cover x':>8} {'cover us':>8} {'bias':>7} "
            f"{'flips':>9} {'share':>6} {'noisy':>5}")
    lines = [head]
    for s in stats:
        flips = f"{s.flips}/{s.flip_rows}" if s.flip_rows else "-"
        share = "-" if s.headline_share is None else f"{s.headline_share:.0%}"
        lines.append(f"{s.model:30} {s.rows:5d} {_pct(s.speedup_coverage):>8} "
                     f"{_pct(s.mean_coverage):>8} {s.bias:+7.2%} {flips:>9} {share:>6} "
                     f"{s.noisy:5d}")
    return lines


def compare_table(stats: list[CompareStats]) -> list[str]:
    power = " ".join(f"{f'{s:.2f}x':>6}" for s in SLOWDOWNS["full"])
    lines = [f"{'drift':>5} {'drift sd':>11} {'rounds':>6} {'rows':>5} {'A/A /60':>7} "
             f"{'pairs>1':>7} {'worst':>5} {'mde':>6} {power}"]
    for s in stats:
        shares = " ".join(f"{_pct(s.slower_share.get(x)):>6}" for x in SLOWDOWNS["full"])
        lines.append(f"{s.drift:5.0%} {s.drift_sd_label:>11} {s.rounds:6d} {s.aa.rows:5d} "
                     f"{s.aa.per_60():7.2f} {_pct(s.aa.pairs_over_one()):>7} "
                     f"{s.aa.worst_pair:5d} {_pct(s.aa.median_mde):>6} "
                     f"{shares}")
    return lines


def report(bench: Bench, seed: int, seconds: float) -> list[str]:
    t = bench.timing
    share = t.per_round()
    return [
        f"timing: conf/timing/default.yaml: {t.rounds} rounds, {share.seconds * 1e3:.0f} ms and "
        f"{share.min_samples}-{share.max_samples} calls a variant a round; seed {seed}",
        f"one run: {bench.trials} cases a model through case_run.finish (judge, summarize, "
        "paired_speedup); rows: variant rows, baseline's excluded",
        *one_run_table(bench.one_run),
        "",
        f"compare: {bench.pairs} pairs of {ROWS_PER_RUN}-row runs a cell, "
        f"{COMPARE_ROUND_SD:.0%} round noise, floor {FLOOR:.0%}; A/A /60: false faster + slower "
        "per 60 rows (pairs>1: share of pairs of runs with more than 1; worst: the most in one "
        "pair); mde: median under A/A; then the share called slower at a true slowdown",
        *compare_table(bench.compare),
        "",
        f"A/B design (compare --ab): pairs of runs, A and B in turn, each run with a "
        f"{SHARED_DRIFT:.0%} machine state its pair shares and its own drift (the column); "
        "each row judged by its pairs; A/A /60 as above; cover: the 99% interval holds the true "
        "ratio (all cells); mde: median under A/A; then the share called slower",
        *ab_table(bench.ab),
        f"({seconds:.0f} s)",
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer trials (the tests' mode)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    bench = run_bench(args.quick, args.seed)
    print("\n".join(report(bench, args.seed, time.perf_counter() - start)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
