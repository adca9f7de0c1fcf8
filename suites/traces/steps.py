"""Per-step metrics from a trace.

A step is a `ProfilerStep#N` range (or the whole trace when there is none; of nested ranges
that match a user's --steps pattern, the outermost). On a GPU, device activities (kernels,
memcpy, memset) belong to the step whose launch call carries the same correlation id, not to
whatever step their GPU timestamp falls in: the queue runs behind the host. An activity whose
launch is not in the trace belongs to the step whose host span holds its start (counted, and
said so). Each step's device window and what the device did in it: step_window.py. On a CPU, the
"kernels" are the compute ops (op_kinds.is_cpu_kernel) and device time is their self time.
"""
from __future__ import annotations

import bisect
import re
import statistics
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from operator import attrgetter

from suites.traces.before_trace import first_recorded_start, launched_before
from suites.traces.device_time import HOST_ONLY, kernel_us, on_gpu, trace_mode
from suites.traces.gpu_timeline import Coverage, union
from suites.traces.host_parts import HostClassifier, HostParts, names_by_time
from suites.traces.host_wait import split_host_wait
from suites.traces.nesting import by_thread
from suites.traces.op_kinds import (COPY_WRAPPERS, STEP_PREFIX, is_copy_api, is_cpu_kernel,
                                    is_launch_api, is_sync_api)
from suites.traces.profiler_artifacts import (Flush, buffer_requests, find_flush, idle_overlap,
                                              request_intervals)
from suites.traces.step_window import DeviceCoverage, DeviceWindow, window_bounds
from suites.traces.events import RUNTIME_CATS, Event, Trace, TraceFormatError
from suites.traces.events import ends as end_times

_START = attrgetter("ts")

WHOLE_TRACE = "whole trace"  # the one step of a trace without step ranges


@dataclass
class StepMetrics:
    """One step's figures. How long it took has two meanings, each defined once: `host_us`, the
    host's span of the call, and `window_us`, the window the step is judged in (on a GPU its
    device window, which also holds the device's part; on a CPU the host's span)."""

    name: str
    host_us: float  # the call's range (its record_function, or the step): its end - its start
    device_us: float  # GPU: union of device intervals; CPU: self time of compute ops
    n_kernels: int
    launch_api_us: float  # launch calls, copies that returned before their copy ran included
    # One per launch call: packed floats (8 bytes each, not a 32-byte object: a 1 GB trace has a
    # million launches)
    launch_delays_us: array
    n_cpu_ops: int
    kernels: list[Event] = field(default_factory=list)
    op_events: list[Event] = field(default_factory=list)  # cpu ops inside the call range
    runtime: list[Event] = field(default_factory=list)  # runtime/driver calls in the call range
    first_op_gap_us: float = float("nan")  # call range start -> its first op (split_first_op_gap)
    first_op_gap_busy_us: float = 0.0  # GPU: the device's busy time in that gap
    # GPU: the device's time in the step's window on work launched before the trace began
    # (TraceAnalysis.pre_trace_device): busy, but not this step's own work
    pre_trace_us: float = 0.0
    # GPU: the window's idle with work queued before the trace's first recorded device activity:
    # the device ran work the trace does not hold (launched before the profiler started) or
    # waited; which, the trace cannot tell (vLLM's decode trace: 8.3 ms before its first copy)
    unrecorded_us: float = 0.0
    blocking_us: float = 0.0  # synchronize calls, and copy calls that waited for their copy
    blocking_calls: list[Event] = field(default_factory=list)  # those calls
    window: DeviceWindow | None = None  # GPU: what the device did in the step's window
    host: HostParts = field(default_factory=HostParts)  # set-up, data loading, collectives
    unlinked: int = 0  # activities with no launch in the trace, attributed by time
    # The profiler's end-of-window sync, where the step's range holds it: left out of
    # blocking_us (profiler_artifacts.py), its time stated apart.
    flush: Event | None = None
    buffer_gaps: int = 0  # idle stretches of the device window overlapping a buffer request
    buffer_idle_us: float = 0.0  # the idle time they overlap
    call: Event | None = None  # the call's range (its record_function, or the step)
    # GPU: the window's host wait split by what the host did meanwhile (host_wait.py), and the
    # names of the program's own ranges in it (its "host code").
    host_wait_parts: dict = field(default_factory=dict)
    host_code_names: list[str] = field(default_factory=list)

    @property
    def flush_us(self) -> float:
        return self.flush.dur if self.flush is not None else 0.0

    @property
    def ops(self) -> Counter:
        """cpu op name -> calls inside the call range."""
        return Counter(op.name for op in self.op_events)

    @property
    def window_us(self) -> float:
        """The step's window: on a GPU its device window (step_window.py: from when the device
        could start the step's work until the host and the device are both done with it); on a
        CPU, or in a trace without the device's activities, the host's span (host_us)."""
        return self.window.window_us if self.window is not None else self.host_us

    @property
    def busy_frac(self) -> float:
        """GPU: the share of the step's device window in which the device was busy (every
        activity counts); CPU: the compute ops' self time over the step's span."""
        if self.window_us <= 0:
            return float("nan")
        busy = self.window.busy_us if self.window is not None else self.device_us
        # No device figure (a host-only trace): no share either; min() would make NaN 1.0.
        return min(1.0, busy / self.window_us) if busy == busy else float("nan")

    @property
    def launch_delay_us(self) -> float:
        return statistics.median(self.launch_delays_us) if self.launch_delays_us else float("nan")


@dataclass
class TraceAnalysis:
    trace: Trace
    mode: str  # cuda | cpu | host-only (device_time.trace_mode)
    steps: list[StepMetrics]
    unattributed_device: int  # device activities in no step: launched outside, or run outside
    unlinked_device: int = 0  # activities whose launch is not in the trace (kept, by time)
    copy_origins: dict = field(default_factory=dict)  # correlation id -> op a copy came from
    flush: Flush | None = None  # the profiler's end-of-window sync, in a step or not
    buffer_requests: list[Event] = field(default_factory=list)  # the profiler's (Kineto's)
    # Of those, the ones that started before the trace's first launch call: launched before the
    # profiler started, kept out of every step's own work (the first step would absorb them).
    pre_trace_device: int = 0
    # The processes (pids) whose step ranges the trace holds (without step ranges, those that
    # launch, or run ops): more than one is several ranks' traces merged into one file, whose
    # steps overlap and count each other's work.
    step_processes: tuple = ()
    # What each host range is (set-up, data loading, collectives, the program's own code): kept
    # for the findings that split a step's host time after the analysis (split_first_op_gap)
    classifier: HostClassifier | None = None


def nest_cpu_events(trace: Trace) -> dict:
    """Set each cpu op's self time and each cpu op's and runtime call's enclosing op, per thread
    (nesting.py's walk, written out: a callback per event was a tenth of a long trace's
    analysis). Returns correlation id -> the op a copy call came from (copy_origin)."""
    origins = {}
    runtime_cats = RUNTIME_CATS
    for events in by_thread(trace.cpu_ops, trace.runtime):
        ends: list[float] = []  # of the open ops, innermost last
        ops: list[Event] = []
        for event in events:
            start = event.ts
            while ends and ends[-1] <= start:
                ends.pop()
                ops.pop()
            parent = ops[-1] if ops else None
            event.op = parent.name if parent is not None else None
            if event.cat in runtime_cats:  # a leaf: never an op's parent, nor in its time
                if event.corr is not None and is_copy_api(event.name):
                    origins[event.corr] = copy_origin(ops)
                continue
            dur = event.dur
            event.self_us = dur  # analysing a trace twice must not subtract children twice
            if parent is not None:
                parent.self_us -= dur
            ends.append(start + dur)
            ops.append(event)
    return origins


def copy_origin(stack: list[Event]) -> str:
    """The innermost op of a copy call's stack that is more than a copy wrapper (aten::clone,
    AccumulateGrad, a DDP bucket's op), else the outermost wrapper (aten::to)."""
    for op in reversed(stack):
        if op.name not in COPY_WRAPPERS:
            return op.name
    return stack[0].name if stack else "no op (called from Python)"


def _window(events: list[Event], lo: float, hi: float) -> list[Event]:
    """The events (sorted by start) that start in [lo, hi]: found by their start times, read
    where needed (a list of a 1 GB trace's start times is 20 MB)."""
    return events[bisect.bisect_left(events, lo, key=_START):
                  bisect.bisect_right(events, hi, key=_START)]


def find_steps(trace: Trace, pattern: str | None = None) -> list[Event]:
    """`ProfilerStep#N` ranges, or the annotations whose name matches `pattern` (a user's own
    step ranges), or else the whole trace as one step."""
    if pattern:
        regex = re.compile(pattern)
        steps = [a for a in trace.annotations + trace.cpu_ops if regex.search(a.name)]
    else:
        steps = [a for a in trace.annotations if a.name.startswith(STEP_PREFIX)]
    if steps:
        return _outermost(steps)
    everything = trace.cpu_ops + trace.annotations + trace.runtime + trace.device
    if not everything:
        why = "; ".join(f"{n} {problem}" for problem, n in trace.skipped.items())
        raise TraceFormatError(f"{trace.path}: no cpu ops, annotations, runtime calls or device "
                               "activities: nothing to analyse"
                               + (f" (events left out: {why})" if why else "")
                               + _what_it_holds(trace.other_categories))
    start = min(e.ts for e in everything)
    end = max(e.end for e in everything)
    return [Event(WHOLE_TRACE, "", start, end - start, None, None, None, None, None)]


# What the complete events of a trace that gives nothing to analyse are, by their category:
# a trace from another profiler (JAX, TensorFlow and XLA write no `cat`) or one recorded with
# only Python frames is told apart from an empty one.
_FOREIGN = ("; written by another profiler than torch.profiler? (its traces give cpu ops a "
            "`cpu_op` category; JAX, TensorFlow and XLA write none)")


def _what_it_holds(categories: dict[str, int], shown: int = 5) -> str:
    if not categories:
        return ""
    ranked = sorted(categories.items(), key=lambda item: -item[1])
    held = ", ".join(f"{n} {repr(cat) if cat else 'without a category'}"
                     for cat, n in ranked[:shown])
    more = f" and {len(ranked) - shown} more categories" if len(ranked) > shown else ""
    return (f"; its complete events: {held}{more}"
            + (_FOREIGN if "" in categories else ""))


def _outermost(ranges: list[Event]) -> list[Event]:
    """Ranges in time order, without those nested in an earlier one: a pattern that matches a
    range and ranges inside it must not count their kernels twice."""
    kept: list[Event] = []
    for r in sorted(ranges, key=lambda e: (e.ts, -e.dur)):
        if kept and r.end <= kept[-1].end:
            continue
        kept.append(r)
    return kept


def _clipped(event: Event, end: float | None) -> Event:
    """A range that runs past every other event of the trace (a ProfilerStep annotation whose
    end the profiler wrote late: 13 s in a 355 ms trace) ends where the trace's last other
    event does: nothing after it was recorded."""
    if end is None or event.end <= end or end <= event.ts:
        return event
    return Event(event.name, event.cat, event.ts, end - event.ts, event.pid, event.tid,
                 event.corr, event.ext, event.nbytes)


def _closed(step: Event, trace_end: float | None) -> bool:
    """Whether the program closed the step range: the profiler's flush comes after such a step
    (profiler_artifacts.py). Not the whole trace (no steps), nor a step that runs past the
    trace's last event by more than its recorded part: the profiler stopped with it open and
    wrote its end late (13 s past a 1.5 ms step); a few us past is the step's own end."""
    if not step.cat:
        return False
    if trace_end is None or step.end <= trace_end:
        return True
    return step.end - trace_end <= trace_end - step.ts


def _call_range(trace: Trace, step: Event, label: str | None) -> Event:
    if label:
        for annotation in _window(trace.annotations, step.ts, step.end):
            if annotation.name == label:
                return annotation
    return step


def analyze(trace: Trace, label: str | None = None,
            step_pattern: str | None = None, device: str | None = None) -> TraceAnalysis:
    """Metrics for every step; `label` names the record_function range around each call.
    `device`: what the recorder knows ran the calls; "cpu" (a suite's CPU case, on a machine
    that may have a GPU whose properties Kineto writes anyway) reads a trace without device
    activities as the CPU's, whatever its ops' names suggest."""
    origins = nest_cpu_events(trace)
    mode = "cpu" if device == "cpu" and not trace.device else trace_mode(trace)
    gpu = on_gpu(mode)
    launches: dict = {}  # correlation id -> its first launch call (runtime before driver)
    for call in trace.runtime:
        if call.corr is not None and call.corr not in launches:
            launches[call.corr] = call
    # correlation id -> its activity, or the list of them (a graph launch's): a list for each
    # of a trace's million kernels was a tenth of a 1 GB trace's memory.
    device_by_corr: dict = {}
    unlinked = []
    for activity in trace.device:
        corr = activity.corr
        if corr is not None and corr in launches:
            earlier = device_by_corr.get(corr)
            if earlier is None:
                device_by_corr[corr] = activity
            elif type(earlier) is list:
                earlier.append(activity)
            else:
                device_by_corr[corr] = [earlier, activity]
        else:  # no launch to match: it belongs to the step it ran in (below)
            unlinked.append(activity)
    # Where the trace's events end, the step annotations themselves aside.
    ends = [max(end_times(events), default=None)
            for events in (trace.cpu_ops, trace.runtime, trace.device)]
    ends.append(max((e.end for e in trace.annotations if not e.name.startswith(STEP_PREFIX)),
                    default=None))
    trace_end = max((end for end in ends if end is not None), default=None)
    calls = [(step, _clipped(_call_range(trace, step, label), trace_end))
             for step in find_steps(trace, step_pattern)]
    pre_trace, placed = launched_before(unlinked, trace.runtime)
    by_time = _by_time(placed, [call for _, call in calls]) if gpu else {}
    coverage = DeviceCoverage(trace.device, launches) if gpu else None
    earlier = Coverage(union([(a.ts, a.end) for a in pre_trace])) if pre_trace else None
    first_recorded = first_recorded_start(trace)
    del launches  # 40 MB for a 1 GB trace, not needed by the steps below
    flush = find_flush(trace, [step for step, _ in calls if _closed(step, trace_end)])
    requests = buffer_requests(trace)
    request_union = request_intervals(requests)
    classifier = HostClassifier(trace)
    # The call's own launches: a suite step also holds an L2 flush and syncs around it.
    runtimes = [_window(trace.runtime, call.ts, call.end) for _, call in calls]
    classifier.set_recurring(runtimes)
    steps, device_end, window_end = [], float("-inf"), float("-inf")
    for i, (step, call) in enumerate(calls):
        ops = _window(trace.cpu_ops, call.ts, call.end)
        runtime = runtimes[i]
        host = classifier.parts(runtime, call.ts, call.end)
        metrics = _step_metrics(step, call, ops, runtime, device_by_corr, by_time.get(i, []),
                                mode, host, flush.call if flush is not None else None)
        if coverage is not None:
            lo, hi = window_bounds(call.ts, call.end, metrics.kernels, device_end, window_end)
            window_end = hi
            metrics.window = coverage.window(lo, hi)
            metrics.host_wait_parts = split_host_wait(
                coverage.host_wait(lo, hi), classifier.causes(metrics, lo, hi))
            if metrics.host_wait_parts.get("host code"):
                metrics.host_code_names = classifier.code_names(lo, hi)
            metrics.buffer_gaps, metrics.buffer_idle_us = idle_overlap(
                request_union, coverage.busy, lo, hi)
            if metrics.first_op_gap_us > 0:
                metrics.first_op_gap_busy_us = coverage.busy.within(
                    call.ts, call.ts + metrics.first_op_gap_us)
            if earlier is not None:
                metrics.pre_trace_us = earlier.within(lo, hi)
            if lo < first_recorded:
                metrics.unrecorded_us = coverage.queued_idle.within(lo, min(hi, first_recorded))
            device_end = max([device_end] + [k.end for k in metrics.kernels])
        steps.append(metrics)
    attributed = sum(s.n_kernels for s in steps) if gpu else 0
    processes = tuple(sorted({str(step.pid) for step, _ in calls if step.pid is not None}))
    if not processes:  # no step ranges: the whole trace is one step, over every process
        processes = _working_processes(trace)
    outside = len(trace.device) - attributed - len(pre_trace)  # pre_trace: said apart
    return TraceAnalysis(trace, mode, steps, max(0, outside) if gpu else 0,
                         len(unlinked) if gpu else 0, origins, flush, requests,
                         len(pre_trace) if gpu else 0, processes, classifier)


def split_first_op_gap(analysis: TraceAnalysis, step: StepMetrics) -> tuple[dict, dict]:
    """What the host did between the step's call start and its first op, as host_wait.py's
    causes ("launch" the rest: Python or a compile), and the names of the blocking calls and
    host-code ranges in it, longest first. A sync there is the host waiting for the device (a
    torch.cuda.synchronize() at the top of a step), not Python. The program's own ranges count
    where they run inside the call: not the call's range itself, nor one around the whole call.
    Asked for the step a finding names (80 us a step: 0.3 s of a 1 GB trace's, for every step)."""
    call, classifier = step.call, analysis.classifier
    if call is None or classifier is None or not step.op_events:
        return {}, {}
    lo, hi = call.ts, step.op_events[0].ts
    code = [e for e in classifier.code.inside(lo, hi)
            if e is not call and not (e.ts <= call.ts and e.end >= call.end)]
    causes = classifier.causes(step, lo, hi)
    causes["host code"] = [(max(e.ts, lo), min(e.end, hi)) for e in code]
    parts = split_host_wait([(lo, hi)], causes)
    return parts, {"sync": names_by_time(step.blocking_calls, lo, hi),
                   "host code": names_by_time(code, lo, hi)}


def _working_processes(trace: Trace) -> tuple:
    """The processes that launch device work (those that run ops, in a trace without
    launches): more than one, in a trace without step ranges, is several ranks' or workers'
    traces merged, whose one step counts all their work together."""
    launching = {str(c.pid) for c in trace.runtime if c.pid is not None and is_launch_api(c.name)}
    return tuple(sorted(launching or {str(op.pid) for op in trace.cpu_ops if op.pid is not None}))


def _by_time(activities: list[Event], calls: list[Event]) -> dict[int, list[Event]]:
    """step index -> the activities (with no launch in the trace) that started inside the step's
    host span; steps are in time order and never nested (find_steps)."""
    starts = [c.ts for c in calls]
    out: dict[int, list[Event]] = defaultdict(list)
    for a in activities:
        i = bisect.bisect_right(starts, a.ts) - 1
        if i >= 0 and a.ts < calls[i].end:
            out[i].append(a)
    return out


def _union_us(events: list[Event]) -> float:
    """Time covered by at least one event. Adds durations, not end - start differences, so
    timestamps of 1e12 us do not round short kernels."""
    total, covered_until = 0.0, float("-inf")
    for event in sorted(events, key=_START):
        start, dur = event.ts, event.dur
        if start >= covered_until:
            total += dur
            covered_until = start + dur
        elif start + dur > covered_until:
            total += start + dur - covered_until
            covered_until = start + dur
    return total


def _device_work(runtime: list[Event], device_by_corr) -> tuple[list[Event], array]:
    """The activities the runtime calls launched, and one launch delay per launch call: kernel
    start - (launch start + duration), clipped at 0 (HTA's definition). A graph launch starts
    many kernels under one id; only its first kernel's wait is a launch delay."""
    kernels, delays, seen = [], array("d"), set()
    for launch in runtime:
        if launch.corr is None or launch.corr in seen:
            continue  # a runtime call and the driver call under it can share one id: once
        seen.add(launch.corr)
        launched = device_by_corr.get(launch.corr)
        if launched is None:
            continue
        if type(launched) is list:
            kernels.extend(launched)
            first = min(k.ts for k in launched)
        else:
            kernels.append(launched)
            first = launched.ts
        if is_launch_api(launch.name):
            delay = first - (launch.ts + launch.dur)
            delays.append(delay if delay > 0.0 else 0.0)
    kernels.sort(key=_START)
    return kernels, delays


def _launched(device_by_corr: dict, corr) -> list[Event] | tuple:
    """The activities launched under correlation id `corr` (see analyze's device_by_corr)."""
    found = device_by_corr.get(corr) if corr is not None else None
    if found is None:
        return ()
    return found if type(found) is list else (found,)


def _launch_and_blocking(runtime: list[Event], device_by_corr, init: list[Event],
                         flush: Event | None = None) -> tuple[float, list[Event]]:
    """(launch us, the blocking calls) of a step's runtime calls. A synchronize call blocks; so
    does a copy call that returned only after its own copy had finished (a DtoH copy waits for the
    stream's earlier kernels: 146 ms of `cudaMemcpyAsync` for 704 bytes is waiting, not launch
    overhead). Each correlation id counts once (a runtime call and its driver call share one).
    One-time set-up calls (`init`, host_parts.py) are neither, nor is the profiler's flush
    (profiler_artifacts.py): the program did not ask for it."""
    launch, blocking = 0.0, []
    seen = set()
    setup = {id(call) for call in init}
    for call in runtime:
        if id(call) in setup or call is flush:
            continue
        if call.corr is not None:
            if call.corr in seen:
                continue
            seen.add(call.corr)
        if is_sync_api(call.name):
            blocking.append(call)
            continue
        waited = False
        if is_copy_api(call.name):
            copies = _launched(device_by_corr, call.corr)
            waited = bool(copies) and max(a.end for a in copies) <= call.end
        if waited:
            blocking.append(call)
        elif is_launch_api(call.name):
            launch += call.dur
    return launch, blocking


def _step_metrics(step, call, ops, runtime, device_by_corr, unlinked, mode,
                  host: HostParts, flush: Event | None = None) -> StepMetrics:
    delays = array("d")
    if on_gpu(mode):
        kernels, delays = _device_work(runtime, device_by_corr)
        if unlinked:
            kernels = sorted(kernels + unlinked, key=lambda e: e.ts)
        device_us = _union_us(kernels)
    elif mode == HOST_ONLY:  # the device's activities are not in the trace: nothing to count
        kernels, device_us = [], float("nan")
    else:
        kernels = [op for op in ops if is_cpu_kernel(op)]
        device_us = sum(kernel_us(k, gpu=False) for k in kernels)
    launch_us, blocking = _launch_and_blocking(runtime, device_by_corr, host.init_calls, flush)
    mine = flush is not None and any(c is flush for c in runtime)
    return StepMetrics(
        name=step.name, host_us=call.dur, device_us=device_us, n_kernels=len(kernels),
        launch_api_us=launch_us, blocking_us=sum(c.dur for c in blocking),
        blocking_calls=blocking,
        launch_delays_us=delays, n_cpu_ops=len(ops),
        kernels=kernels, op_events=ops, runtime=runtime,
        first_op_gap_us=(ops[0].ts - call.ts) if ops else float("nan"),
        host=host, unlinked=len(unlinked), flush=flush if mine else None,
        call=call,
    )
