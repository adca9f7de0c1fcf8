"""What a compute-bound GPU step computes: GEMMs, attention, or the many small kernels around
them (elementwise ops, casts, copies, concatenation, normalisation). The Qwen traces are
compute-bound at 92% busy, yet 63% of the H100's device time is in the latter: unfused eager
ops, bound by memory, not by the GEMMs a "compute-bound" reader would look at first. Fusing
them (torch.compile) is then the lever; said where they take most of the device's time.
"""
from __future__ import annotations

import re

from suites.traces.findings.bounds import profile_bound
from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, FindingContext
from suites.traces.device_time import on_rocm
from suites.traces.gpu_timeline import collective_name
from suites.traces.occupancy import is_attention
from suites.traces.op_kinds import FUSED_KERNEL
from suites.traces.short_names import short_names

# Layout conversions around a library's kernels (MIOpen's batched_transpose between NCHW and the
# NHWC convolutions it runs): no fusion removes them, a memory format the library wants does.
LAYOUT = re.compile(r"batched_transpose|nchw_?to_?nhwc|nhwc_?to_?nchw|nchw2nhwc|nhwc2nchw",
                    re.IGNORECASE)
# A convolution library's own steps around its kernels (MIOpen's zero-fill and cast after a
# split-K convolution): part of the library's work, which no fusion of the program's ops reaches.
LIBRARY_HELPER = re.compile(r"^SubTensorOp", re.IGNORECASE)
LAYOUT_SHOWN = 0.05  # of the device time: said from here
OTHER_SHARE = 0.4  # of the device time: the small kernels say more than the GEMMs from here
SHOWN = 2  # of the largest small kernels, named
TABLE_ROWS = 10  # the console's kernel table (--top's default): its names are reused


def kernel_class(row: dict) -> str:
    """A kernels.csv row's class: gemm, attention, communication, copy (copies and memsets),
    or other (elementwise, reductions, normalisation, layout changes)."""
    if row["kind"] != "kernel":
        return "copy"
    name = str(row["kernel"])
    if collective_name(name):
        return "communication"
    if row.get("gemm_library"):
        return "gemm"
    if is_attention(name):
        return "attention"
    if LAYOUT.search(name):
        return "layout"
    if LIBRARY_HELPER.search(name):
        return "library helpers"
    return "other"


def kernel_mix(ctx: FindingContext):
    found = profile_bound(ctx)
    if (ctx.row is not None or not ctx.on_gpu or found is None
            or found.bound.code != Code.COMPUTE_BOUND):
        return
    rows = ctx.profile.kernel_rows()
    total = sum(r["total_us_per_call"] for r in rows)
    if total <= 0:
        return
    shares: dict[str, float] = {}
    for r in rows:
        cls = kernel_class(r)
        shares[cls] = shares.get(cls, 0.0) + r["total_us_per_call"] / total
    other = shares.get("other", 0.0)
    if other < OTHER_SHARE:
        return
    small = [r for r in rows if kernel_class(r) == "other"]  # kernel_rows: largest first
    # named as the kernel table names them (short_names over the same rows)
    table = dict(zip((id(r) for r in rows[:TABLE_ROWS]),
                     short_names([str(r["kernel"]) for r in rows[:TABLE_ROWS]])))
    names = [table.get(id(r)) or short_names([str(r["kernel"])])[0] for r in small[:SHOWN]]
    largest = ", ".join(f"{name} {r['total_us_per_call'] / total:.0%}"
                        for name, r in zip(names, small))
    fused = sum(r["total_us_per_call"] for r in small if FUSED_KERNEL.search(str(r["kernel"])))
    already = (f"; {fused / total:.0%} of the device time is in kernels Inductor already fused"
               if fused > 0 else "")
    rest = ", ".join(f"{cls} {shares[cls]:.0%}" for cls in ("gemm", "attention", "communication",
                                                           "copy", "library helpers")
                     if shares.get(cls, 0) >= 0.01)
    layout = shares.get("layout", 0.0)
    rocm = on_rocm(ctx.profile.analysis.trace)
    conversions = (f". Another {layout:.0%} is layout conversions (batched_transpose...), which "
                   "no fusion removes: the channels_last memory format "
                   "(model.to(memory_format=torch.channels_last)) would remove them, the "
                   "library then running its NHWC kernels as they are"
                   + (" (on ROCm, with PYTORCH_MIOPEN_SUGGEST_NHWC=1, and "
                      "PYTORCH_MIOPEN_SUGGEST_NHWC_BATCHNORM=1 for batch norm)" if rocm else "")
                   if layout >= LAYOUT_SHOWN else "")
    yield Finding(Code.KERNEL_MIX, Severity.NOTICE,
                  f"{other:.0%} of the device's time is in kernels that are neither GEMMs nor "
                  f"attention (elementwise ops, casts, copies, concatenation, normalisation: "
                  f"bound by memory, one op each; the largest: {largest}){already}; "
                  f"{rest.replace('gemm', 'GEMMs')}: fusing those ops (torch.compile) is the "
                  f"larger lever, they take more of the step than the GEMMs do{conversions}",
                  {"other_share": other, **{f"{cls}_share": v for cls, v in shares.items()}})
