"""A progress line per case: which case is running, how long the rest of the sweep should take,
then what each variant measured.

The estimate of the time left (`[12/60, 0:41 left]`) follows how the harness spends a case, not
a rate: each variant takes max(timing budget, min_samples calls) plus a fixed number of other
calls (first call, warm-up, check, one per round, the profiled steps), and a case pays a fixed
overhead besides (set-up, a compile, writing rows). A call's time in a case not yet run is the
fitted per variant on the cases done as a fixed part plus one that grows with the op's model
cost (`case_cost`: FLOPs over the probed matmul peak, bytes over the probed copy bandwidth); the
case's fixed overhead is fitted on the cases done too. A sweep of sizes 64 ... 2048 is budget-bound at first and call-bound at the end:
rows per second, or a straight line through the first cases' times, would be wrong both ways.
Before any case has a measured call (all skipped so far) the mean time per case is used."""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from suites.results.columns import Status
from suites.results.row import ResultRow
from suites.common.text import cut

# A variant line's detail (status and reason) is cut to this, at a word; measurements.csv keeps
# the whole reason.
DETAIL_CHARS = 100


@dataclass(frozen=True)
class CaseWork:
    """How the harness spends one variant of a case (suites/harness/case_run.py)."""

    budget_s: float = 0.0     # the timing budget, shared by its rounds
    min_calls: int = 1        # timed calls at least, whatever the budget
    other_calls: int = 0      # first call, warm-up, check, one untimed per round, profiled steps

    def seconds(self, call_s: float) -> float:
        return max(self.budget_s, self.min_calls * call_s) + self.other_calls * call_s


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


def _call_model(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(a, b) of call seconds = a + b * cost, least squares over (cost, seconds) with a, b >= 0:
    a call's fixed part (Python, dispatch) and the part that grows with the work. One point:
    all of it grows (the larger cases then look longer, not shorter, than they will be)."""
    costs, calls = [c for c, _ in points], [t for _, t in points]
    n, mean_c, mean_t = len(points), statistics.mean(costs), statistics.mean(calls)
    spread = sum((c - mean_c) ** 2 for c in costs)
    if n > 1 and spread > 0:
        b = sum((c - mean_c) * (t - mean_t) for c, t in points) / spread
        a = mean_t - b * mean_c
        if b >= 0 and a >= 0:
            return a, b
        if b < 0:  # noise among cases of one cost: no growth seen
            return mean_t, 0.0
    return 0.0, sum(c * t for c, t in points) / sum(c * c for c in costs)


def time_left(seconds: Sequence[float], calls: Sequence[dict[str, float]],
              done_costs: Sequence[float], left_costs: Sequence[float],
              work: CaseWork) -> float | None:
    """Seconds the cases of `left_costs` should take. `seconds`: wall time of each case done;
    `calls`: its variants' measured seconds per call, by variant; None before a case is done."""
    if not seconds:
        return None
    variants = list(dict.fromkeys(v for case in calls for v in case))
    if not variants:  # nothing timed yet: each case as long as the ones done
        return statistics.mean(seconds) * len(left_costs)
    models = {v: _call_model([(done_costs[i], case[v]) for i, case in enumerate(calls)
                              if v in case]) for v in variants}
    # The fixed part of a case: its wall time beyond its variants' work. The first case also
    # paid the process's warm-up (imports, the first compile): left out when others can say.
    fitted = [i for i, case in enumerate(calls) if case and i > 0] or \
        [i for i, case in enumerate(calls) if case]
    fixed = max(0.0, statistics.median(
        seconds[i] - sum(work.seconds(t) for t in calls[i].values()) for i in fitted))
    return sum(fixed + sum(work.seconds(a + b * cost) for a, b in models.values())
               for cost in left_costs)


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
                 = None, clock: Callable[[], float] = time.perf_counter,
                 work: CaseWork = CaseWork()):
        """`total` rows in the main pass; `costs`: case_cost of each of its cases, in order;
        `work`: how the harness spends a variant of a case (the run's timing and profile)."""
        self.total, self.enabled, self.stream, self.clock = total, enabled, stream, clock
        self.costs = None if costs is None else list(costs)
        self.work = work
        self.done, self.started = 0, 0.0
        self.case_seconds: list[float] = []  # wall time of each finished case, start to start
        self.case_calls: list[dict[str, float]] = []  # each case's seconds per call, by variant
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
        seconds = time_left(self.case_seconds, self.case_calls[:done], costs[:done],
                            costs[done:], self.work)
        if seconds is None:
            return ""
        text = f", {clock_text(seconds)} left"
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
        if not self.remeasuring:
            self.case_calls.append({row.variant: row.value("mean_us") / 1e6 for row in rows
                                    if row.status in (Status.OK, Status.NOISY)
                                    and row.value("mean_us") > 0})
        for row in rows:
            per_call = row.value("mean_us")
            if row.ok and not math.isnan(per_call):
                detail = f"{per_call:12.1f} us   {row.value('rounds'):.0f} clean rounds"
            else:
                detail = cut(f"{row.status}: {row.reason}", DETAIL_CHARS)
            self._print(f"    {row.variant:<22} {detail}")
        self._print(f"    ({self.clock() - self.started:.1f} s)")
