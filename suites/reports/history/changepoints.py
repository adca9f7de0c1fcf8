"""Change points in one series: the runs at which a row's time per call moved to a new level and
stayed there, over the whole history of that row (one suite, case, variant and machine).

The data. A point is one run: its clean rounds' figures (us/call), summarised in logs as the
mean log figure `log_mean` and its standard error `se` (the rounds' spread over sqrt(rounds)).
Logs, because a change is a ratio (a 10% slowdown of a 20 us row and of a 20 ms row is one
size) and a 2x slowdown and a 2x speedup are then equally far from nothing.

The model. A run's log mean is its level plus two noises: the round noise of that run (se_i,
known from its rounds) and an offset of the run's own, the between-run drift, standard deviation
`tau`: two runs of one commit on this machine land in different machine states (memory placement,
the neighbours' jobs, the clock) and differ by 5-12% a row beyond what their rounds show
(docs/compare.md; suites/results/intervals.py). Without tau, a run's rounds claim a precision of
1-3% and every ordinary run-to-run move of 8% reads as a change; tau is what keeps drift from
being flagged. A point's weight is therefore 1 / (se_i^2 + tau^2): the precision of the run as a
measurement of its level, not of its own rounds.

Round noise per run: a run's se is taken as at least the row's typical one for its round count
(the median over the series of se^2 x rounds, over its rounds). Five rounds give an se with 4
degrees of freedom, and a run whose rounds happen to agree would otherwise, with little drift,
carry most of a segment's weight and shrink a step's standard error: without this floor, flat
histories with ~1% drift showed false steps in 12% of series, with it none in 400. A run whose
rounds scatter more than usual keeps its own, larger se.

tau is estimated from the series itself, robustly: the successive differences d_i = m_{i+1} - m_i
have variance se_i^2 + se_{i+1}^2 + 2 tau^2 where the level is flat, and a step moves only the one
difference that straddles it, so the MAD of the differences (scaled by 1.4826, the normal
consistency constant) is barely moved by a few steps, where a plain standard deviation of the
series would count every step as noise. tau^2 = sd_d^2 / 2 - the median se^2 (at least 0). The
MAD-of-differences variance is worth about 0.3 (n - 1) degrees of freedom (measured by
simulation of normal series: 0.29-0.32 (n - 1) for n = 8 to 120), which the test below uses. A
tau known from elsewhere (an A/A control, a pool over a suite's rows) can be passed instead.

Segmentation: the optimal partition of the weighted log means into segments of constant level,
minimising the weighted residual sum of squares (-2 log-likelihood of the normal model, up to a
constant) plus a penalty `beta` per change, found exactly by PELT (Killick, Fearnhead & Eckley,
"Optimal detection of changepoints with a linear computational cost", JASA 2012): the optimal
partitioning recursion of Jackson et al. (2005) with the pruning rule that drops a candidate last
change s once F(s) + C(s, t) > F(t) (valid with K = 0 for this cost, since splitting a segment
never raises its residual sum; with a minimum segment length the drop waits min_size runs, until
t is itself an admissible change). The penalty is BIC-like (Schwarz 1978: log n per parameter in
-2 log-likelihood units; a change adds two, its position and its new level): beta = 2 log n by
default. It only proposes: every step is then tested, so the penalty mostly sets how many
candidates the test sees (3 log n, the modified BIC's, gave the same bench numbers). For the
search and the test, segments are at least `min_size` runs long (default 3): a level held by one
or two runs is an outlier run or a change too new to confirm, which the gate
(suites/reports/history/gate.py) judges on the newest run. That length only lets a step be
called; it never chooses the step's place (below).

The test. Each proposed step is judged between its two adjacent segments: the difference of
their weighted mean log levels over its standard error sqrt(1/sum w_left + 1/sum w_right) (the
model's variance, round noise and drift together), against Student's t, two-sided, with the
degrees of freedom of that variance's estimate: ~0.3 (n - 1), the MAD of the differences', which
measures each point's whole variance (with a tau given from elsewhere, Welch-Satterthwaite's over
the runs' round noise, rounds - 1 each, the drift counted as known). Giving tau's degrees of
freedom to the drift part alone let the runs' round noise swamp them: where drift and round
noise were alike (3% each), a MAD that came out low by half read as 1.4x the z.

The search chose the steps among many places, so a nominal p-value after it is optimistic: with
K steps left, each must have p < alpha / C(n - 1, K) (Bonferroni over every set of K places among
the n - 1 the search could have put them; K = 1: over the n - 1 positions). A bump of a few runs
is searched at both ends together; alpha / (n - 1) for each step alone let more pairs of false
steps through (flat series at a third of this machine's drift: a false change in 2.0% of 300
series, against 1.3% counted this way, with the same share of real steps placed). Steps that fail
are removed one at a time, weakest first, the segments around them merged, the rest re-placed
(each moved to the best position between its neighbours) and re-tested, until every step left is
significant. alpha = 0.1 by default: the Bonferroni bound and the MAD's degrees of freedom are
conservative, and on the history bench (real rounds; this machine's drift, a third and a tenth of
it; 300 flat series each) flat series showed a false change in 0-1.3% of series; alpha = 0.05
gave 0-0.7% and placed fewer steps (10% steps at the right run: 17% against 21% at this
machine's drift, 63% against 65% at a third of it), 0.5 let 3-8% through.

This is the idea of asv's (airspeed velocity) regression detection, which fits a penalised
piecewise-constant model to each benchmark's history (a Potts functional after Friedrich et al.
2008, the penalty chosen by a Schwarz-type criterion after Yao 1988), each point weighted by its
measured confidence interval. Here the fit is least squares on logs, with the weights widened by
the between-run drift, solved exactly by PELT, and each step is tested; the code is our own, on
numpy.

The place. Once the test has kept a step, it is placed where the data puts it: the split between
its neighbouring steps that minimises the weighted within-segment cost, with one run a side at
least. A minimum length choosing the place would put a change at the fifth of six runs at the
fourth, the only split that leaves three runs a side. The splits whose cost is within
PLACE_CHI2 (3.84, chi-square's 95% point with one degree of freedom: the cost is in units of
each point's variance) of the best are those the data cannot tell from it: the step lies
between the run before the first of them and the last (`first`, `last`; both `index` where the
data places it exactly).

Each step reports the index of the first run after it (its best place) and that span, the level
before and after (exp of the weighted mean log figure, us), the ratio after/before with a 95%
interval (same t and standard error as the test), all at its place, and the p-value and z of the
test that kept it. A series shorter than `min_points` (4) returns no steps and
`enough=False`; the caller says why.

How exactly a step can be placed is a matter of its size against a run's noise (drift and round
noise): the history bench (python -m suites.tools.history_bench, real rounds of this machine,
seeds 0 and 1) places 10% steps at the right run in 91-100% of series where a run's sd is under
3%, 76-78% at 3-5% and 6-10% at this machine's typical 8-12%, and calls no change in 97-100% of
flat series. A least-squares split told that there is exactly one step, with no test, places a
10% step at its run in 36% of the same series where this method places 21%: the rest of the gap
is what the test refuses to call, at the 0-3% false changes it allows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from suites.results.intervals import t_cdf, t_quantile, welch_dof

MAD_SCALE = 1.4826      # MAD -> standard deviation, for normal data
TAU_DOF_PER_DIFF = 0.3  # degrees of freedom of the MAD-of-differences variance per difference
# Variance floor of one point, in logs (0.1%): a run whose rounds read identical values on a coarse
# clock in a series with no drift is not infinitely precise.
FLOOR_SD = 1e-3
# The splits the data cannot tell apart: those whose weighted cost (in units of each point's
# variance, so a chi-square) is within this of the best split's; 3.84 is chi-square's 95% point
# with one degree of freedom, the likelihood-ratio confidence set for the change's place.
PLACE_CHI2 = 3.84
MIN_SIZE = 3  # runs a side of a step for the test to call it (the module's docstring says why)


@dataclass(frozen=True)
class Point:
    """One run of a series: the mean log of its clean round figures, its standard error (NaN
    with one round), and how many rounds."""
    log_mean: float
    se: float
    n: int

    @classmethod
    def from_figures(cls, figures) -> "Point":
        """From a run's clean round figures (us/call, > 0)."""
        logs = np.log(np.asarray(figures, dtype=float))
        if logs.size == 0:
            raise ValueError("a point needs at least one clean round")
        se = float(logs.std(ddof=1) / math.sqrt(logs.size)) if logs.size > 1 else math.nan
        return cls(float(logs.mean()), se, int(logs.size))

    @property
    def level(self) -> float:
        """The run's figure, us: the geometric mean of its rounds."""
        return math.exp(self.log_mean)


@dataclass(frozen=True)
class Step:
    index: int          # the first run after the step (0-based, in the series' run order)
    before: float       # level of the segment before, us (weighted geometric mean)
    after: float        # level of the segment after, us
    ratio: float        # after / before (> 1: slower)
    low: float          # 95% interval of the ratio
    high: float
    p_value: float      # two-sided, nominal (kept only below alpha / C(n - 1, K), K steps)
    z: float            # the step in standard errors (t statistic)
    first: int = -1     # the places the data cannot tell from `index` (PLACE_CHI2): the step
    last: int = -1      # lies between runs first - 1 and last; first == last == index: exact


@dataclass(frozen=True)
class Place:
    """Where a change lies in a span of a series: its best split (the first point after it)
    and the splits the data cannot tell from it (first .. last, index among them)."""
    index: int
    first: int
    last: int


@dataclass(frozen=True)
class Changes:
    steps: list[Step] = field(default_factory=list)
    enough: bool = True      # False: fewer than min_points runs, nothing was looked for
    n: int = 0               # runs in the series
    tau: float = math.nan    # between-run drift used, in logs (about a fraction)
    tau_dof: float = math.nan
    penalty: float = math.nan
    alpha: float = math.nan  # per-step level used: family alpha / C(n - 1, K), K steps kept (>= 1)


def arrays(points) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log means, se^2, rounds) of a sequence of Points, each se^2 at least the row's typical
    round noise for its round count: the median over the series of se^2 * rounds (a round's
    variance), over its rounds. A run whose 5 rounds happen to agree is not more precise than
    the row's other runs (its se has 4 degrees of freedom: a tenth of the typical variance comes
    up often), and with little drift its weight 1 / se^2 would let it alone set a segment's level
    and shrink the step's standard error: flat series with ~1% drift showed false steps 12% of
    the time without this floor. A run whose rounds scatter more than usual keeps its larger se.
    A one-round point's se is unknown: the typical one."""
    m = np.array([p.log_mean for p in points], dtype=float)
    se2 = np.array([p.se ** 2 for p in points], dtype=float)
    n = np.array([p.n for p in points], dtype=float)
    known = np.isfinite(se2)
    per_round = float(np.median(se2[known] * n[known])) if known.any() else 0.0
    typical = per_round / n
    return m, np.where(known, np.maximum(se2, typical), typical), n


def estimate_tau(m: np.ndarray, se2: np.ndarray) -> tuple[float, float]:
    """(tau, its degrees of freedom): the between-run drift sd from the MAD of successive
    differences, less the round noise (see the module's docstring)."""
    d = np.diff(m)
    if d.size < 2:
        return 0.0, math.inf
    sd_d = MAD_SCALE * float(np.median(np.abs(d - np.median(d))))
    tau2 = max(0.0, sd_d * sd_d / 2 - float(np.median(se2)))
    return math.sqrt(tau2), max(1.0, TAU_DOF_PER_DIFF * d.size)


class _Sums:
    """Prefix sums of w, w m, w m^2: any segment's weighted cost in O(1)."""

    def __init__(self, m: np.ndarray, w: np.ndarray):
        self.w = np.concatenate([[0.0], np.cumsum(w)])
        self.wm = np.concatenate([[0.0], np.cumsum(w * m)])
        self.wm2 = np.concatenate([[0.0], np.cumsum(w * m * m)])

    def cost(self, s, t):
        """Weighted residual sum of squares of segment [s, t) about its weighted mean (s may be an
        array)."""
        sw = self.w[t] - self.w[s]
        swm = self.wm[t] - self.wm[s]
        return (self.wm2[t] - self.wm2[s]) - swm * swm / sw

    def mean(self, s: int, t: int) -> tuple[float, float]:
        """(weighted mean log level of [s, t), its variance 1 / sum w)."""
        sw = self.w[t] - self.w[s]
        return (self.wm[t] - self.wm[s]) / sw, 1.0 / sw


def pelt(m: np.ndarray, w: np.ndarray, beta: float, min_size: int) -> list[int]:
    """The optimal partition's change positions (first index of each new segment), by PELT."""
    n = m.size
    if n < 2 * min_size:
        return []
    sums = _Sums(m, w)
    best = np.full(n + 1, np.inf)
    best[0] = -beta
    last = np.zeros(n + 1, dtype=int)
    candidates = np.array([0])
    # Pruned at t, dropped at t + min_size: PELT's argument (a pruned s loses to t as the last
    # change for every later end) needs t to be an admissible change, i.e. the end min_size on.
    pending: dict[int, np.ndarray] = {}
    for t in range(min_size, n + 1):
        if t in pending:
            candidates = np.setdiff1d(candidates, pending.pop(t), assume_unique=True)
        admissible = candidates[candidates <= t - min_size]
        if admissible.size:
            total = best[admissible] + sums.cost(admissible, t) + beta
            k = int(np.argmin(total))
            best[t], last[t] = total[k], admissible[k]
            # PELT's pruning (K = 0): a last change that already costs more than ending at t can
            # never become optimal for a later end.
            pending[t + min_size] = admissible[total - beta > best[t]]
        if t <= n - min_size and np.isfinite(best[t]):
            candidates = np.append(candidates, t)
    changes, t = [], n
    while t > 0:
        s = int(last[t])
        if s > 0:
            changes.append(s)
        t = s
    return sorted(changes)


def _test(sums: _Sums, s: int, k: int, t: int, w: np.ndarray, se2: np.ndarray, n: np.ndarray,
          tau2: float, tau_dof: float) -> tuple[float, float, float, float, float]:
    """(diff of log levels right - left, its se, z, dof, two-sided p) for a step at k between the
    segments [s, k) and [k, t)."""
    left, var_left = sums.mean(s, k)
    right, var_right = sums.mean(k, t)
    diff, var = right - left, var_left + var_right
    se = math.sqrt(var)
    if math.isfinite(tau_dof):
        # tau estimated from this series: what it rests on is the MAD of the differences, an
        # estimate of each point's whole variance (round noise and drift: tau^2 is that less the
        # median se^2), so the whole variance carries its ~0.3 (n - 1) degrees of freedom. Giving
        # them to the drift part alone lets the many runs' round noise (rounds - 1 each) swamp
        # them in Welch-Satterthwaite: where drift and round noise are alike (3% each) a MAD that
        # came out low by half then reads as 1.4x the z, and flat series showed false steps.
        dof = tau_dof
    else:
        # tau known (given): each side's weighted mean has variance sum(w_i^2 (se_i^2 + tau^2)) /
        # (sum w)^2; the tau^2 part is exact, each run's se_i^2 has its rounds - 1.
        parts = []
        for a, b, var_side in ((s, k, var_left), (k, t, var_right)):
            ww = w[a:b] * var_side  # w_i / sum w
            parts += [(float(x), float(d)) for x, d in zip(ww * ww * se2[a:b], n[a:b] - 1)
                      if d >= 1]
        parts.append((tau2 * float(np.sum((w[s:k] * var_left) ** 2)
                                    + np.sum((w[k:t] * var_right) ** 2)), math.inf))
        dof = welch_dof(parts)
    z = float(diff / se)
    p = 2 * t_cdf(-abs(z), dof)  # the lower tail: no cancellation for the tiny p it must reach
    return float(diff), se, z, dof, p


def _costs(sums: _Sums, s: int, t: int, min_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(splits k of [s, t) with both sides at least min_size long, the cost of each)."""
    ks = np.arange(s + min_size, t - min_size + 1)
    return ks, sums.cost(np.full(ks.size, s), ks) + sums.cost(ks, np.full(ks.size, t))


def _place(sums: _Sums, s: int, t: int, min_size: int) -> int:
    """The best single split of [s, t) with both sides at least min_size long."""
    ks, total = _costs(sums, s, t, min_size)
    return int(ks[int(np.argmin(total))])


def place_in(sums: _Sums, s: int, t: int) -> Place:
    """Where the data puts one change in [s, t): the split that minimises the within-segment
    cost, one run a side at least (a minimum segment length would choose the place instead of
    the data: six runs changing at the fifth split at the fourth), and every split within
    PLACE_CHI2 of it, the span the data cannot tell apart."""
    ks, total = _costs(sums, s, t, 1)
    best = int(np.argmin(total))
    near = ks[total - total[best] <= PLACE_CHI2]
    return Place(int(ks[best]), int(near.min()), int(near.max()))


def find_changes(points, *, min_size: int = MIN_SIZE, penalty: float | None = None,
                 alpha: float = 0.1, min_points: int = 4, tau: float | None = None) -> Changes:
    """The significant steps of a series of Points in run order (see the module's docstring).
    `penalty`: PELT's cost per change (default 2 log n); `alpha`: the family level, spread by
    Bonferroni over the sets of places K steps could take; `tau`: the between-run drift in logs
    when known from elsewhere (an A/A control), else estimated from the series (with ~0.3 (n - 1)
    degrees of freedom)."""
    points = list(points)
    count = len(points)
    if count < min_points:
        return Changes(enough=False, n=count)
    m, se2, n = arrays(points)
    if tau is None:
        tau, tau_dof = estimate_tau(m, se2)
    else:
        tau_dof = math.inf
    tau2 = tau * tau
    w = 1.0 / np.maximum(se2 + tau2, FLOOR_SD ** 2)
    beta = 2 * math.log(count) if penalty is None else penalty
    sums = _Sums(m, w)
    steps = pelt(m, w, beta, min_size)
    while True:
        bounds = [0] + steps + [count]
        tested = [_test(sums, bounds[i], bounds[i + 1], bounds[i + 2], w, se2, n, tau2,
                        tau_dof) for i in range(len(steps))]
        # Bonferroni over the configurations the search chose among: K steps could have been
        # put at any K of the n - 1 places (with K = 1, the n - 1 positions).
        level = alpha / math.comb(count - 1, max(1, len(steps)))
        weak = [i for i, r in enumerate(tested) if not r[4] < level]
        if not weak:
            break
        # Drop the weakest step, merge its segments, and let the others move to their best
        # place between their (new) neighbours before testing again.
        steps.pop(max(weak, key=lambda i: tested[i][4]))
        for i in range(len(steps)):
            lo = steps[i - 1] if i > 0 else 0
            hi = steps[i + 1] if i + 1 < len(steps) else count
            steps[i] = _place(sums, lo, hi, min_size)
    # The test needed min_size runs a side to call each step; where it lies is the data's: each
    # moves to its best split between its neighbours, one run a side at least, with the span of
    # splits the data cannot tell from it. Its levels, ratio and interval are said there; its
    # p-value and z are the test's that kept it.
    places = []
    for i in range(len(steps)):
        lo = places[-1].index if places else 0
        hi = steps[i + 1] if i + 1 < len(steps) else count
        places.append(place_in(sums, lo, hi))
    bounds = [0] + [p.index for p in places] + [count]
    out = []
    for i, place in enumerate(places):
        k = place.index
        diff, se, _, dof, _ = _test(sums, bounds[i], k, bounds[i + 2], w, se2, n, tau2, tau_dof)
        half = t_quantile(0.975, dof) * se
        before = math.exp(sums.mean(bounds[i], k)[0])
        after = math.exp(sums.mean(k, bounds[i + 2])[0])
        out.append(Step(k, before, after, math.exp(diff), math.exp(diff - half),
                        math.exp(diff + half), tested[i][4], tested[i][2], place.first,
                        place.last))
    return Changes(out, True, count, tau, tau_dof, beta, level)
