"""A share of a variant's calls that pays a cost of its own: what a caller pays (us/call, the
mean over calls) well above the median call.

A recompile, a guard miss, an allocator flush, a GC pass, paid every k-th call: the median of
the calls hides it, the mean does not. Rounds in which every variant was slowed were the
machine's and were dropped before (suites/harness/round_checks.py), so what is left is the
variant's own; it is named here, never charged to the machine.
"""
from __future__ import annotations

from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, FindingContext

# us/call this much above the median call: a share of the calls pays a cost of its own.
MEAN_OVER_MEDIAN = 1.10


def slow_calls(ctx: FindingContext):
    mean, median = ctx.value("mean_us"), ctx.value("median_us")
    share = ctx.value("slow_calls")
    if not (mean == mean and median == median and median > 0) or mean <= MEAN_OVER_MEDIAN * median:
        return
    some = (f"{share:.1%} of its calls are slow (over twice the median call)"
            if share == share and share > 0 else "its calls spread far above the median")
    yield Finding(Code.SLOW_CALLS, Severity.WARNING,
                  f"{some}, adding {mean - median:.4g} us a call: us/call {mean:.4g} is "
                  f"{mean / median - 1:.0%} above the median call ({median:.4g} us). A cost of "
                  "the variant's own (a recompile, a guard miss, an allocator flush, a GC "
                  "pass): rounds that slowed every variant were the machine's and were left out",
                  {"mean_us": mean, "median_us": median, "slow_calls": share,
                   "n_samples": ctx.value("n_samples")})
