"""The timing pass of one case: its variants timed in interleaved rounds.

Round r times every variant once, in the order rotated by r (ABC, BCA, CAB, ...), each with an
equal share of the budget; a variant is never always first (cold) or always after the same
neighbour. A slow drift of a shared machine then lands on every variant alike, and the speedup
is paired per round (suites/results/intervals.py). What else ran is measured around each share
(suites/harness/contention.py) and judged afterwards (suites/harness/round_checks.py).

On CUDA a share is two: the latency of calls on an idle GPU (what a user waits for), then the
same calls queued back to back (the kernels' own time, `kernel_us`), each half the share's
budget. Both come from the same round, so the kernel figures are paired, judged for contention
and clocks, and given an interval exactly as the latency is.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from typing import Callable, ContextManager

from kernels.base import Call
from suites.harness import timing
from suites.harness.contention import LoadMeter
from suites.harness.round_checks import Slot
from suites.harness.timing import TimingSpec

# Every share starts with one untimed call, so that a variant does not pay for the pages, caches
# and code the previous variant left (eager LayerNorm at T8192 took 18-31k page faults in its
# first call after the others ran: 2x slow). Only a call this long is its own warm-up: what it
# pays once is under a percent of it, and one more call per share would double a sweep of them.
SELF_WARMING_US = 1_000_000.0


@dataclass
class Contender:
    """A variant that passed its correctness check, ready to be timed."""

    name: str
    call: Call
    scope: Callable[[], ContextManager] = contextlib.nullcontext
    failed: str = ""          # the error of a call that raised during the rounds
    kernel_failed: str = ""   # CUDA: the error of a kernel share (its latency figures stand)
    last_median_us: float = 0.0


def rotated(items: list, r: int) -> list:
    k = r % len(items) if items else 0
    return items[k:] + items[:k]


def _kernel_share(c: Contender, budget, flush, on_error):
    """The share's calls queued back to back, or None once they have raised: the variant keeps
    its latency figures and the row says why it has no kernel time."""
    if c.kernel_failed:
        return None
    try:
        return timing.kernel_share(c.call, budget, flush)
    except Exception as exc:
        c.kernel_failed = on_error(exc)
        return None


def time_rounds(contenders: list[Contender], spec: TimingSpec, device_type: str,
                meter: LoadMeter, first_round: int = 0, on_error=str,
                stop=lambda: False) -> list[Slot]:
    """spec.rounds rounds, numbered from `first_round` (a re-measure continues the numbering).
    A variant whose call raises drops out with `failed` set (by `on_error(exc)`). No round
    starts once `stop()` is true (the case's time limit)."""
    budget = spec.per_round()
    if device_type == "cuda":  # a latency share and a kernel share split the variant's time
        budget = replace(budget, seconds=budget.seconds / 2)
    flush = timing.l2_flusher(spec, device_type)
    slots = []
    for r in range(first_round, first_round + spec.rounds):
        if stop():
            break
        live = [c for c in contenders if not c.failed]
        for position, c in enumerate(rotated(live, r)):
            # Switching variants evicts the previous one's data and code: one untimed call.
            warmup = 0 if c.last_median_us >= SELF_WARMING_US else 1
            try:
                with c.scope():
                    meter.start()
                    latency = timing.sample_calls(c.call, device_type, spec, warmup, budget, flush)
                    kernel = _kernel_share(c, budget, flush, on_error) \
                        if device_type == "cuda" else None
                    load = meter.stop()
            except Exception as exc:  # the sweep goes on; the runner makes it a failed row
                c.failed = on_error(exc)
                continue
            slot = Slot(c.name, r, position, tuple(latency.times_us), load,
                        calls_per_sample=latency.calls, resolution_us=latency.resolution_us)
            if kernel is not None:
                slot = replace(slot, kernel_samples_us=tuple(kernel.times_us),
                               kernel_calls_per_sample=kernel.calls,
                               kernel_resolution_us=kernel.resolution_us)
            c.last_median_us = slot.median_us
            slots.append(slot)
    return slots
