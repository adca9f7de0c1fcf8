"""Overhead-bound vs compute-bound vs memory-bound: where a call's time goes."""
from __future__ import annotations

import math

from suites.findings.core import Finding, FindingContext, detector

# Below this share of the step's wall time the device mostly waits for the host.
OVERHEAD_BUSY = 0.5


@detector
def bound(ctx: FindingContext):
    host, device = ctx.metric("host_us"), ctx.metric("device_us")
    busy = 1.0 - ctx.metric("idle_frac")
    if math.isnan(host) or math.isnan(device) or math.isnan(busy):
        return
    work = "device work" if ctx.device_type == "cuda" else "compute work (CPU ops that compute)"
    evidence = {"host_us": host, "device_us": device, "busy_frac": busy}
    if busy < OVERHEAD_BUSY:
        yield Finding("overhead_bound", "notice",
                      f"overhead-bound: {work} is {device:.1f} us of a {host:.1f} us "
                      f"{'call' if ctx.row else 'step'} "
                      f"({busy:.0%} busy); the rest is Python, dispatch and launch overhead",
                      evidence)
        return
    intensity = ctx.row.get("intensity", float("nan")) if ctx.row else float("nan")
    evidence["intensity_flop_per_byte"] = intensity
    if ctx.row and ctx.row.get("roofline_bound") == "memory":
        yield Finding("memory_bound", "info",
                      f"memory-bound: {work} fills {busy:.0%} of the step ({device:.1f} us) and "
                      f"the op does {intensity:.1f} FLOP per byte, under the machine's ridge point",
                      evidence)
    else:
        yield Finding("compute_bound", "info",
                      f"compute-bound: {work} fills {busy:.0%} of the step ({device:.1f} us of "
                      f"work; host span {host:.1f} us)", evidence)
