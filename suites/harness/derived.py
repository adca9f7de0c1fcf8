"""What a row derives from its parts: the cost model of its case, throughput and roofline share,
exposed overhead and compile cost (the paired speedup comes from the rounds: case_run.py).

Throughput is measured against the kernel time on CUDA and the time per call on a CPU
(`work_us`). `pct_peak` is the achieved FLOP/s over what the roofline allows at the variant's
own arithmetic intensity (its modelled bytes where the op models its form), min(peak FLOP/s,
intensity x the bandwidth of the memory level its bytes fit in), both measured on this machine
(env.json, calibration.py). The bound is suites/common/roofline.py's, the one rule every page
reads.
"""
from __future__ import annotations

import math

from kernels.base import Case, Op, Variant
from suites.common.roofline import row_bound
from suites.results.columns import profile_unclean
from suites.traces.device_time import on_gpu
from suites.results.row import NAN, ResultRow, Roofline


def new_row(suite: str, case: Case, variant: Variant, op: Op, threads: int) -> ResultRow:
    """The row of one (case, variant) before it runs: its identity and the op's cost model."""
    flops, nbytes = op.flops(case), op.bytes_ideal(case)
    roofline = Roofline(flops=flops, bytes=nbytes, bytes_unfused=op.bytes_unfused(case),
                        bytes_moved=op.bytes_moved(case, variant.name), intensity=flops / nbytes)
    return ResultRow(suite=suite, op=case.op, case_id=case.id, variant=variant.name,
                     family=variant.family, dtype=case.dtype, device=case.device,
                     params=case.values, roofline=roofline, threads=threads, mode=case.mode)


def work_us(row: ResultRow) -> float:
    """The time throughput is measured against. CUDA: the kernel time, since the latency of one
    call on an idle GPU also holds its host path (a wrapper's checks and launch, ~10-40 us),
    which would be charged to the kernel. CPU: the time per call, the device being the host."""
    return row.value("kernel_us") if on_gpu(row.device) else row.value("mean_us")


def _roofline(row: ResultRow, peaks: dict | None) -> None:
    time_us = work_us(row)
    if not time_us or math.isnan(time_us):
        return
    r = row.roofline
    seconds = time_us * 1e-6
    r.tflops = r.flops / seconds / 1e12
    r.gbps = r.bytes / seconds / 1e9
    if not peaks:
        return
    found = row_bound(r.flops, r.bytes, r.bytes_moved, peaks["matmul_tflops"].get(row.dtype, NAN),
                      peaks, time_us, row.value("mean_us"), trusted_overhead_us(row))
    r.ridge, r.roof_gbps = found.ridge, found.roof_gbps
    memory_tflops = found.intensity * found.roof_gbps / 1e3
    r.pct_peak = 100.0 * r.tflops / min(found.peak_tflops, memory_tflops)
    # A profile that is not clean states no bound as fact: its exposed overhead decides none.
    r.roofline_bound = found.bound if profile_clean(row) else None


def profile_clean(row: ResultRow) -> bool:
    """Whether the row's profile figures may be read as fact: no profile at all (the bound is
    the model's), or one judged clean."""
    return not profile_unclean(row.profile.profile_state if row.profile is not None else None)


def trusted_overhead_us(row: ResultRow) -> float:
    """The exposed overhead the bound may rest on: NaN where the profile was not clean."""
    return exposed_overhead_us(row) if profile_clean(row) else NAN


def exposed_overhead_us(row: ResultRow) -> float:
    """Time per call in which the device does no work for the call.

    GPU: time per call - device time (CUPTI's kernel timestamps are not slowed by the profiler).
    CPU: the profiler adds a microsecond or two to every op, which would swamp a 10 us call, so
    the profiled share of compute, device_us / host_us, is applied to the unprofiled time per
    call.
    """
    median, device, host = (row.value(k) for k in ("mean_us", "device_us", "host_us"))
    if any(math.isnan(v) for v in (median, device, host)):
        return NAN
    if on_gpu(row.device):
        return max(0.0, median - device)
    return median * max(0.0, 1.0 - device / host) if host > 0 else NAN


def derive(row: ResultRow, peaks: dict | None) -> None:
    """Throughput, roofline share, exposed overhead and compile cost of one row, in place (the
    findings read them, so they are set before the findings run)."""
    _roofline(row, peaks)
    row.exposed_overhead_us = exposed_overhead_us(row)
    median = row.value("mean_us")
    if row.family == "compile" and not math.isnan(row.first_call_ms) and not math.isnan(median):
        row.compile_ms = max(0.0, row.first_call_ms - median / 1e3)
