"""Copies. Against a baseline, a copy the code does not write: a device-to-device memcpy on a
GPU (the series saw one before the GEMM under torch.compile), an aten::copy_ on a CPU, where the
baseline had none. With no baseline (anyone's trace) a copy is not "hidden": every clone, DDP
bucket copy and gradient accumulation makes one. There the finding says what the copies are
(direction, pageable host memory) and which ops they come from, once they are a notable share
of the device's busy time."""
from __future__ import annotations

import re
from collections import Counter, defaultdict

from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, FindingContext
from suites.traces.steps import WHOLE_TRACE
from suites.traces.device_time import kernel_us

NOTABLE_SHARE = 0.1  # of the device's busy time
_DIRECTION = re.compile(r"\b(HtoD|DtoH|DtoD|HtoH|PtoP)\b")
SHOWN = 3


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
    if ctx.baseline_profile is None:
        if ctx.on_gpu:
            yield from _copies_by_origin(ctx.profile)
        return  # on a CPU every dtype cast and clone is a copy_: only a change says anything
    if ctx.on_gpu:
        count, nbytes, us = _gpu_dtod(ctx.profile)
        base = _gpu_dtod(ctx.baseline_profile)[0]
        if count > base:
            yield Finding(Code.HIDDEN_COPY, Severity.NOTICE,
                          f"a device-to-device copy the code does not write: {count:g} per call, "
                          f"{nbytes / 1e6:.3g} MB, {us:.1f} us", {"copies_per_call": count,
                          "bytes_per_call": nbytes, "copy_us": us, "baseline_copies": base})
        return
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


PIN = ("pinned memory (DataLoader(pin_memory=True), then .to(device, non_blocking=True)) lets "
       "it run asynchronously")


def _pinning(steps) -> str:
    """Pinning pays for copies made every step (a batch), not for one made once (a model's
    weights moved to the device): which, where the trace can tell."""
    with_copies = sum(any("Pageable" in k.name for k in s.kernels) for s in steps)
    if len(steps) == 1 and steps[0].name == WHOLE_TRACE:
        return ("one copy of a model's weights to the device (model.to) is set-up; a copy made "
                f"each step (a batch) is not: for that, {PIN}")
    if with_copies * 2 <= len(steps):
        return (f"copies in {with_copies} of {len(steps)} steps are not the steady state "
                f"(set-up?); where they recur, {PIN}")
    return PIN


UPLOAD_MIN_COPIES = 4  # a model's tensors: more than a batch's input and labels


def _before_any_kernel(profile) -> bool:
    """Whether every copy of the steps ran before the trace's first kernel, and they are many:
    host-to-device copies of what a model is made of, before it computes anything (AlexNet's 16
    copies are its 8 weights and 8 biases). A step's batch (an input and its labels) is a copy
    or two before the first kernel too: not these."""
    device = profile.analysis.trace.device
    first_kernel = next((a.ts for a in device if a.cat == "kernel"), None)
    copies = [k for s in profile.steps for k in s.kernels if k.cat == "gpu_memcpy"]
    return (first_kernel is not None and len(copies) >= UPLOAD_MIN_COPIES
            and all(k.end <= first_kernel and "HtoD" in k.name for k in copies))


def _copies_by_origin(profile):
    copies_us = busy_us = 0.0
    kinds: Counter = Counter()
    origins: dict[str, float] = defaultdict(float)
    origin_of = profile.analysis.copy_origins  # steps.copy_origin
    for step in profile.steps:
        if step.window is not None:
            busy_us += step.window.busy_us
        for k in step.kernels:
            if k.cat != "gpu_memcpy":
                continue
            copies_us += k.dur
            direction = _DIRECTION.search(k.name)
            kind = direction.group(1) if direction else "copy"
            kinds[kind + (" pageable" if "Pageable" in k.name else "")] += k.dur
            origins[origin_of.get(k.corr, "no copy call (launch not in the trace)")] += k.dur
    if busy_us <= 0 or copies_us < NOTABLE_SHARE * busy_us:
        return
    top = sorted(origins.items(), key=lambda kv: -kv[1])[:SHOWN]
    pageable = sum(us for kind, us in kinds.items() if "pageable" in kind)
    advice = (f"; {pageable / copies_us:.0%} of it from pageable host memory: "
              f"{_pinning(profile.steps)}" if pageable > 0.5 * copies_us else "")
    upload = _before_any_kernel(profile)
    if upload:
        advice = ("; all of it before the first kernel ran: the model moving to the device "
                  "(model.to), one-time set-up, nothing to tune")
    yield Finding(Code.COPIES, Severity.INFO if upload else Severity.NOTICE,
                  f"memory copies take {copies_us / busy_us:.0%} of the device's busy time "
                  f"({', '.join(f'{kind} {us / 1e3:.3g} ms' for kind, us in kinds.most_common())})"
                  f", from {', '.join(f'{name} ({us / 1e3:.3g} ms)' for name, us in top)}{advice}",
                  {"copy_us": copies_us, "busy_us": busy_us, "pageable_us": pageable})
