"""What fused against the baseline: dispatcher-level fusion (aten::addmm), kernels per call, and
the fused kernels Inductor generated."""
from __future__ import annotations

from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, FindingContext
from suites.traces.op_kinds import FUSED_KERNEL, is_compute_op_name


def dispatcher_fusion(ctx: FindingContext):
    """The series' first lesson: does the variant run aten::addmm where eager ran mm then add?"""
    if ctx.is_baseline or ctx.baseline_profile is None or ctx.profile is None:
        return
    base, ops = ctx.baseline_profile.ops_per_call(), ctx.profile.ops_per_call()
    if "aten::mm" not in base or "aten::add" not in base:
        return
    evidence = {"addmm_per_call": ops.get("aten::addmm", 0.0),
                "mm_per_call": ops.get("aten::mm", 0.0), "baseline_mm_per_call": base["aten::mm"],
                "baseline_add_per_call": base["aten::add"]}
    if "aten::addmm" in ops and "aten::mm" not in ops:
        yield Finding(Code.DISPATCHER_FUSION, Severity.INFO,
                      "aten::addmm replaced aten::mm + aten::add (the bias add moved into the GEMM "
                      "call)", evidence)
    elif "aten::mm" in ops and _compute_ops(ctx.baseline_profile) == {"aten::mm", "aten::add"}:
        # Only where the baseline is exactly a matmul and an add: in a block the adds are
        # residuals, and an unfused mm there says nothing about a bias.
        yield Finding(Code.NO_DISPATCHER_FUSION, Severity.INFO,
                      "aten::mm still runs: the bias add was not folded into aten::addmm", evidence)


def _compute_ops(profile) -> set[str]:
    return {name for name in profile.ops_per_call() if is_compute_op_name(name)}


def kernels_per_call(ctx: FindingContext):
    if ctx.is_baseline or ctx.baseline_row is None:
        return
    before, after = ctx.baseline_value("n_kernels"), ctx.metric("n_kernels")
    if before != before or after != after or before == after:
        return
    fell = after < before
    direction = "fell" if fell else "rose"
    fused = sorted({k["kernel"] for k in ctx.profile.kernel_rows()
                    if FUSED_KERNEL.search(k["kernel"])})
    detail = f"; fused kernels: {', '.join(fused)}" if fused else ""
    yield Finding(Code.KERNELS_FELL if fell else Code.KERNELS_ROSE,
                  Severity.INFO if fell else Severity.NOTICE,
                  f"kernels per call {direction} from {before:g} to {after:g} against the "
                  f"baseline{detail}", {"baseline_kernels": before, "kernels": after})


MEMORY_SAVING = 0.25  # a fused variant's peak this much under the baseline's is a finding


def memory_saved(ctx: FindingContext):
    """The series' point about intermediates fusion never writes (the eager MLP's gelu(g), naive
    attention's scores): the call's peak allocation against the baseline's, with what the op's
    byte model says the unfused form writes and reads back beyond the fused one."""
    if ctx.is_baseline or ctx.baseline_row is None:
        return
    before, after = ctx.baseline_value("peak_mem_mb"), ctx.value("peak_mem_mb")
    if not (before == before and after == after and before > 0 and after > 0) or after > before * (
            1 - MEMORY_SAVING):
        return
    evidence = {"peak_mem_mb": after, "baseline_peak_mem_mb": before}
    model = ""
    unfused, moved = ctx.value("bytes_unfused"), ctx.value("bytes_moved")
    if unfused == unfused and moved == moved and unfused > moved:
        evidence["model_extra_mb"] = (unfused - moved) / 2 ** 20
        model = (f"; by the op's byte model the unfused form moves {evidence['model_extra_mb']:.3g}"
                 " MiB more per call")
    yield Finding(Code.MEMORY_SAVED, Severity.INFO,
                  f"peak memory {after:.3g} MiB against the baseline's {before:.3g} MiB "
                  f"({1 - after / before:.0%} less): intermediates the fused form never "
                  f"holds{model}", evidence)
