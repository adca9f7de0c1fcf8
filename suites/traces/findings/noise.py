"""Timing that should not be trusted as it stands: a wide spread between calls."""
from __future__ import annotations

from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, FindingContext

# p90 this many times the median: some calls were stalled (a busy machine, a scheduler tick, a
# page fault, a clock change), and a comparison would measure the stalls.
STALL_FACTOR = 3.0


def noisy_timing(ctx: FindingContext):
    median, p90 = ctx.value("median_us"), ctx.value("p90_us")
    if not median or median != median or p90 != p90 or p90 < STALL_FACTOR * median:
        return
    yield Finding(Code.NOISY_TIMING, Severity.WARNING,
                  f"timing is noisy: p90 {p90:.4g} us is {p90 / median:.1f}x the median "
                  f"{median:.4g} us; some calls stalled (a busy machine, too many threads for "
                  "the cores): rerun on a quiet machine before comparing",
                  {"median_us": median, "p90_us": p90, "n_samples": ctx.value("n_samples")})
