"""Every interval the tool computes from timing rounds: the speedup paired per round (one run: the
run report and the ladder; 95%) and the ratio of two runs' times (compare; 99% and 90%).

Paired: within one round the baseline and the variant were timed back to back, so a slow drift
of the machine (another job starting, the clock stepping) moves both; their ratio in that round
cancels it. The figure of a round is the mean time of its calls (what a caller pays), and the
speedup is what a caller saves: the baseline's mean time over the variant's, over the rounds in
which both were clean (the ratio of means, so the row's time and its speedup come from the same
rounds and the same estimator). Its interval: the ratio estimator's (delta method: the spread of
baseline - speedup * variant across rounds), taken in logs and with Student's t on the rounds
(few of them), so a 2x speedup and a 2x slowdown are equally far from 1 and a drift shared by a
round cancels to first order.

Two runs (compare, `run_ratio`): no round of one run pairs with a round of the other, so each
side's clean round figures are taken as independent draws (in logs again). The unit of evidence
is a round, not a call: the calls inside one round share one machine state, so their spread says
how steady that state was, not how much the next round or the next run will differ. Nor do the
rounds say it all: two runs of one commit land in different machine states (memory placement,
the neighbours' jobs, the clock) by more than their rounds show, so each run carries an offset
of its own, its drift, with a standard deviation `drift_sd` (in logs, about a fraction). The log
ratio's variance is then the round noise of both sides (Welch) plus twice the drift variance,
one offset per run; its degrees of freedom by Welch-Satterthwaite, the drift part counted as
known (infinite degrees of freedom: it comes from a fixed constant or many cases, not from these
rounds). From that: a 99% interval (decides faster or slower), a 90% interval (two one-sided
tests of equivalence at 5%) and the minimum detectable change (the smallest true slowdown this
pair would call slower with 80% power).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

NAN = float("nan")
# Two-sided 95% quantiles of Student's t, by degrees of freedom (rounds - 1).
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042, 60: 2.000, 120: 1.980}


def t95(dof: int) -> float:
    """The 95% t quantile for `dof` degrees of freedom (the next lower tabulated dof: wider; past
    120, 1.98 for 1.96, under 1% wide)."""
    if dof < 1:
        raise ValueError("t needs at least one degree of freedom")
    return _T95[max(k for k in _T95 if k <= dof)]


@dataclass(frozen=True)
class Paired:
    speedup: float  # baseline's mean round figure / the variant's, over the paired rounds
    low: float      # 95% interval; NaN with fewer than 2 paired rounds
    high: float
    rounds: int     # rounds in which both were clean


def paired_speedup(baseline: dict[int, float], variant: dict[int, float],
                   floor: float = 0.0) -> Paired:
    """`baseline` and `variant` map round -> that round's figure, us (clean rounds only).
    `floor`: the narrowest half-width in logs the clock allows (each side's clock step over its
    time per call, summed): identical figures on a coarse clock are not an exact ratio."""
    rounds = sorted(set(baseline) & set(variant))
    if not rounds:
        return Paired(NAN, NAN, NAN, 0)
    b = [baseline[r] for r in rounds]
    v = [variant[r] for r in rounds]
    speedup = statistics.fmean(b) / statistics.fmean(v)
    if len(rounds) < 2:
        return Paired(speedup, NAN, NAN, 1)
    # Delta method for a ratio of means: residuals of the baseline from speedup * variant.
    residual = [x - speedup * y for x, y in zip(b, v)]
    se_log = statistics.stdev(residual) / math.sqrt(len(rounds)) / statistics.fmean(b)
    half = max(t95(len(rounds) - 1) * se_log, floor)
    return Paired(speedup, speedup * math.exp(-half), speedup * math.exp(half), len(rounds))


def mean_interval(figures: list[float], floor: float = 0.0) -> tuple[float, float, float]:
    """(mean, low, high): a row's time per call over its clean rounds' figures, with a 95% t
    interval (NaN bounds for one round), never narrower than `floor` each way (the clock's step
    per call: rounds that all read the same grid value still know the time only to a step)."""
    mean = statistics.fmean(figures)
    if len(figures) < 2:
        return mean, NAN, NAN
    half = max(t95(len(figures) - 1) * statistics.stdev(figures) / math.sqrt(len(figures)), floor)
    return mean, mean - half, mean + half


# Student's t for any (real) degrees of freedom, without scipy: the CDF through the regularized
# incomplete beta function (its continued fraction, evaluated by the modified Lentz method), and
# a quantile by Newton's method kept inside a bracket (bisection where a step would leave it).
_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (converges for x < (a+1)/(a+b+2)).
    Each term's two steps written out: a compare's t quantiles call this thousands of times."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    fraction = d
    for m in range(1, 300):
        numerator = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))  # the even step
        d = 1.0 + numerator * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + numerator / c
        c = c if abs(c) > _TINY else _TINY
        fraction *= c * d
        numerator = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))  # the odd one
        d = 1.0 + numerator * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + numerator / c
        c = c if abs(c) > _TINY else _TINY
        fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return fraction


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), regularized: the share of the Beta(a, b) distribution below x."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, dof: float) -> float:
    """P(T <= t) for Student's t with `dof` degrees of freedom (math.inf: the normal)."""
    if math.isinf(dof):
        return statistics.NormalDist().cdf(t)
    tail = 0.5 * _incomplete_beta(dof / 2, 0.5, dof / (dof + t * t))
    return 1.0 - tail if t >= 0 else tail


def _t_pdf(t: float, dof: float) -> float:
    log_scale = math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)
    return math.exp(log_scale - (dof + 1) / 2 * math.log1p(t * t / dof))


def t_quantile(p: float, dof: float) -> float:
    """The t below which a share `p` of Student's t lies (dof > 0, real; math.inf: normal)."""
    if not 0.0 < p < 1.0 or not dof > 0:
        raise ValueError(f"t_quantile({p}, {dof}): p in (0, 1) and dof > 0")
    normal = statistics.NormalDist().inv_cdf(p)
    if math.isinf(dof) or dof > 1e7:
        return normal
    if p < 0.5:
        return -t_quantile(1.0 - p, dof)
    low, high = 0.0, max(1.0, normal)
    while t_cdf(high, dof) < p:  # t's tails are heavier than the normal's: widen the bracket
        low, high = high, 2 * high
    t = min(max(normal, low), high)
    for _ in range(100):
        error = t_cdf(t, dof) - p
        if abs(error) < 1e-13:
            break
        low, high = (t, high) if error < 0 else (low, t)
        step = t - error / _t_pdf(t, dof)
        t = step if low < step < high else (low + high) / 2
    return t


@dataclass(frozen=True)
class RunRatio:
    """B's time over A's for one row of two runs: its point, two intervals, and what it could
    have seen. Bounds are ratios (B/A); `mde` a fraction (0.18: an 18% slowdown)."""
    ratio: float     # exp(mean log B rounds - mean log A rounds)
    low: float       # 99% interval: faster or slower when it excludes 1
    high: float
    eq_low: float    # 90% interval: equivalent when it lies within the floor (two one-sided
    eq_high: float   # tests at 5%)
    mde: float       # the smallest true slowdown called slower with 80% power at 99%
    se: float        # standard error of the log ratio, round noise and drift together
    round_se: float  # its round-noise part alone (more rounds shrink it; drift they do not)
    dof: float       # its degrees of freedom (math.inf: all drift, or no round noise)


DECIDE_LEVEL = 0.99      # two-sided: a faster or slower call is wrong 1% of the time under A/A
EQUIVALENCE_LEVEL = 0.90  # two one-sided tests at 5% each
POWER = 0.80


def _log_mean_var(values) -> tuple[float, float, int]:
    logs = [math.log(v) for v in values]
    return statistics.fmean(logs), statistics.variance(logs), len(logs)


def welch_dof(parts: list[tuple[float, float]]) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of variance parts, each (variance, its
    dof); a part with infinite dof (known) adds to the sum and nothing to the denominator."""
    total = sum(var for var, _ in parts)
    spread = sum(var * var / dof for var, dof in parts if not math.isinf(dof) and var > 0)
    return total * total / spread if spread > 0 else math.inf


def run_ratio(a_rounds, b_rounds, drift_sd: float, drift_dof: float = math.inf) -> RunRatio:
    """The model of B/A from each side's clean round figures (at least 2 a side) and the drift
    of one run (in logs): see the module's docstring. `drift_dof`: the degrees of freedom of
    the drift's estimate (the cases of an A/A control it was read from; math.inf for a constant
    measured over hundreds of rows): a drift read from 6 cases is itself uncertain, and the
    interval widens by Student's t as it would for a variance read from 6 rounds."""
    (ma, va, na), (mb, vb, nb) = _log_mean_var(a_rounds), _log_mean_var(b_rounds)
    parts = [(va / na, na - 1), (vb / nb, nb - 1), (2 * drift_sd**2, drift_dof)]
    se, round_se = math.sqrt(sum(var for var, _ in parts)), math.sqrt(va / na + vb / nb)
    diff = mb - ma
    if se == 0:  # identical rounds and no drift: nothing to scale an interval by
        point = math.exp(diff)
        return RunRatio(point, point, point, point, point, 0.0, 0.0, 0.0, math.inf)
    dof = welch_dof(parts)
    t_decide = t_quantile(1 - (1 - DECIDE_LEVEL) / 2, dof)
    decide = t_decide * se
    equivalence = t_quantile(1 - (1 - EQUIVALENCE_LEVEL) / 2, dof) * se
    mde = math.expm1((t_decide + t_quantile(POWER, dof)) * se)
    return RunRatio(math.exp(diff), math.exp(diff - decide), math.exp(diff + decide),
                    math.exp(diff - equivalence), math.exp(diff + equivalence), mde, se, round_se,
                    dof)


MIN_AA_CASES = 3  # fewer cases and the drift's estimate is too loose to replace the default


def aa_drift_sd(cases) -> float | None:
    """The drift of one run (in logs) shown by an A/A control: `cases` holds, per case, the log
    ratios log(aa_control / baseline) of the rounds both were clean in. A case's mean log ratio
    carries two offsets, one per copy (as a B/A pair carries one per run), plus round noise:
    mean square = 2 drift^2 + round noise of the mean, pooled over the cases. None with fewer
    than MIN_AA_CASES cases of 2 paired rounds or more."""
    usable = [list(c) for c in cases if len(c) >= 2]
    if len(usable) < MIN_AA_CASES:
        return None
    mean_square = statistics.fmean(statistics.fmean(c) ** 2 for c in usable)
    round_noise = statistics.fmean(statistics.variance(c) / len(c) for c in usable)
    return math.sqrt(max(0.0, mean_square - round_noise) / 2)


def aa_shift_sd(pairs) -> float | None:
    """The drift of one run (in logs) shown by the A/A control between two runs: `pairs` holds,
    per case, (A's control round figures, B's). A copy of the baseline in each run sees what
    moved the whole run (a machine state shared by every row: two A/A runs here came apart by
    15-20% on every row while each run's two copies stayed within 0.5%), which the copies of one
    run cannot show. Its log ratio carries one drift per run plus round noise, as a row's B/A
    does. None with fewer than MIN_AA_CASES cases of 2 rounds a side."""
    usable = [(a, b) for a, b in pairs if len(a) >= 2 and len(b) >= 2]
    if len(usable) < MIN_AA_CASES:
        return None
    parts = [_log_mean_var(a) + _log_mean_var(b) for a, b in usable]
    mean_square = statistics.fmean((mb - ma) ** 2 for ma, _, _, mb, _, _ in parts)
    round_noise = statistics.fmean(va / na + vb / nb for _, va, na, _, vb, nb in parts)
    return math.sqrt(max(0.0, mean_square - round_noise) / 2)


@dataclass(frozen=True)
class PairRatio:
    """B's time over A's for one row of an A/B design: N pairs of runs, A and B timed one after
    the other in each (suites/reports/ab). Each pair's log ratio carries both runs' drift and
    round noise, so their spread over the pairs measures it all and no drift is assumed.

    The pairs' log ratios are heavy-tailed here: most within 1-2% of one another, and now and
    then one 15-60% off (a whole case timed in another machine state in one run of the pair,
    every variant of it alike). A plain mean and sd let that one pair decide the interval, so
    the model is Yuen's trimmed mean: the lowest and highest TRIM of the pairs set aside (one
    pair each way from 5 pairs to 9, two from 10 to 14; none under 5), the interval from the
    winsorized variance (the set-aside pairs counted at their nearest kept neighbour) with
    Student's t on pairs - 2 x trimmed - 1 degrees of freedom. Under A/A the log ratios are
    symmetric about 0 (A and B exchangeable, the order alternating), where Yuen's interval
    holds its level; the estimator bench checks it on pairs with such outliers
    (suites/tools/estimators_ab.py). `run_ratio`'s fields, and the pairs' own spread."""
    ratio: RunRatio
    pairs: int       # pairs in which the row was ok on both sides
    pair_sd: float   # the winsorized sd of the pairs' log ratios (about a fraction)
    trimmed: int     # pairs set aside at each end


MIN_PAIRS = 3  # a spread needs a few pairs; fewer and a row of an A/B design is not comparable
TRIM = 0.2     # Yuen's usual share: robust to a pair in five going astray, little lost otherwise


def trimmed_count(pairs: int) -> int:
    """Pairs set aside at each end of `pairs` sorted log ratios."""
    return int(TRIM * pairs)


def _yuen_factor(pairs: int) -> tuple[float, int]:
    """(se / winsorized sd, degrees of freedom) of Yuen's trimmed mean of `pairs` values."""
    g = trimmed_count(pairs)
    kept = pairs - 2 * g
    return math.sqrt((pairs - 1) / (kept * (kept - 1))), kept - 1


def winsorized(logs: list[float]) -> tuple[list[float], list[float]]:
    """(the kept values, the winsorized sample) of sorted `logs` (Yuen's TRIM each end)."""
    ordered = sorted(logs)
    g = trimmed_count(len(ordered))
    kept = ordered[g:len(ordered) - g]
    return kept, [kept[0]] * g + kept + [kept[-1]] * g


def pair_ratio(log_ratios) -> PairRatio:
    """The model of B/A from the pairs' log ratios log(B_i / A_i) (at least 2)."""
    logs = [float(x) for x in log_ratios]
    n = len(logs)
    if n < 2:
        raise ValueError(f"{n} pair(s): a spread needs at least 2")
    kept, wins = winsorized(logs)
    mean, sd = statistics.fmean(kept), statistics.stdev(wins)
    factor, dof = _yuen_factor(n)
    se, g = sd * factor, trimmed_count(n)
    if se == 0:
        point = math.exp(mean)
        return PairRatio(RunRatio(point, point, point, point, point, 0.0, 0.0, 0.0, math.inf),
                         n, 0.0, g)
    t_decide = t_quantile(1 - (1 - DECIDE_LEVEL) / 2, dof)
    decide = t_decide * se
    equivalence = t_quantile(1 - (1 - EQUIVALENCE_LEVEL) / 2, dof) * se
    mde = math.expm1((t_decide + t_quantile(POWER, dof)) * se)
    return PairRatio(RunRatio(math.exp(mean), math.exp(mean - decide), math.exp(mean + decide),
                              math.exp(mean - equivalence), math.exp(mean + equivalence), mde,
                              se, NAN, dof), n, sd, g)


def planned_mde(pair_sd: float, pairs: int) -> float:
    """The mde N pairs buy where the pairs' log ratios spread by `pair_sd` (winsorized): what a
    number of pairs is chosen by, before any is run."""
    if pairs < 2:
        return math.inf
    factor, dof = _yuen_factor(pairs)
    t_decide = t_quantile(1 - (1 - DECIDE_LEVEL) / 2, dof)
    return math.expm1((t_decide + t_quantile(POWER, dof)) * pair_sd * factor)
