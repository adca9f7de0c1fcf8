"""The resolution of the clock a sample is read with, and how many calls a sample must cover.

CUDA events time on a grid (about 0.5 us by CUDA's documentation; the step differs by GPU and
driver): a 6 us call read by one event pair lands on one of two or three grid values, so every
round's median is the same value and a 2% difference reads as 0% or 8%. The step is measured
once per process on the device (event pairs around spin kernels of growing length: the
smallest gap between two distinct elapsed times is the step) and written to env.json; a sample
then covers enough calls for its timed span to be SPAN_STEPS steps or more
(`calls_per_sample`), and an interval is never narrower than what the clock can tell
(`suites/results/intervals.py`, `floor`). On a CPU the clock is perf_counter_ns: 1 ns.
"""
from __future__ import annotations

import functools
import math

# A sample's timed span, in steps of the clock: one step is then at most 0.5% of it.
SPAN_STEPS = 200
CPU_RESOLUTION_US = 1e-3  # time.perf_counter_ns
# Spin kernels of these many cycles (about 0 to 3 us at 1-2 GHz), each timed this many times:
# enough distinct elapsed times to show the grid's step several times over.
_SPIN_CYCLES = tuple(range(0, 4000, 125))
_PAIRS_PER_SPIN = 8


def smallest_step(elapsed_us: list[float]) -> float | None:
    """The clock's step from elapsed times read with it: the smallest gap between two distinct
    values (rounded to 1 ns, below what any event clock resolves: float noise is not a step).
    None when the values hold fewer than two distinct times."""
    distinct = sorted({round(t, 3) for t in elapsed_us})
    gaps = [b - a for a, b in zip(distinct, distinct[1:]) if b - a > 0]
    return min(gaps) if gaps else None


@functools.lru_cache(maxsize=None)
def event_resolution_us(device_index: int = 0) -> float:
    """The CUDA event clock's step on this device, microseconds (measured once per process).
    Where the readings show no step (the clock is finer than every gap seen), the smallest
    non-zero reading bounds it."""
    import torch

    with torch.cuda.device(device_index):
        pairs = []
        torch.cuda.synchronize()
        for cycles in _SPIN_CYCLES:
            for _ in range(_PAIRS_PER_SPIN):
                start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                start.record()
                torch.cuda._sleep(cycles)
                end.record()
                pairs.append((start, end))
        torch.cuda.synchronize()
        elapsed = [s.elapsed_time(e) * 1e3 for s, e in pairs]
    step = smallest_step(elapsed)
    if step is None:
        positive = [t for t in elapsed if t > 0]
        step = min(positive) if positive else CPU_RESOLUTION_US
    return step


def mean_floor(step_us: float, calls: int) -> float:
    """The narrowest half-width, us, the clock allows a mean over `calls` calls: each is read to
    within a step at a random phase, so the mean's error is about a step over sqrt(calls).
    Never 0 (rounds that all read the same grid value know the time only to that), and never
    a whole step (which would hide a real 1% difference)."""
    return step_us / math.sqrt(max(1, calls))


def calls_per_sample(per_call_us: float, resolution_us: float) -> int:
    """The fewest calls whose timed span is SPAN_STEPS clock steps or more (1 for a call that
    long by itself)."""
    if not per_call_us > 0 or not resolution_us > 0:
        return 1
    return max(1, math.ceil(SPAN_STEPS * resolution_us / per_call_us))
