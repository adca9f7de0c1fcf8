"""Findings about which kernels ran: metadata-only ops, tensor cores left unused, the SDPA
backend, and Inductor's fused kernels."""
from __future__ import annotations

import re

from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.bounds import profile_bound
from suites.traces.findings.core import Finding, FindingContext
from suites.traces.findings.step_bound import DEVICE, duration
from suites.traces.op_kinds import FUSED_KERNEL, METADATA_OPS, SDPA_BACKEND_OPS

# cuBLAS/CUTLASS single-precision GEMMs run on CUDA cores, not tensor cores.
SGEMM = re.compile(r"sgemm|gemmSN_|gemv2T_kernel_val<int, int, float|cutlass.*simt_sgemm", re.I)
LOW_PRECISION = ("bfloat16", "float16")


def metadata_ops(ctx: FindingContext):
    if ctx.profile is None:
        return
    ops = ctx.profile.ops_per_call()
    meta = {name: n for name, n in ops.items() if name in METADATA_OPS}
    if not meta:
        return
    host, runtime, setup = _metadata_host_us(ctx.profile)
    if ctx.row is None and not _worth_saying(ctx, host):
        return
    inside = (f" ({duration(runtime)} of it in runtime calls they made, such as cudaMalloc)"
              if runtime >= 0.05 * host and runtime > 0 else "")
    left_out = (f" (the {duration(setup)} of one-time set-up calls made inside them, CUDA's lazy "
                "initialisation, are left out: that is not these ops' cost)" if setup > 0 else "")
    top = ", ".join(f"{name} x{n:g}" for name, n in sorted(meta.items(), key=lambda kv: -kv[1])[:4])
    yield Finding(Code.METADATA_OPS, Severity.INFO,
                  f"{sum(meta.values()):g} metadata-only ops per "
                  f"{'call' if ctx.row is not None else 'step'} ({top}) cost "
                  f"{duration(host)} of host time{inside} and no device time: views, transposes "
                  f"and allocations{left_out}",
                  {"ops_per_call": sum(meta.values()), "host_us": host, "runtime_us": runtime,
                   "setup_us_left_out": setup})


METADATA_SHARE = 0.02  # of a step: less host time than this in views is no finding


def _worth_saying(ctx: FindingContext, host_us: float) -> bool:
    """In a trace, metadata ops are worth a word where the host sets the step's time and they
    take a share of it (3 ms of views in a device-bound 49 ms step, or 30 ms in a 41 s one,
    are not)."""
    found = profile_bound(ctx)
    if found is None or found.bound.side == DEVICE:
        return False
    return host_us >= METADATA_SHARE * found.bound.window_us


def _metadata_host_us(profile) -> tuple[float, float, float]:
    """Self time of the metadata ops per call, the part of it spent in runtime calls (an
    allocation that reaches cudaMalloc), and the one-time set-up calls inside them, which are
    left out of both (a 30 s context creation is not the cost of aten::empty)."""
    host = runtime = setup = 0.0
    for step in profile.steps:
        init = {id(c) for c in step.host.init_calls}
        calls = [r for r in step.runtime if r.op in METADATA_OPS]
        once = sum(r.dur for r in calls if id(r) in init)
        host += sum(op.self_us for op in step.op_events if op.name in METADATA_OPS) - once
        runtime += sum(r.dur for r in calls if id(r) not in init)
        setup += once
    n = max(1, len(profile.steps))
    return max(0.0, host / n), runtime / n, setup / n


def tensor_cores_unused(ctx: FindingContext):
    if not ctx.on_gpu or ctx.dtype not in LOW_PRECISION:
        return
    rows = [k for k in ctx.profile.kernel_rows() if SGEMM.search(k["kernel"])]
    if rows:
        us = sum(k["total_us_per_call"] for k in rows)
        yield Finding(Code.TENSOR_CORES_UNUSED, Severity.WARNING,
                      f"single-precision GEMM kernels in a {ctx.dtype} run "
                      f"({rows[0]['kernel'][:50]}"
                      f"{', ...' if len(rows) > 1 else ''}, {us:.1f} us per call): that work "
                      "runs on CUDA cores, not tensor cores; look for a float32 upcast",
                      {"sgemm_kernels": len(rows), "sgemm_us": us})


def sdpa_backend(ctx: FindingContext):
    if ctx.profile is None:
        return
    ops = ctx.profile.ops_per_call()
    ran = [(SDPA_BACKEND_OPS[name], name) for name in ops if name in SDPA_BACKEND_OPS]
    for backend, name in sorted(set(ran)):
        yield Finding(Code.SDPA_BACKEND, Severity.INFO,
                      f"scaled_dot_product_attention ran the {backend} backend ({name})",
                      {"backend": backend})


def inductor_kernels(ctx: FindingContext):
    """Any trace: name the kernels Inductor generated and what each fuses (suite runs say the
    same against their baseline in kernels_fell / kernels_rose)."""
    if ctx.profile is None or ctx.baseline_row is not None:
        return
    names = sorted({k["kernel"] for k in ctx.profile.kernel_rows()
                    if FUSED_KERNEL.search(k["kernel"])})
    if names:
        yield Finding(Code.INDUCTOR_KERNELS, Severity.INFO,
                      f"Inductor-generated fused kernels: {', '.join(names[:5])}"
                      f"{' ...' if len(names) > 5 else ''}", {"fused_kernels": len(names)})
