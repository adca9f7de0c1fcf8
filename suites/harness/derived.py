"""What a row derives from its parts: the cost model of its case, throughput and roofline share,
exposed overhead and compile cost (the paired speedup comes from the rounds: case_run.py).

Throughput is measured against the kernel time on CUDA and the time per call on a CPU
(`work_us`). `pct_peak` is the achieved FLOP/s over what the roofline allows at the variant's
own arithmetic intensity (its modelled bytes where the op models its form), min(peak FLOP/s,
intensity x the bandwidth of the memory level its bytes fit in), both measured on this machine
(env.json, calibration.py). The bound is overhead where the exposed overhead is half the call or
more, else compute or memory by the intensity against the ridge.
"""
from __future__ import annotations

import math

from kernels.base import Case, Op, Variant
from suites.harness.calibration import bandwidth_for
from suites.traces.device_time import on_gpu
from suites.results.row import NAN, ResultRow, Roofline

# A call whose exposed overhead is this share of it or more is overhead-bound, whatever the
# op's intensity says (roofline_bound).
OVERHEAD_SHARE = 0.5


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
    peak_tflops = peaks["matmul_tflops"].get(row.dtype, NAN)
    # The variant's own bytes where its form is modelled (an unfused form moves more), and the
    # roof of the memory level they fit in (calibration.py: a CPU's caches).
    moved = r.bytes_moved if r.bytes_moved and r.bytes_moved == r.bytes_moved else r.bytes
    bandwidth = bandwidth_for(peaks, moved)
    model_us = max(r.flops / (peak_tflops * 1e6), moved / (bandwidth * 1e3))
    memory_tflops = r.flops / moved * bandwidth / 1e3 if moved else NAN
    r.pct_peak = 100.0 * r.tflops / min(peak_tflops, memory_tflops)
    r.roofline_bound = "compute" if memory_tflops >= peak_tflops else "memory"
    if _overhead_bound(row, model_us, time_us):
        r.roofline_bound = "overhead"


def _overhead_bound(row: ResultRow, model_us: float, time_us: float) -> bool:
    """Overhead is what bounds a call where the exposed overhead (host and launch work the
    device waits on) is most of it, as the profile measured; without a profile, where the work
    at the roofs is under a tenth of the call (a 64^3 fp32 matmul is neither memory- nor
    compute-bound: Python and dispatch are its time)."""
    overhead = exposed_overhead_us(row)
    if overhead == overhead:
        return overhead >= OVERHEAD_SHARE * row.value("mean_us")
    return model_us < 0.1 * time_us


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
