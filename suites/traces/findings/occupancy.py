"""A kernel that takes a large share of device time and whose registers or shared memory leave
room for few warps per SM (theoretical occupancy, suites/traces/occupancy.py).

Never about attention kernels or tensor-core GEMMs: a flash kernel's low occupancy is its
design (ATTENTION_NOTE), and a tensor-core GEMM with large tiles runs one or two CTAs per SM on
purpose (TENSOR_CORE_GEMM_NOTE, under the kernel table): they are left out before anything is
compared. Kernels are picked by their share of device time, never ranked by occupancy. A GEMM
on CUDA cores is said at info severity, with its achieved rate where known.
"""
from __future__ import annotations

import math

from suites.traces.findings.bounds import host_paced
from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, FindingContext
from suites.traces.gpu_timeline import collective_name
from suites.traces.occupancy import is_attention

SHARE = 0.25  # of the device time per call
LOW_PCT = 50.0  # theoretical occupancy below this counts as held down
SHOWN = 3  # kernels, largest share first
_RESOURCES = ("registers", "shared memory")


def _limited_by(row: dict) -> list[str]:
    return [r for r in _RESOURCES if r in (row.get("occupancy_limit") or "").split("+")]


def occupancy_limited(ctx: FindingContext):
    if ctx.profile is None or not ctx.on_gpu:
        return
    rows = ctx.profile.kernel_rows()
    total = sum(r["total_us_per_call"] for r in rows)
    if total <= 0:
        return
    # A collective's resources are its library's choice, and its time is the network's:
    # occupancy advice cannot act on it.
    held = [r for r in rows if r["kind"] == "kernel" and not is_attention(r["kernel"])
            and not collective_name(r["kernel"]) and r.get("gemm_tensor_core") != "yes"
            and r["total_us_per_call"] >= SHARE * total and _limited_by(r)
            and r.get("theoretical_occupancy_pct", math.nan) < LOW_PCT]
    if host_paced(ctx):  # the host sets the step's time: a faster kernel would not shorten it
        return
    for row in held[:SHOWN]:  # kernel_rows: largest time first
        yield _finding(row, total)


def _finding(row: dict, total: float) -> Finding:
    share = row["total_us_per_call"] / total
    limits = _limited_by(row)
    details = []
    if "registers" in limits:
        details.append(f"{row['registers_per_thread']:g} registers per thread")
    if "shared memory" in limits:
        details.append(f"{row['shared_mem_bytes'] / 1024:.0f} KB of shared memory per block")
    gemm = bool(row.get("gemm_library"))
    rate = row.get("gemm_tflops", math.nan)
    if gemm:
        # Said as the kernel table says it: a SIMT sgemm is no tensor-core GEMM.
        what = {"yes": "a tensor-core GEMM", "no": "a GEMM on CUDA cores (no tensor cores)"}.get(
            row.get("gemm_tensor_core") or "", "a GEMM")
        advice = (f"{what} trades occupancy for tile size and pipeline depth by "
                  "design (one or a few CTAs per SM): judge it by its rate"
                  + (f", {rate:.3g} TFLOP/s here" if rate == rate else ""))
    else:
        advice = ("fewer resident warps hide less memory latency: fewer registers per thread "
                  "(launch bounds, smaller tiles) or less shared memory (fewer stages) would "
                  "raise it")
    return Finding(
        Code.OCCUPANCY_LIMITED, Severity.INFO if gemm else Severity.NOTICE,
        f"{row['kernel'][:70]} takes {share:.0%} of the device time and its theoretical "
        f"occupancy is {row['theoretical_occupancy_pct']:.3g}%, limited by "
        f"{' and '.join(limits)} ({', '.join(details)}, {row['block']} threads per block): "
        f"{advice}",
        {"kernel_us": row["total_us_per_call"], "device_us": total, "share": share,
         "theoretical_occupancy_pct": row["theoretical_occupancy_pct"],
         "est_occupancy_pct": row.get("est_occupancy_pct", math.nan),
         "registers_per_thread": row["registers_per_thread"],
         "shared_mem_bytes": row["shared_mem_bytes"], "limit": row["occupancy_limit"],
         "gemm_tflops": rate})
