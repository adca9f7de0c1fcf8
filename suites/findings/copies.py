"""Copies the user did not write: a device-to-device memcpy on a GPU (the series saw one before
the GEMM under torch.compile), an aten::copy_ on a CPU, where the baseline had none."""
from __future__ import annotations

from suites.findings.codes import Code, Severity
from suites.findings.core import Finding, FindingContext
from suites.profiling.device_time import kernel_us


def _gpu_dtod(profile) -> tuple[float, float, float]:
    """Copies, bytes and microseconds per call of device-to-device memcpy activities."""
    count = nbytes = us = 0.0
    for step in profile.steps:
        for k in step.kernels:
            if k.cat == "gpu_memcpy" and "DtoD" in k.name:
                count, nbytes, us = count + 1, nbytes + (k.nbytes or 0), us + kernel_us(k, True)
    n = max(1, len(profile.steps))
    return count / n, nbytes / n, us / n


def _cpu_copies(profile) -> tuple[float, float, str]:
    count = us = 0.0
    parents = set()
    for step in profile.steps:
        for k in step.kernels:
            if k.name == "aten::copy_":
                count, us = count + 1, us + kernel_us(k, False)
                parents.add(k.op or "the call")
    n = max(1, len(profile.steps))
    return count / n, us / n, ", ".join(sorted(parents))


def hidden_copy(ctx: FindingContext):
    if ctx.profile is None:
        return
    if ctx.on_gpu:
        count, nbytes, us = _gpu_dtod(ctx.profile)
        base = _gpu_dtod(ctx.baseline_profile)[0] if ctx.baseline_profile else 0.0
        if count > base:
            yield Finding(Code.HIDDEN_COPY, Severity.NOTICE,
                          f"a device-to-device copy the code does not write: {count:g} per call, "
                          f"{nbytes / 1e6:.3g} MB, {us:.1f} us", {"copies_per_call": count,
                          "bytes_per_call": nbytes, "copy_us": us, "baseline_copies": base})
        return
    if ctx.baseline_profile is None:
        return  # on a CPU every dtype cast and clone is a copy_: only a change says anything
    count, us, parents = _cpu_copies(ctx.profile)
    base = _cpu_copies(ctx.baseline_profile)[0]
    if count > base:
        why = (": addmm first fills its output with the broadcast bias, then accumulates the "
               "GEMM onto it (the CPU's form of the series' hidden device-to-device copy)"
               if "aten::addmm" in parents else "")
        yield Finding(Code.HIDDEN_COPY, Severity.INFO if why else Severity.NOTICE,
                      f"a copy the code does not write: aten::copy_ inside {parents}, "
                      f"{count:g} per call, {us:.1f} us{why}",
                      {"copies_per_call": count, "copy_us": us, "baseline_copies": base})
