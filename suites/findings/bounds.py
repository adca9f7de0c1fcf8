"""Overhead-bound vs compute-bound vs memory-bound: where a call's time goes."""
from __future__ import annotations

import math

from suites.findings.codes import Code, Severity
from suites.findings.core import Finding, FindingContext
from suites.profiling.device_time import overhead_bound


def bound(ctx: FindingContext):
    host, device = ctx.metric("host_us"), ctx.metric("device_us")
    busy = 1.0 - ctx.metric("idle_frac")
    if math.isnan(host) or math.isnan(device) or math.isnan(busy):
        return
    work = "device work" if ctx.on_gpu else "compute work (CPU ops that compute)"
    evidence = {"host_us": host, "device_us": device, "busy_frac": busy}
    if overhead_bound(busy):
        yield Finding(Code.OVERHEAD_BOUND, Severity.NOTICE,
                      f"overhead-bound: {work} is {device:.1f} us of a {host:.1f} us "
                      f"{'step' if ctx.row is None else 'call'} "
                      f"({busy:.0%} busy); the rest is Python, dispatch and launch overhead",
                      evidence)
        return
    intensity = ctx.value("intensity")
    evidence["intensity_flop_per_byte"] = intensity
    if ctx.value("roofline_bound") == "memory":
        yield Finding(Code.MEMORY_BOUND, Severity.INFO,
                      f"memory-bound: {work} fills {busy:.0%} of the step ({device:.1f} us) and "
                      f"the op does {intensity:.1f} FLOP per byte, under the machine's ridge point",
                      evidence)
    else:
        yield Finding(Code.COMPUTE_BOUND, Severity.INFO,
                      f"compute-bound: {work} fills {busy:.0%} of the step ({device:.1f} us of "
                      f"work; host span {host:.1f} us)", evidence)
