"""What stands out beside a trace's primary bound (bounds.py): one kernel taking most of the
device time, communication's share of the work, a device-bound step that still idles, and
one-time set-up that is not the primary bound."""
from __future__ import annotations

from suites.traces.findings.bounds import host_paced, profile_bound
from suites.traces.findings.row_bound import row_paced_by_host
from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, FindingContext
from suites.traces.findings.step_bound import DEVICE, duration, unrecorded_us
from suites.traces.device_time import kernel_us
from suites.traces.gpu_timeline import collective_name, kind, named_collective

DOMINANT_SHARE = 0.5  # one kernel's share of the device time
COMM_SHARE = 0.2  # communication's share of the busy time
IDLE_SHARE = 0.2  # idle share of a device-bound step's window worth a note


def dominant_kernel(ctx: FindingContext):
    """A trace's own kernels (not a suite row's: there one kernel is often the whole op)."""
    if ctx.profile is None or ctx.row is not None or not ctx.on_gpu:
        return
    rows = ctx.profile.kernel_rows()
    total = sum(r["total_us_per_call"] for r in rows)
    kernels = [r for r in rows if r["kind"] == "kernel"]  # copies: the copies finding
    if len(rows) > 1 and total > 0 and kernels and (
            kernels[0]["total_us_per_call"] > DOMINANT_SHARE * total):
        top = kernels[0]
        if collective_name(top["kernel"]):  # a collective's time is the transfer and the wait
            advice = ("a collective: its time is the communication and any wait for the other "
                      "ranks, not a kernel to tune")
        else:
            advice = host_paced(ctx) or "the place to optimise first"
        yield Finding(Code.DOMINANT_KERNEL, Severity.INFO,
                      f"one kernel takes {top['total_us_per_call'] / total:.0%} of the device "
                      f"time: {top['kernel'][:80]} ({top['calls_per_call']:g} per step, "
                      f"{top['mean_us']:.1f} us each): {advice}",
                      {"kernel_us": top["total_us_per_call"], "device_us": total})


def comm_share(ctx: FindingContext):
    found = profile_bound(ctx)
    if found is None or not ctx.on_gpu or found.bound.code == Code.COMM_BOUND:
        return
    comm = busy = named = 0.0
    for step in ctx.profile.steps:
        if step.window is not None:
            busy += step.window.busy_us
            comm += sum(kernel_us(k, True) for k in step.kernels if kind(k) == "communication")
            named += sum(kernel_us(k, True) for k in step.kernels if named_collective(k))
    if busy > 0 and comm + named > COMM_SHARE * busy:
        by_name = (f" ({duration(named)} of it in kernels that are collectives by their name, "
                   "which the GPU timeline counts as computation)" if named > 0 else "")
        yield Finding(Code.COMM_SHARE, Severity.NOTICE,
                      f"communication kernels run {duration(comm + named)} against "
                      f"{duration(busy)} of busy device time ({(comm + named) / busy:.0%}, "
                      f"overlapped or not){by_name}: collectives are a large part of the work",
                      {"comm_us": comm + named, "busy_us": busy, "named_collectives_us": named})


def idle_gaps(ctx: FindingContext):
    """A device-bound step can still idle: say how much, on what, and the longest gap."""
    found = profile_bound(ctx)
    # (a step bound on its queued idle says so in its verdict: no second statement of it)
    if (found is None or not ctx.on_gpu or found.bound.side != DEVICE
            or found.bound.code == Code.DEVICE_WAIT or row_paced_by_host(ctx)):
        return
    w = found.step.window
    # Idle during the profiler's buffer requests is the profiler's (profiler_buffer_gaps).
    profiler = found.step.buffer_idle_us
    # Before the trace's first recorded activity the device may not have idled (the verdict
    # says so): not an idle gap.
    unrecorded = unrecorded_us(found.step)
    idle = w.host_wait_us + w.queued_idle_us - profiler - unrecorded
    if idle < IDLE_SHARE * w.window_us:
        return
    requests = [(r.ts, r.end) for r in ctx.profile.analysis.buffer_requests]
    gap, at = _longest_gap(found.step.kernels, w.start, w.end, requests)
    where = (f"; the longest idle stretch is {duration(gap)}, {duration(at - w.start)} into the "
             "window" if gap > 0 else "")
    left_out = (f", less {duration(profiler)} during the profiler's buffer requests"
                if profiler > 0 else "")
    evidence = {"host_wait_us": w.host_wait_us, "queued_idle_us": w.queued_idle_us,
                "longest_gap_us": gap, "gap_start_us": at}
    if profiler > 0:
        evidence["buffer_request_idle_us"] = profiler
    yield Finding(Code.IDLE_GAPS, Severity.NOTICE,
                  f"the device idles {idle / w.window_us:.0%} of {found.step.name}'s window "
                  f"({duration(w.host_wait_us)} waiting for the host, "
                  f"{duration(w.queued_idle_us - unrecorded)} with work queued{left_out}){where}",
                  evidence)


def _longest_gap(activities, start: float, end: float, skip=()) -> tuple[float, float]:
    """(length, start) of the longest stretch of the window [start, end] in which none of the
    step's activities runs; a stretch that overlaps an interval of `skip` (the profiler's
    buffer requests) is not the program's and not counted."""
    best, at, covered = 0.0, start, start
    for a in sorted(activities, key=lambda a: a.ts):
        if a.ts - covered > best and not _overlaps(covered, a.ts, skip):
            best, at = a.ts - covered, covered
        covered = max(covered, a.end)
    if end - covered > best and not _overlaps(covered, end, skip):
        best, at = end - covered, covered
    return best, at


def _overlaps(lo: float, hi: float, intervals) -> bool:
    return any(a < hi and b > lo for a, b in intervals)


def one_time_setup(ctx: FindingContext):
    """Set-up calls that are not the primary bound still cost their time once."""
    found = profile_bound(ctx)
    if ctx.profile is None or (found is not None and found.bound.code == Code.INIT_BOUND):
        return
    calls = [c for s in ctx.profile.steps for c in s.host.init_calls]
    if calls:
        top = max(calls, key=lambda c: c.dur)
        total = sum(c.dur for c in calls)
        yield Finding(Code.ONE_TIME_SETUP, Severity.NOTICE,
                      f"one-time set-up: {len(calls)} runtime calls take {duration(total)} "
                      f"(longest {top.name}, {duration(top.dur)}): initialisation, not the steady "
                      "state; leave it out of per-step figures", {"setup_us": total})
