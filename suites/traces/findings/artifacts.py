"""Findings about what the profiler itself put in a trace (suites/traces/profiler_artifacts.py):
its flush at the end of the active window, and the device's idle time while it requested record
buffers. Neither is the program's cost. Many profiled steps tell them apart from the program's
own (profile=many: 20 active steps): the flush comes once, after the last step, and a buffer
request's gap lies in a few steps, where a sync or a gap of the program's recurs in every step.
"""
from __future__ import annotations

import statistics

from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, FindingContext
from suites.traces.findings.step_bound import duration
from suites.traces.profiler_artifacts import BY_FRAME, DEVICE_SYNCS
from suites.traces.steps import WHOLE_TRACE

MANY_STEPS = 10  # profiled steps enough to tell a once-only artifact from a per-step cost
MANY_PRESET = ("recording 20 active steps or more (torch.profiler's schedule active=20; "
               "fusebench: profile=many)")
# A flush outside every step changes no figure: named only when a reader of the trace sees it.
FLUSH_NOTE_US, FLUSH_SHARE = 50.0, 0.02  # and its share of the median step window
FLUSH_IN_STEP_SHARE = 0.05  # of the step that holds it: shorter, leaving it out changes little
BUFFER_GAP_SHARE = 0.05  # of the steps with gaps: under it, information
SIMILAR = 0.5  # a step's own sync at least this share of the flush's time is like it
SHOWN_STEPS = 4


def profiler_flush(ctx: FindingContext):
    flush = ctx.profile.analysis.flush if ctx.profile is not None else None
    if flush is None:
        return
    steps = ctx.profile.steps
    holder = next((s for s in steps if s.flush is flush.call), None)
    windows = [s.window_us for s in steps if s.window_us > 0]
    median = statistics.median(windows) if windows else 0.0
    if holder is None and (flush.us < FLUSH_NOTE_US or flush.us < FLUSH_SHARE * median):
        return
    if holder is not None and flush.us < FLUSH_IN_STEP_SHARE * holder.window_us:
        return  # left out of a step it is too short to change (18 us of a 41 s trace)
    call = flush.call
    told = ("found in its stop_trace frame" if flush.how == BY_FRAME else
            "found by its place: the trace's last device sync, nothing after it on its thread")
    if holder is not None:
        scope = "the trace (it has no steps)" if holder.name == WHOLE_TRACE else holder.name
        where = f"at the end of {scope}"
        counted = (f"left out of the step's blocking time and verdict (blocking "
                   f"{duration(holder.blocking_us)} without it)")
    else:
        where, counted = "after the last step", "it is in no step's figures"
    similar = sum(any(c.name in DEVICE_SYNCS and c.op is None and c is not call
                      and c.dur >= SIMILAR * flush.us for c in s.runtime) for s in steps)
    if len(steps) >= MANY_STEPS:
        confirm = (f"over {len(steps)} profiled steps it comes once, at the end, and no step "
                   "syncs as long" if similar == 0 else
                   f"but {similar} of the {len(steps)} steps sync as long themselves: those "
                   "waits are the program's")
    elif flush.how == BY_FRAME:
        confirm = ""  # its stop_trace frame says what it is
    else:
        confirm = (f"{MANY_PRESET} would confirm it: the flush comes once, at the end; a sync "
                   "of the program's recurs in every step")
    # A notice only where a step held it and it is long enough to change how that step reads;
    # after the last step it is in no step's figures: information.
    worth = (holder is not None and flush.us >= FLUSH_NOTE_US
             and flush.us >= FLUSH_SHARE * median)
    yield Finding(Code.PROFILER_FLUSH, Severity.NOTICE if worth else Severity.INFO,
                  f"the profiler's flush, not your cost: the {duration(flush.us)} {call.name} "
                  f"{where} is torch.profiler draining the device as it stops recording "
                  f"({told}); {counted}" + (f". {confirm[0].upper() + confirm[1:]}"
                                            if confirm else ""),
                  {"flush_us": flush.us, "step": holder.name if holder else "after the last",
                   "told_by": "frame" if flush.how == BY_FRAME else "place",
                   "steps": len(steps), "steps_syncing_as_long": similar})


def buffer_request_gaps(ctx: FindingContext):
    if ctx.profile is None or not ctx.on_gpu:
        return
    steps = ctx.profile.steps
    hit = [s for s in steps if s.buffer_gaps]
    if not hit:
        return
    gaps = sum(s.buffer_gaps for s in hit)
    idle = sum(s.buffer_idle_us for s in hit)
    requests = ctx.profile.analysis.buffer_requests
    names = ", ".join(s.name for s in hit[:SHOWN_STEPS]) + (", ..." if len(hit) > SHOWN_STEPS
                                                             else "")
    if len(steps) >= MANY_STEPS:
        confirm = (f"only {len(hit)} of the {len(steps)} profiled steps "
                   f"{'has' if len(hit) == 1 else 'have'} one ({names}), "
                   "where a gap of the program's own would recur in every step"
                   if len(hit) < len(steps) else
                   f"all {len(steps)} steps have one: the buffers fill every step (many "
                   "activities per step); the time is still the profiler's")
    else:
        confirm = (f"{MANY_PRESET} would show whether it recurs: a buffer request's gap lies "
                   "in a few steps, a gap of the program's own in every step")
    one = gaps == 1
    # a notice where the gaps are a share of the steps' time worth a look; else information
    windows = sum(s.window_us for s in hit)
    worth = windows > 0 and idle >= BUFFER_GAP_SHARE * windows
    yield Finding(Code.PROFILER_BUFFER_GAPS, Severity.NOTICE if worth else Severity.INFO,
                  f"profiler artifact: {gaps} idle stretch{'' if one else 'es'} of the device "
                  f"({duration(idle)}) overlap{'s' if one else ''} the profiler's "
                  f"{len(requests)} Activity Buffer Request{'' if len(requests) == 1 else 's'} "
                  f"({duration(sum(r.dur for r in requests))}): the host waited while CUPTI "
                  "allocated buffers for its records, not for your code; left out of the idle "
                  f"gaps. {confirm[0].upper() + confirm[1:]}",
                  {"gaps": gaps, "idle_us": idle, "requests": len(requests),
                   "request_us": sum(r.dur for r in requests), "steps_with_gaps": len(hit),
                   "steps": len(steps)})
