"""The timing pass: warm-up, then samples until the budget and the minimum count are met (on a
CPU one call a sample; on CUDA a block of calls spanning 200 steps of the event clock, each call
in its own event pair). Never run under the profiler. Raw samples are kept; the summary is the time per call (the
mean: what a caller pays) with its interval, and beside it median, p10, p90, min.

The runner splits a case's budget into rounds (suites/harness/rounds.py): each round times every
variant once, with `Budget` the share of the budget, samples and calls of one variant in one
round. A round's figure is the mean of its calls (round_checks.py); a row's time per call, the
mean of its clean rounds' figures."""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

import torch

from suites.harness.two_states import two_states
from suites.harness.training import reset_of
from suites.harness.event_clock import (CPU_RESOLUTION_US, calls_per_sample,
                                        event_resolution_us, mean_floor)
from suites.results.intervals import mean_interval
from suites.results.row import NAN, TimingStats

# A call over this many times the median call is a slow one (slow_calls): a cost of its own
# paid now and then (a recompile, a guard miss, an allocator flush, a GC pass).
SLOW_CALL_FACTOR = 2.0

# summarize's quantiles (median, p25, p75, p10, p90), taken in one call: one sort, not five,
# and the same figures (the simulation bench, suites/tools/estimators.py, summarizes 20,800
# rows; five calls were a fifth of its time).
_QUANTILES = torch.tensor([0.5, 0.25, 0.75, 0.1, 0.9], dtype=torch.float64)

# Bigger than the L2 of any current GPU (H100/H200: 50-60 MB), so reading it evicts the inputs.
_L2_FLUSH_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class TimingSpec:
    preset: str
    budget_s: float  # keep sampling until this much time is spent...
    min_samples: int  # ...and at least this many samples are taken
    max_samples: int
    warmup_calls: int
    compile_warmup_calls: int  # compile variants settle after a few calls (guards, autotune)
    l2_flush: bool  # CUDA: flush L2 between calls, so each call starts cold
    threads: int  # CPU threads, set explicitly (torch.utils.benchmark defaults to 1)
    rounds: int = 1  # the budget is split across this many interleaved rounds (ABC BCA CAB ...)
    threads_rule: str = "set"  # how `threads` was chosen, for env.json and the report
    case_timeout_s: float = 0  # a case still running after this long fails (0: no limit)
    aa_control: bool = False  # time a second copy of the baseline as a variant (AA_CONTROL)

    def per_round(self) -> "Budget":
        """One variant's share of one round: the budget split evenly, and enough samples for
        the round to have a median of its own."""
        return Budget(self.budget_s / self.rounds,
                      max(1, math.ceil(self.min_samples / self.rounds)),
                      max(1, math.ceil(self.max_samples / self.rounds)))

    def whole(self) -> "Budget":
        return Budget(self.budget_s, self.min_samples, self.max_samples)


@dataclass(frozen=True)
class Budget:
    seconds: float  # keep sampling until this much time is spent...
    min_samples: int  # ...and at least this many samples are taken
    max_samples: int


def summarize(slots, cache: str = "n/a", rounds: int = 1, rounds_dropped: int = 0) -> TimingStats:
    """A row's timing from the shares (round_checks.Slot) it uses: us/call, the mean of the
    rounds' figures with its interval (the estimator the paired speedup uses too), and beside it
    the median, p10, p90, min, spread and slow samples of all their samples. `rounds` clean
    rounds; `rounds_dropped` more were not used."""
    samples_us = [t for s in slots for t in s.samples_us]
    mean, low, high = mean_interval([s.mean_us for s in slots], floor=clock_floor(slots))
    t = torch.tensor(samples_us, dtype=torch.float64)
    median, p25, p75, p10, p90 = t.quantile(_QUANTILES).tolist()
    faults = [s.faults_per_call for s in slots if s.faults_per_call is not None]
    return TimingStats(
        n_samples=len(samples_us), mean_us=mean, mean_low_us=low, mean_high_us=high,
        median_us=median, p10_us=p10, p90_us=p90,
        min_us=float(t.min()), iqr_rel=(p75 - p25) / median if median else float("nan"),
        cache=cache, rounds=rounds, rounds_dropped=rounds_dropped,
        slow_calls=float((t > SLOW_CALL_FACTOR * median).double().mean()),
        faults_per_call=statistics.fmean(faults) if faults else float("nan"),
        calls_per_sample=max(s.calls_per_sample for s in slots),
        **_states([s.mean_us for s in slots]),
    )


def _states(figures: list[float]) -> dict:
    states = two_states(figures)
    if states is None:
        return {}
    return {"slow_state_rounds": states.slow_rounds, "slow_state_factor": states.factor}


def clock_floor(slots, kernel: bool = False) -> float:
    """The clock's floor (event_clock.mean_floor) on a mean over these shares' calls."""
    step = max((s.kernel_resolution_us if kernel else s.resolution_us) for s in slots)
    return mean_floor(step, sum(s.kernel_calls() if kernel else s.latency_calls() for s in slots))


def kernel_summary(slots) -> tuple[float, float, float]:
    """CUDA: (kernel_us, low, high) from the shares' kernel figures (NaN where none has one)."""
    figures = [s.kernel_mean_us for s in slots if s.kernel_mean_us]  # 0: nothing on the stream
    if not figures:
        return NAN, NAN, NAN
    return mean_interval(figures, floor=clock_floor(slots, kernel=True))


def sync(device_type: str) -> None:
    if device_type == "cuda":
        torch.cuda.synchronize()


def time_first_call(call, device_type: str) -> float:
    """Milliseconds of the first call: compile, JIT, autotune, allocator and cache warm-up."""
    sync(device_type)
    start = time.perf_counter()
    call()
    sync(device_type)
    return (time.perf_counter() - start) * 1e3


def warm_up(call, device_type: str, calls: int, stop_after_us: float | None = None) -> None:
    """Untimed calls; with `stop_after_us`, stop as soon as one call takes that long (a call of
    tens of milliseconds warms its caches by itself: more would only spend the budget)."""
    for _ in range(calls):
        start = time.perf_counter()
        call()
        sync(device_type)
        if stop_after_us is not None and (time.perf_counter() - start) * 1e6 >= stop_after_us:
            break
    sync(device_type)


def _enough(n: int, elapsed_s: float, budget: Budget) -> bool:
    return n >= budget.max_samples or (n >= budget.min_samples and elapsed_s >= budget.seconds)


def _cpu_samples(call, budget: Budget) -> list[float]:
    samples: list[float] = []
    reset = reset_of(call)  # a training step's gradients, cleared outside the timed span
    start = time.perf_counter_ns()
    now = start
    while not _enough(len(samples), (now - start) / 1e9, budget):
        if reset is not None:
            reset()
        t0 = time.perf_counter_ns()
        call()
        now = time.perf_counter_ns()
        samples.append((now - t0) / 1e3)
    return samples


def l2_flusher(spec: TimingSpec, device_type: str):
    """A call that evicts L2, or None: it reads a buffer larger than any current L2 (a sum
    into one preallocated scalar). Reading, not writing: a flush that zeroes the buffer leaves
    L2 full of its dirty lines (~50 MB on an H100), whose write-back is then charged to the
    next small kernel timed; read lines are clean and are dropped for free. The previous
    call's own dirty lines are written back during the flush, outside the timed span.
    (gpu_check's `l2 flush kinds` probe times a small kernel after each kind.)"""
    if device_type != "cuda" or not spec.l2_flush:
        return None
    buffer = torch.zeros(_L2_FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
    total = torch.zeros((), dtype=torch.float32, device="cuda")
    return lambda: torch.sum(buffer, out=total)


def sample_count(budget: Budget, per_call_us: float) -> int:
    """As many samples as `budget` holds at `per_call_us` each, within its sample bounds
    (`_cuda_samples` counts a CUDA share's calls by it)."""
    per_call_s = max(per_call_us, 1.0) / 1e6
    return int(min(budget.max_samples, max(budget.min_samples, budget.seconds / per_call_s)))


@dataclass(frozen=True)
class Samples:
    """One share's samples, microseconds per call: each the mean of `calls` calls, each call
    read by a clock of step `resolution_us` (suites/harness/event_clock.py)."""

    times_us: list[float]
    calls: int = 1
    resolution_us: float = CPU_RESOLUTION_US


def blocks(per_call_us: list[float], calls: int) -> list[float]:
    """Consecutive calls taken `calls` at a time, each block its mean (a last partial one
    dropped, unless it is the only one)."""
    whole = len(per_call_us) // calls * calls or len(per_call_us)
    return [statistics.fmean(per_call_us[i:i + calls]) for i in range(0, whole, calls)]


def _cuda_samples(call, budget: Budget, flush, drain: bool = True) -> Samples:
    """A per-call time from a few calls sizes the share: as many calls as the budget holds
    (within its bounds, counted in calls: each pays an untimed flush and sync besides), taken
    in samples that each cover enough calls to span SPAN_STEPS steps of the event clock."""
    probes = sorted(_cuda_batch(call, 3, flush, drain))
    probe = probes[1]
    step = event_resolution_us(torch.cuda.current_device())
    # Sized from the fastest probe: a probe call slowed by a neighbour would otherwise make
    # every sample span fewer steps than SPAN_STEPS (the share's length uses the median).
    calls = calls_per_sample(probes[0], step)
    count = max(budget.min_samples, sample_count(budget, probe) // calls)
    per_call = _cuda_batch(call, count * calls, flush, drain)
    return Samples(blocks(per_call, calls), calls, step)


def _cuda_batch(call, n: int, flush, drain: bool = True) -> list[float]:
    """`n` calls, each between a pair of CUDA events, microseconds each; `flush` (an L2 flush)
    runs before each pair, outside it. Elapsed times are read after one final sync. A sample is
    a block of these (`blocks`): each call keeps its own pair, so every call starts on a
    drained queue with its L2 flushed outside the timed span, and the grid error of each pair
    (one clock step at most, at a random phase) averages out over the block.

    drain=True: the latency of one call on an idle GPU, host work included. The queue is
    drained before each call: otherwise the 256 MB flush (tens of microseconds of GPU time)
    would still be running when the call's kernels are queued, and the events would time only
    the kernels, hiding the Python, dispatch and launch cost that small calls are made of.
    drain=False: `kernel_share`.
    """
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    reset = reset_of(call)  # a training step's gradients, cleared outside the timed pair
    torch.cuda.synchronize()
    for start, end in zip(starts, ends):
        if flush is not None:
            flush()  # outside the timed pair: evicts the previous call's data from L2
        if reset is not None:
            reset()
        if drain:
            torch.cuda.synchronize()
        start.record()
        call()
        end.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)]


def kernel_share(call, budget: Budget, flush=None) -> Samples:
    """Device time of calls queued back to back, microseconds per call (CUDA only): the method
    of `triton.testing.do_bench`. A CUDA event pair brackets each call; `flush` (an L2 flush)
    runs between the pairs, outside them; nothing waits for the GPU until all are queued, so
    the host path of one call overlaps the device work of the calls before it and the pairs
    time the kernels. Where the host path of a call is longer than its kernels the queue runs
    dry and the pairs time the host's issue rate instead: `kernel_us` near `mean_us` says so."""
    return _cuda_samples(call, budget, flush, drain=False)


def sample_calls(call, device_type: str, spec: TimingSpec, warmup_calls: int,
                 budget: Budget | None = None, flush=None) -> Samples:
    """Samples in microseconds per call, after `warmup_calls` untimed calls; the whole budget of
    `spec` unless `budget` gives a round's share (and `flush`, the round's L2 flusher). On a CPU
    one sample is one call (perf_counter_ns); on CUDA a block of calls (`_cuda_samples`)."""
    for _ in range(warmup_calls):
        call()
    sync(device_type)
    budget = budget or spec.whole()
    if device_type == "cuda":
        return _cuda_samples(call, budget, flush or l2_flusher(spec, "cuda"))
    return Samples(_cpu_samples(call, budget))
