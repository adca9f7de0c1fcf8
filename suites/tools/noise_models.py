"""The noise models of the simulation bench (suites/tools/estimators.py): each draws the per-call
samples of one case (2-3 variants, R rounds, as many calls a round as the timing's budget takes)
and knows its truth.

The truth of a variant is its mean time per call in expectation (what a caller pays over many
calls), never its typical call: a model's noise is built from mean-one factors (a lognormal
exp(sd*Z - sd^2/2)), so it moves single rounds and calls but not the truth. A machine state the
harness is meant to drop (one boosted round) is not part of the truth: it is the machine's.

Every model but the first adds a background of 2% round noise per variant and 1% per-call jitter,
since no real round is exact; the first is that noise alone, at 1-15%. Run-to-run drift (the
seventh model, for compare) lies in estimators.py, where two runs are drawn.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from suites.harness.event_clock import calls_per_sample
from suites.harness.timing import blocks

BASELINE = "base"
BACKGROUND_ROUND_SD = 0.02  # round noise behind every model but the iid one
CALL_SD = 0.01              # per-call jitter: what a steady call still varies by
EVENT_GRID_US = 0.5         # CUDA event timestamps sit on about this grid

# variant -> its calls' times (us), one array per round
Samples = dict[str, list[np.ndarray]]
# The calls a variant takes in one round's share at a given mean time per call (the timing's
# budget rule: suites/harness/timing.py, sample_count).
CallsFor = Callable[[float], int]


@dataclass(frozen=True)
class NoiseModel:
    """One noise model: a name, its family (the table's groups), the truth and a draw."""

    name: str
    family: str
    truth_us: dict[str, float]  # variant -> true mean time per call; the baseline first
    draw: Callable[[np.random.Generator, int, CallsFor], Samples] = field(repr=False)
    periodic_cost_us: float = 0.0  # mean cost a call of the periodic variant pays, if any
    steady_us: float = 0.0         # that variant's call without its periodic cost

    def true_speedup(self, variant: str) -> float:
        """Baseline's true mean time over the variant's: the ratio of true means."""
        return self.truth_us[BASELINE] / self.truth_us[variant]


def mean_one_lognormal(rng: np.random.Generator, sd: float, size: int) -> np.ndarray:
    """Factors whose mean is 1 (so they do not move the truth), spread `sd` in logs."""
    return np.exp(sd * rng.standard_normal(size) - sd * sd / 2)


def steady_calls(rng: np.random.Generator, mean_us: float, calls: int) -> np.ndarray:
    return mean_us * mean_one_lognormal(rng, CALL_SD, calls)


def _rounds_of_steady_calls(rng, mean_us: float, factors: np.ndarray, calls_for: CallsFor):
    """One array of steady calls per round, each round at `mean_us` times its factor."""
    calls = calls_for(mean_us)
    return [steady_calls(rng, mean_us * f, calls) for f in factors]


def steady_case(rng, means: dict[str, float], rounds: int, calls_for: CallsFor,
                 round_sd: float, state: Callable[[str], np.ndarray] | None = None) -> Samples:
    """Every variant steady within a round; each round moved by the variant's own round noise
    and, if given, by `state(variant)`: a multiplier per round (a slow state, a boost)."""
    out = {}
    for variant, mean in means.items():
        factors = mean_one_lognormal(rng, round_sd, rounds)
        if state is not None:
            factors = factors * state(variant)
        out[variant] = _rounds_of_steady_calls(rng, mean, factors, calls_for)
    return out


# Three variants, effects of both signs beyond 3%: 1.111x faster and 0.952x (5% slower).
THREE = {BASELINE: 10.0, "faster": 9.0, "slower": 10.5}


def iid_lognormal(round_sd: float) -> NoiseModel:
    """1. Each variant's round figure moved by its own lognormal factor, plus per-call jitter."""
    def draw(rng, rounds, calls_for):
        return steady_case(rng, THREE, rounds, calls_for, round_sd)
    return NoiseModel(f"iid lognormal {round_sd:.0%}", "round noise", dict(THREE), draw)


BIMODAL_US = (9.2, 12.2)


def bimodal() -> NoiseModel:
    """2. Each call of one variant takes 9.2 or 12.2 us (p=0.5: 10.7 us by mean); the baseline a
    steady 10 us. Its typical call looks faster than the baseline; by mean time it is slower."""
    def draw(rng, rounds, calls_for):
        out = steady_case(rng, {BASELINE: 10.0}, rounds, calls_for, BACKGROUND_ROUND_SD)
        calls = calls_for(float(np.mean(BIMODAL_US)))
        factors = mean_one_lognormal(rng, BACKGROUND_ROUND_SD, rounds)
        out["bimodal"] = [f * rng.choice(BIMODAL_US, calls) * mean_one_lognormal(rng, CALL_SD, calls)
                          for f in factors]
        return out
    return NoiseModel("bimodal calls 9.2|12.2", "per-call shape",
                      {BASELINE: 10.0, "bimodal": float(np.mean(BIMODAL_US))}, draw)


STALL_US = 2000.0   # a periodic cost of the variant's own (a recompile, an allocator flush)
STALLED_CALL_US = 10.0


def periodic_stall(every: int) -> NoiseModel:
    """3. One variant pays STALL_US every `every`-th call (counted across its rounds, from a
    random phase) on a steady 10 us call; the baseline is the same call without it."""
    cost = STALL_US / every

    def draw(rng, rounds, calls_for):
        out = steady_case(rng, {BASELINE: STALLED_CALL_US}, rounds, calls_for,
                           BACKGROUND_ROUND_SD)
        calls = calls_for(STALLED_CALL_US + cost)
        phase = int(rng.integers(every))
        factors = mean_one_lognormal(rng, BACKGROUND_ROUND_SD, rounds)
        out["stalling"] = [_with_stalls(steady_calls(rng, STALLED_CALL_US * f, calls),
                                        start=phase + r * calls, every=every)
                           for r, f in enumerate(factors)]
        return out
    return NoiseModel(f"stall 2 ms at {1 / every:.3g} of calls", "periodic cost",
                      {BASELINE: STALLED_CALL_US, "stalling": STALLED_CALL_US + cost}, draw,
                      periodic_cost_us=cost, steady_us=STALLED_CALL_US)


def _with_stalls(calls: np.ndarray, start: int, every: int) -> np.ndarray:
    """`calls` with STALL_US added to each whose index from the variant's first call
    (`start` + its place here) is a multiple of `every`."""
    index = start + np.arange(len(calls))
    return calls + STALL_US * (index % every == 0)


SLOW_STATE = 1.3
SLOW_SHARE = 0.4
# Fast in its fast state: 1.083x the baseline, as the case; by mean time 0.967x.
STATEFUL = {BASELINE: 10.0, "stateful": 10.0 / 1.083, "slower": 10.5}


def slow_state(fixed_share: bool) -> NoiseModel:
    """4. One variant slow by SLOW_STATE in SLOW_SHARE of its rounds, the others steady.
    fixed_share: exactly round(0.4 R) of its rounds, at random places (the share is the truth);
    else each round slow with probability 0.4 on its own, as a state that comes and goes would
    be (five rounds see no slow round at all 8% of the time)."""
    def state(rng, rounds):
        if fixed_share:
            slow = np.zeros(rounds, bool)
            slow[rng.choice(rounds, round(SLOW_SHARE * rounds), replace=False)] = True
        else:
            slow = rng.random(rounds) < SLOW_SHARE
        return np.where(slow, SLOW_STATE, 1.0)

    def draw(rng, rounds, calls_for):
        return steady_case(rng, STATEFUL, rounds, calls_for, BACKGROUND_ROUND_SD,
                            lambda v: state(rng, rounds) if v == "stateful" else 1.0)
    truth = dict(STATEFUL, stateful=STATEFUL["stateful"] * (1 + SLOW_SHARE * (SLOW_STATE - 1)))
    name = "slow state 40% of rounds" if fixed_share else "slow state p=0.4 a round"
    return NoiseModel(name, "own state", truth, draw)


BOOST = 0.7


def boosted_round() -> NoiseModel:
    """5. One round (at random) in which every variant runs 0.7x: a boosted clock, the
    machine's state, dropped by the harness for every variant. The truth is the usual state."""
    def draw(rng, rounds, calls_for):
        boosted = int(rng.integers(rounds))
        multiplier = np.where(np.arange(rounds) == boosted, BOOST, 1.0)
        return steady_case(rng, THREE, rounds, calls_for, BACKGROUND_ROUND_SD,
                            lambda v: multiplier)
    return NoiseModel("one round boosted 0.7x", "machine state", dict(THREE), draw)


GRID = {BASELINE: 6.3, "2% faster": 6.3 / 1.02, "5% slower": 6.3 * 1.05}


def event_grid() -> NoiseModel:
    """6. Small calls (6.3 us) timed by events on a 0.5 us grid: each call is the difference of
    two grid timestamps, the start at a random phase of the grid (a timer ticks on its own; the
    call starts where it starts), so a 6.3 us call reads 6.0 or 6.5. Not rounding to the nearest
    step: no timer does that, and it would bias every call the same way. The samples are then
    made as a CUDA run makes them (suites/harness/timing.py): blocks of calls spanning
    SPAN_STEPS steps, as many blocks as the budget holds."""
    calls = calls_per_sample(GRID[BASELINE], EVENT_GRID_US)

    def draw(rng, rounds, calls_for):
        smooth = steady_case(rng, GRID, rounds, lambda mean_us: calls_for(mean_us * calls) * calls,
                             BACKGROUND_ROUND_SD)
        return {v: [np.array(blocks(on_grid(rng, durations).tolist(), calls))
                    for durations in per_round] for v, per_round in smooth.items()}
    return NoiseModel("0.5 us event grid, 6.3 us", "timer grid", dict(GRID), draw)


def on_grid(rng: np.random.Generator, durations_us: np.ndarray) -> np.ndarray:
    """What a timer ticking every EVENT_GRID_US reads for these durations."""
    start = rng.uniform(0.0, EVENT_GRID_US, len(durations_us))
    ticks = np.floor((start + durations_us) / EVENT_GRID_US) - np.floor(start / EVENT_GRID_US)
    return EVENT_GRID_US * ticks


def one_run_models() -> list[NoiseModel]:
    """Models 1-6, in the table's order."""
    return [*(iid_lognormal(sd) for sd in (0.01, 0.05, 0.10, 0.15)), bimodal(),
            *(periodic_stall(every) for every in (100, 20, 12, 4)),
            slow_state(fixed_share=True), slow_state(fixed_share=False), boosted_round(),
            event_grid()]
