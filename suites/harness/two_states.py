"""Does a variant run in two states? Its clean rounds' figures falling into two groups far apart
(a slow state of its own: an allocator that flips between pools, a guard that misses for a
while, a thread pool that sometimes spins down). The rounds judgement keeps both states in the
variant's figures (what a caller pays is their mix); this says that the mix is one, how the
rounds split and how far apart the states are, for the `two_states` finding.

The split: the largest gap between the sorted round figures (in logs). It counts as two states
when each side holds at least MIN_ROUNDS rounds, the gap is at least GAP_FACTOR, and the gap is
several times the spread inside the groups (steady rounds with 15% noise have gaps, but none
that clears GAP_SPREADS of their own spread: the tests hold this on simulated rounds).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

MIN_ROUNDS = 2
GAP_FACTOR = 1.15     # the slower group's fastest round at least this far above the faster's slowest
GAP_SPREADS = 5.0     # ...and this many pooled within-group standard deviations (in logs)


@dataclass(frozen=True)
class TwoStates:
    slow_rounds: int    # rounds in the slower state
    rounds: int
    fast_us: float      # the mean figure of each state
    slow_us: float

    @property
    def factor(self) -> float:
        return self.slow_us / self.fast_us


def two_states(figures: list[float]) -> TwoStates | None:
    """The two states of a variant's round figures (us), or None when they form one."""
    logs = sorted(math.log(f) for f in figures if f > 0)
    if len(logs) < 2 * MIN_ROUNDS:
        return None
    cut = max(range(MIN_ROUNDS, len(logs) - MIN_ROUNDS + 1), key=lambda i: logs[i] - logs[i - 1])
    fast, slow = logs[:cut], logs[cut:]
    gap = slow[0] - fast[-1]
    within = math.sqrt((_squares(fast) + _squares(slow)) / max(1, len(logs) - 2))
    if gap < math.log(GAP_FACTOR) or gap < GAP_SPREADS * within:
        return None
    return TwoStates(len(slow), len(logs), statistics.fmean(math.exp(x) for x in fast),
                     statistics.fmean(math.exp(x) for x in slow))


def _squares(logs: list[float]) -> float:
    centre = statistics.fmean(logs)
    return sum((x - centre) ** 2 for x in logs)
