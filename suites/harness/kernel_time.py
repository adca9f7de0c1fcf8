"""The kernel-time pass (CUDA): each timed variant's calls queued back to back, for `kernel_us`.

The timing rounds measure the latency of one call on an idle GPU, host path included: that is
what a user waits for, but it charges a kernel with its wrapper's Python (argument checks, the
autotuner's key, the launch), 10-40 us that can be 5-15% of a 200 us GEMM. Here the calls are
queued without a host sync in between (triton.testing.do_bench's method), so the host path of
one call hides behind the device work of the ones before it. It runs after the rounds, once
per variant, with the same L2 flush; a failure keeps the row's timing and says why.
"""
from __future__ import annotations

import statistics

from suites.harness import timing
from suites.harness.case_clock import NO_LIMIT, CaseClock
from suites.harness.spec import RunSpec


def kernel_times(prepared: list, device_type: str, spec: RunSpec,
                 short_error=str, clock: CaseClock = NO_LIMIT) -> dict[str, str]:
    """Sets `kernel_us` on each timed row (CUDA only); returns variant -> why it has none."""
    if device_type != "cuda":
        return {}
    notes = {}
    budget = spec.timing.per_round()
    flush = timing.l2_flusher(spec.timing, device_type)
    for p in prepared:
        contender = p.contender
        if contender is None or contender.failed:
            continue
        if clock.over():
            notes[p.row.variant] = clock.reason("no kernel time")
            continue
        try:
            with contender.scope():
                contender.call()  # the previous variant's data and code are still in the caches
                # As many calls as one round's share of the budget holds.
                samples = timing.kernel_samples(
                    contender.call, timing.sample_count(budget, contender.last_median_us), flush)
        except Exception as exc:
            notes[p.row.variant] = f"kernel time failed: {short_error(exc)}"
            continue
        p.row.kernel_us = statistics.median(samples)
    return notes
