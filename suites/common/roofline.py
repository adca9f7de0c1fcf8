"""A row's bound, decided once: overhead, compute or memory, with the numbers that decide it.

Every page that names a row's bound (measurements.csv's `roofline_bound`, the bound finding's
statement and evidence, the report's answer, the ladder, the audit) reads this decision; none
decides again. The rule:

- the roof: the variant's own intensity (FLOPs over the bytes its form moves, intermediates
  included where the op models them) against the ridge point of the memory level those bytes
  fit in: peak FLOP/s over that level's copy bandwidth, both measured on this machine and kept
  in env.json (a CPU's caches are probed; a GPU's timing flushes L2, so DRAM's is its roof). At
  or above the ridge the roof is compute, below it memory;
- overhead instead, where the exposed overhead (host and launch work the device waits on, from
  the profile) is half the call or more; without a profile, where the work at the roofs would
  take under a tenth of the call (a 64^3 fp32 matmul: Python and dispatch are its time).

A CPU GEMM's own time is compute: the device is the CPU, so what its op does is the work.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

NAN = float("nan")
OVERHEAD, COMPUTE, MEMORY = "overhead", "compute", "memory"
# A call whose exposed overhead is this share of it or more is overhead-bound, whatever the
# op's intensity says.
OVERHEAD_SHARE = 0.5
# Without a profile: the work at the roofs under this share of the call is overhead-bound.
MODEL_SHARE = 0.1


def bandwidth_for(peaks: dict, working_set: float | None) -> float:
    """The copy bandwidth of the smallest memory level `working_set` bytes fit in (half its
    size, as probed); DRAM's where it fits none, or nothing else was probed. A cache probe that
    read under DRAM's (a busy machine) never lowers the roof."""
    for fits, gbps in peaks.get("cache_copy_gbps") or []:
        if working_set is not None and working_set <= fits:
            return max(gbps, peaks["copy_gbps"])
    return peaks["copy_gbps"]


@dataclass(frozen=True)
class RowBound:
    """A row's bound and every number that decided it (NaN where unknown)."""

    bound: str                 # overhead | compute | memory | "" (no peaks: not judged)
    intensity: float = NAN     # FLOP per byte the variant's form moves
    ridge: float = NAN         # FLOP per byte at which the roofs meet, at its memory level
    peak_tflops: float = NAN   # the dtype's measured matmul peak
    roof_gbps: float = NAN     # the measured copy bandwidth of the level its bytes fit in
    moved_bytes: float = NAN
    overhead_share: float = NAN  # exposed overhead over the call; NaN without a profile
    model_share: float = NAN     # the work at the roofs over the call

    @property
    def roof(self) -> str:
        """The roof the intensity meets: compute or memory ("" when not judged)."""
        if math.isnan(self.intensity) or math.isnan(self.ridge):
            return ""
        return COMPUTE if self.intensity >= self.ridge else MEMORY


def moved_bytes(nbytes: float, bytes_moved: float | None) -> float:
    """The variant's own bytes where its form is modelled (an unfused form moves more)."""
    if bytes_moved is not None and bytes_moved == bytes_moved and bytes_moved > 0:
        return float(bytes_moved)
    return float(nbytes)


def row_bound(flops: float, nbytes: float, bytes_moved: float | None, peak_tflops: float,
              peaks: dict | None, work_us: float, call_us: float,
              exposed_overhead_us: float) -> RowBound:
    """The bound of one row: `work_us` is the time its throughput is measured against (the
    kernel time on CUDA, the call on a CPU), `call_us` the time per call, `exposed_overhead_us`
    NaN without a profile (or with one whose figures are not to be trusted)."""
    if not peaks or not (peak_tflops > 0) or not (work_us > 0) or not (flops > 0):
        return RowBound("")
    moved = moved_bytes(nbytes, bytes_moved)
    bandwidth = bandwidth_for(peaks, moved)
    intensity = flops / moved if moved else NAN
    ridge = peak_tflops * 1e12 / (bandwidth * 1e9)
    model_us = max(flops / (peak_tflops * 1e6), moved / (bandwidth * 1e3))
    share = (exposed_overhead_us / call_us
             if exposed_overhead_us == exposed_overhead_us and call_us > 0 else NAN)
    found = RowBound("", intensity, ridge, peak_tflops, bandwidth, moved, share,
                     model_us / work_us)
    if share == share:
        overhead = share >= OVERHEAD_SHARE
    else:
        overhead = found.model_share < MODEL_SHARE
    return RowBound(OVERHEAD if overhead else found.roof, **{
        k: getattr(found, k) for k in ("intensity", "ridge", "peak_tflops", "roof_gbps",
                                       "moved_bytes", "overhead_share", "model_share")})


def why_unjudged(flops, work_us) -> str:
    """Why row_bound states no bound for a row whose profile may be read (or that has none),
    in the words every page uses: what it lacked of flops, a time, or a measured peak."""
    flops, work_us = (NAN if v is None else float(v) for v in (flops, work_us))
    if not (flops > 0):
        return "no FLOPs to judge"
    if not (work_us > 0):
        return "no time to judge it by (no kernel time measured)"
    return "no measured peak for its dtype (calibrate=false, or none probed)"
