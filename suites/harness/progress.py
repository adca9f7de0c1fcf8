"""A progress line per case: which case is running, how long the rest of the sweep should take,
then what each variant measured.

The estimate of the time left (`[12/60, 0:41 left]`) is a fit, not a rate: a sweep's cases grow
(sizes 64 ... 4096), so rows-per-second from the small first cases would promise minutes for what
takes an hour. Each case's wall time is fitted as a + b * cost, cost being the op's model time of
one call (max of FLOPs over the probed matmul peak and bytes over the probed copy bandwidth; FLOPs,
else bytes, when the run has no peaks): `a` is what every case pays whatever its size (the timing
budget, a compile), `b * cost` what grows with it. The remaining cases' costs are known from the
spec, so the fit extrapolates to them case by case."""
from __future__ import annotations

import math
import time
from typing import Callable, Sequence

from suites.results.columns import Status
from suites.results.row import ResultRow
from suites.text import cut

# A variant line's detail (status and reason) is cut to this, at a word; measurements.csv keeps
# the whole reason.
DETAIL_CHARS = 100


def case_cost(op, case, peaks: dict | None = None) -> float | None:
    """The op's model time of one call of `case` (s), with the run's probed peaks; without them
    its FLOPs, or bytes for an op of no FLOPs. Only ratios between one sweep's cases matter."""
    try:
        flops, moved = float(op.flops(case)), float(op.bytes_ideal(case))
    except Exception:  # an op whose model cannot say: the estimate falls back to per case
        return None
    flops_peak = ((peaks or {}).get("matmul_tflops") or {}).get(case.dtype)
    copy_peak = (peaks or {}).get("copy_gbps")
    if flops_peak and copy_peak:
        return max(flops / (flops_peak * 1e12), moved / (copy_peak * 1e9))
    return flops if flops > 0 else moved


def time_left(seconds: Sequence[float], done_costs: Sequence[float],
              left_costs: Sequence[float]) -> tuple[float, bool] | None:
    """Seconds the cases of `left_costs` should take, fitted on the wall `seconds` of the cases
    done (of `done_costs`, in order), and whether that is only a floor; None before a case is
    done. A floor when the fit could not see how time grows with cost (one cost seen, or no
    growth) yet the cases left cost more than any seen."""
    if not seconds:
        return None
    points = list(zip(done_costs, seconds))
    if len(points) > 1:  # the first case also paid the process's warm-up (imports, first compile)
        points = points[1:]
    costs, times = [c for c, _ in points], [t for _, t in points]
    n = len(points)
    mean_c, mean_t = sum(costs) / n, sum(times) / n
    spread = sum((c - mean_c) ** 2 for c in costs)
    slope = 0.0
    if n > 1 and spread > (1e-9 * mean_c) ** 2 * n:
        slope = sum((c - mean_c) * (t - mean_t) for c, t in points) / spread
    if slope < 0:  # noise among similar cases: no case costs less for being bigger
        slope = 0.0
    base = mean_t - slope * mean_c
    if base < 0:  # cost alone, through zero, rather than a negative time per case
        base, slope = 0.0, sum(c * t for c, t in points) / sum(c * c for c in costs)
    left = sum(base + slope * c for c in left_costs)
    # Not after the first case alone: its warm-up may make the guess too high, not too low.
    floor = (slope == 0 and len(seconds) > 1 and bool(left_costs)
             and max(left_costs) > max(costs))
    return left, floor


def clock_text(seconds: float) -> str:
    """0:41, 12:05, 1:02:09."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


def _usable(costs: Sequence[float | None] | None, n: int) -> list[float]:
    """One positive finite cost per case, or all 1 (the fit is then the mean time per case)."""
    if costs is None or len(costs) != n or any(
            c is None or not math.isfinite(c) or c <= 0 for c in costs):
        return [1.0] * n
    return [float(c) for c in costs]


class Progress:
    def __init__(self, total: int, enabled: bool, stream, costs: Sequence[float | None] | None
                 = None, clock: Callable[[], float] = time.perf_counter):
        """`total` rows in the main pass; `costs`: case_cost of each of its cases, in order."""
        self.total, self.enabled, self.stream, self.clock = total, enabled, stream, clock
        self.costs = None if costs is None else list(costs)
        self.done, self.started = 0, 0.0
        self.case_seconds: list[float] = []  # wall time of each finished case, start to start
        self.case_start: float | None = None
        self.to_remeasure = 0  # cases with a noisy row: the runner times them again at the end
        self.remeasuring = False

    def _print(self, text: str, **kwargs) -> None:
        if self.enabled:
            print(text, file=self.stream, flush=True, **kwargs)

    def start(self, case_id: str, n_variants: int) -> None:
        now = self.started = self.clock()
        if self.case_start is not None:  # the case before, with its rows written to the tables
            self.case_seconds.append(now - self.case_start)
        self.case_start = now
        width = len(str(self.total))
        self._print(f"[{self.done + 1:>{width}}-{min(self.total, self.done + n_variants):>{width}}"
                    f"/{self.total}{self._eta(n_variants)}] {case_id}")
        self.done += n_variants

    def _eta(self, n_variants: int) -> str:
        """', 0:41 left' (with this case), '' before the first case is done."""
        n_cases = (len(self.costs) if self.costs is not None
                   else math.ceil(self.total / max(n_variants, 1)))
        costs = _usable(self.costs, n_cases)
        done = len(self.case_seconds)
        estimate = time_left(self.case_seconds, costs[:done], costs[done:])
        if estimate is None:
            return ""
        seconds, floor = estimate
        text = f", {'≥' if floor else ''}{clock_text(seconds)} left"
        if self.to_remeasure:  # their time is not in the estimate: they are named, not guessed
            text += f" + {self.to_remeasure} re-measure{'s' if self.to_remeasure > 1 else ''}"
        return text

    def again(self, case_id: str) -> None:
        # No time: how long a second pass takes is not what the first one took.
        self.remeasuring = True
        self.started = self.clock()
        self._print(f"[re-measuring] {case_id}: too few clean timing rounds, timed again")

    def finish(self, rows: list[ResultRow]) -> None:
        if not self.remeasuring and any(row.status == Status.NOISY for row in rows):
            self.to_remeasure += 1
        for row in rows:
            median = row.value("median_us")
            if row.ok and not math.isnan(median):
                detail = f"{median:12.1f} us   {row.value('rounds'):.0f} clean rounds"
            else:
                detail = cut(f"{row.status}: {row.reason}", DETAIL_CHARS)
            self._print(f"    {row.variant:<22} {detail}")
        self._print(f"    ({self.clock() - self.started:.1f} s)")
