"""Findings about time across steps: cold starts, gaps before the first op, kernels whose time
varies, and whether the GPU queue stays full (the host ahead)."""
from __future__ import annotations

import statistics
from collections import defaultdict

from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.bounds import profile_bound
from suites.traces.findings.row_bound import row_paced_by_host
from suites.traces.findings.core import Finding, FindingContext
from suites.traces.findings.step_bound import DEVICE, duration, unrecorded_us
from suites.traces.device_time import kernel_us
from suites.traces.steps import split_first_op_gap

COLD_FACTOR = 2.0  # first step this many times the median of the rest
GAP_US, GAP_SHARE = 100.0, 0.25  # record_function start -> first op
VARIANCE_CV, VARIANCE_MIN_US = 0.5, 5.0
VARIANCE_SHARE = 0.01  # of a step: a kernel under it varies unseen in the step's time
FULL_DELAY_US = 50.0
QUEUE_FULL_MAX_HOST_WAIT = 0.2  # of the window: more, and the queue was not full throughout


def cold_start(ctx: FindingContext):
    steps = ctx.profile.steps if ctx.profile else []
    if len(steps) < 3:
        return
    first, rest = steps[0].window_us, statistics.median(s.window_us for s in steps[1:])
    if rest > 0 and first > COLD_FACTOR * rest:
        yield Finding(Code.COLD_START, Severity.NOTICE,
                      f"cold start: the first step ({steps[0].name}) takes {first:.0f} us, "
                      f"{first / rest:.1f}x the median of the others ({rest:.0f} us): warm up "
                      "before timing, and leave it out of averages",
                      {"first_step_us": first, "median_other_us": rest})


# How each part of the gap before a step's first op reads (host_wait.ORDER's causes; "launch"
# there is whatever no range or call covers: Python or a compile, here).
_GAP_PARTS = {"sync": "waiting for the device", "initialisation": "one-time set-up",
              "allocation": "memory allocation",
              "CPU collectives": "collectives on the host", "data loading": "data loading",
              "host code": "the program's own code", "launch": "Python or compiling"}
GAP_PART_SHOWN = 0.05  # of the gap: smaller parts are left out of the statement
OVERLAPPED_SHARE = 0.5  # of a sync before the first op: the device this busy, the wait overlaps


def late_first_op(ctx: FindingContext):
    """A long gap between a record_function range opening and its first op: Python work, a
    compile, a lock, or a sync (the host waiting for the device before the step's first op:
    named with its calls, never called Python)."""
    for step in ctx.profile.steps if ctx.profile else []:
        gap = step.first_op_gap_us
        if gap == gap and gap > GAP_US and gap > GAP_SHARE * step.host_us:
            parts, names = split_first_op_gap(ctx.profile.analysis, step)
            parts = parts or {"launch": gap}
            shown = sorted((p for p in parts.items() if p[1] >= GAP_PART_SHOWN * gap),
                           key=lambda p: p[1], reverse=True) or [("launch", gap)]
            lead = shown[0][0]
            said = "; ".join(_gap_part(names, name, us) for name, us in shown)
            advice = ("the host waited for the device before the step's first op (a "
                      "synchronize at the top of the step keeps host and device from "
                      "overlapping)" if lead == "sync" else
                      f"time spent in {_GAP_PARTS[lead]}, not in ops")
            busy = step.first_op_gap_busy_us
            # A wait while the device runs earlier work costs the step little: said, not a
            # notice (the Qwen traces' 14 ms sync overlaps the previous step's kernels).
            overlapped = lead == "sync" and busy >= OVERLAPPED_SHARE * parts["sync"]
            if overlapped:
                advice = (f"the device was busy {duration(busy)} of the gap, running "
                          + ("work launched before the trace" if step.pre_trace_us > 0 else
                             "earlier work")
                          + ": the wait overlapped device work and costs the step little")
            yield Finding(Code.LATE_FIRST_OP, Severity.INFO if overlapped else Severity.NOTICE,
                          f"{duration(gap)} pass between the start of {step.name}'s range and its "
                          f"first op ({gap / step.host_us:.0%} of the range): {said}: {advice}",
                          {"gap_us": gap, "range_us": step.host_us, "step": step.name,
                           "parts_us": dict(parts)})
            return  # once per profile is enough to point at it


def _gap_part(names_of: dict, name: str, us: float) -> str:
    names = names_of.get(name) or []
    shown = f" ({', '.join(names[:2])}{' and more' if len(names) > 2 else ''})" if names else ""
    return f"{_GAP_PARTS[name]} {duration(us)}{shown}"


def kernel_variance(ctx: FindingContext):
    """One finding per profile: the kernels whose time per step varies, of those that take at
    least VARIANCE_SHARE of a step (a 10 us kernel's jitter in a 100 ms step is noise, not a
    finding), the one with the most time at stake said, the rest counted."""
    steps = ctx.profile.steps if ctx.profile else []
    if len(steps) < 3:
        return
    per_step: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(steps))
    for i, step in enumerate(steps):
        for k in step.kernels:
            per_step[k.name][i] += kernel_us(k, ctx.on_gpu)
    step_us = statistics.fmean(s.window_us for s in steps)
    varying = []
    for name, times in per_step.items():
        mean = statistics.fmean(times)
        if mean < VARIANCE_MIN_US or min(times) == 0 or mean < VARIANCE_SHARE * step_us:
            continue
        cv = statistics.pstdev(times) / mean
        if cv > VARIANCE_CV:
            varying.append((max(times) - min(times), name, times, cv))
    if not varying:
        return
    varying.sort(key=lambda v: -v[0])
    _, name, times, cv = varying[0]
    more = f"; {len(varying) - 1} more kernel(s) vary as much" if len(varying) > 1 else ""
    yield Finding(Code.KERNEL_VARIANCE, Severity.WARNING,
                  f"{_short(name)} varies across steps: {min(times):.1f} to {max(times):.1f} "
                  f"us (CV {cv:.0%}); clocks, contention or data-dependent work{more}",
                  {"kernel": _short(name), "cv": cv, "min_us": min(times),
                   "max_us": max(times), "kernels": len(varying)})


def gpu_queue(ctx: FindingContext):
    """What the launch delays say, where it agrees with the primary bound: a full queue only
    on a device-bound step (a queue full of work the device cannot start, e.g. behind a
    blocking copy, is the bound's business, not this). An empty queue is the overhead-bound
    verdict's own evidence, said in it (bounds.queue_runs_empty)."""
    found = profile_bound(ctx)
    if not ctx.on_gpu or found is None or row_paced_by_host(ctx):  # a row: its one bound
        return
    delays = [d for s in ctx.profile.steps for d in s.launch_delays_us]
    if len(delays) < 1:
        return
    median = statistics.median(delays)
    busy = 1.0 - ctx.metric("idle_frac")
    evidence = {"median_launch_delay_us": median, "busy_frac": busy}
    # "The queue stays full" only where the device did not also wait long for the host, nor
    # sit before the trace's first recorded activity, where a delay holds what it did unseen.
    host_wait = found.bound.parts.get("host wait", 0.0)
    if median >= FULL_DELAY_US and found.bound.side == DEVICE and (
            found.bound.code != Code.DEVICE_WAIT) and (
            host_wait < QUEUE_FULL_MAX_HOST_WAIT * found.bound.window_us) and not any(
            unrecorded_us(s) > 0 for s in ctx.profile.steps):
        yield Finding(Code.QUEUE_FULL, Severity.INFO,
                      f"the GPU queue stays full: kernels wait a median {median:.0f} us after "
                      "their launch returns; the host runs ahead, launch overhead is hidden",
                      evidence)


def _short(name: str, limit: int = 60) -> str:
    return name if len(name) <= limit else name[: limit - 3] + "..."
