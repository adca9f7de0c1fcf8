"""Per-step metrics from a trace.

A step is a `ProfilerStep#N` range (or the whole trace when there is none). On a GPU, device
activities (kernels, memcpy, memset) belong to the step whose launch call carries the same
correlation id, not to whatever step their GPU timestamp falls in: the queue runs behind the host.
On a CPU, the "kernels" are the compute ops (op_kinds.is_cpu_kernel) and device time is their
self time.
"""
from __future__ import annotations

import bisect
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from suites.profiling.device_time import kernel_us, on_gpu, trace_mode
from suites.profiling.op_kinds import is_copy_api, is_cpu_kernel, is_launch_api, is_sync_api
from suites.profiling.trace_events import Event, Trace, TraceFormatError

STEP_PREFIX = "ProfilerStep#"


@dataclass
class StepMetrics:
    name: str
    host_us: float  # span of the call's record_function range (or of the step)
    device_us: float  # GPU: union of device intervals; CPU: self time of compute ops
    n_kernels: int
    launch_api_us: float  # launch calls, copies that returned before their copy ran included
    launch_delays_us: list[float]
    n_cpu_ops: int
    wall_us: float  # from the call's start until its host code and device work are both done
    kernels: list[Event] = field(default_factory=list)
    op_events: list[Event] = field(default_factory=list)  # cpu ops inside the call range
    runtime: list[Event] = field(default_factory=list)  # runtime/driver calls in the call range
    first_op_gap_us: float = float("nan")  # call range start -> its first op
    blocking_us: float = 0.0  # synchronize calls, and copy calls that waited for their copy

    @property
    def ops(self) -> Counter:
        """cpu op name -> calls inside the call range."""
        return Counter(op.name for op in self.op_events)

    @property
    def busy_frac(self) -> float:
        return min(1.0, self.device_us / self.wall_us) if self.wall_us > 0 else float("nan")

    @property
    def launch_delay_us(self) -> float:
        return statistics.median(self.launch_delays_us) if self.launch_delays_us else float("nan")


@dataclass
class TraceAnalysis:
    trace: Trace
    mode: str  # cuda | cpu
    steps: list[StepMetrics]
    unattributed_device: int  # device activities whose launch is in no step


def nest_cpu_events(trace: Trace) -> None:
    """Set each cpu op's self time and each runtime call's enclosing op, per thread."""
    by_thread: dict = defaultdict(list)
    for event in trace.cpu_ops:
        event.self_us = event.dur  # analysing a trace twice must not subtract children twice
        by_thread[(event.pid, event.tid)].append(event)
    for event in trace.runtime:
        by_thread[(event.pid, event.tid)].append(event)
    for events in by_thread.values():
        events.sort(key=lambda e: (e.ts, -e.dur))
        stack: list[Event] = []
        for event in events:
            while stack and stack[-1].end <= event.ts:
                stack.pop()
            parent = stack[-1] if stack else None
            event.op = parent.name if parent else None
            if event.cat in ("cuda_runtime", "cuda_driver"):
                continue
            if parent is not None:
                parent.self_us -= event.dur
            stack.append(event)


def _window(events: list[Event], starts: list[float], lo: float, hi: float) -> list[Event]:
    return events[bisect.bisect_left(starts, lo):bisect.bisect_right(starts, hi)]


def find_steps(trace: Trace, pattern: str | None = None) -> list[Event]:
    """`ProfilerStep#N` ranges, or the annotations whose name matches `pattern` (a user's own
    step ranges), or else the whole trace as one step."""
    if pattern:
        regex = re.compile(pattern)
        steps = [a for a in trace.annotations + trace.cpu_ops if regex.search(a.name)]
        steps.sort(key=lambda e: e.ts)
    else:
        steps = [a for a in trace.annotations if a.name.startswith(STEP_PREFIX)]
    if steps:
        return steps
    everything = trace.cpu_ops + trace.annotations + trace.runtime + trace.device
    if not everything:
        raise TraceFormatError(f"{trace.path}: no cpu ops, annotations, runtime calls or device "
                               "activities: nothing to analyse")
    start = min(e.ts for e in everything)
    end = max(e.end for e in everything)
    return [Event("whole trace", "", start, end - start, None, None, None, None, None)]


def _clipped(event: Event, end: float | None) -> Event:
    """A range that runs past every other event of the trace (a ProfilerStep annotation whose
    end the profiler wrote late: 13 s in a 355 ms trace) ends where the trace's last other
    event does: nothing after it was recorded."""
    if end is None or event.end <= end or end <= event.ts:
        return event
    return Event(event.name, event.cat, event.ts, end - event.ts, event.pid, event.tid,
                 event.corr, event.ext, event.nbytes)


def _call_range(trace: Trace, starts, step: Event, label: str | None) -> Event:
    if label:
        for annotation in _window(trace.annotations, starts, step.ts, step.end):
            if annotation.name == label:
                return annotation
    return step


def analyze(trace: Trace, label: str | None = None, step_pattern: str | None = None) -> TraceAnalysis:
    """Metrics for every step; `label` names the record_function range around each call."""
    nest_cpu_events(trace)
    mode = trace_mode(trace)
    device_by_corr: dict = defaultdict(list)
    for activity in trace.device:
        if activity.corr is not None:  # no id: it cannot be matched to a launch
            device_by_corr[activity.corr].append(activity)
    starts = {name: [e.ts for e in getattr(trace, name)]
              for name in ("cpu_ops", "annotations", "runtime")}
    attributed = 0
    steps = []
    # Where the trace's events end, the step annotations themselves aside.
    others = trace.cpu_ops + trace.runtime + trace.device + [
        a for a in trace.annotations if not a.name.startswith(STEP_PREFIX)]
    trace_end = max((e.end for e in others), default=None)
    for step in find_steps(trace, step_pattern):
        call = _clipped(_call_range(trace, starts["annotations"], step, label), trace_end)
        # The call's own launches: a suite step also holds an L2 flush and syncs around it.
        ops = _window(trace.cpu_ops, starts["cpu_ops"], call.ts, call.end)
        runtime = _window(trace.runtime, starts["runtime"], call.ts, call.end)
        metrics = _step_metrics(step, call, ops, runtime, device_by_corr, mode)
        attributed += metrics.n_kernels if on_gpu(mode) else 0
        steps.append(metrics)
    unattributed = len(trace.device) - attributed if on_gpu(mode) else 0
    return TraceAnalysis(trace, mode, steps, max(0, unattributed))


def _union_us(events: list[Event]) -> float:
    """Time covered by at least one event. Adds durations, not end - start differences, so
    timestamps of 1e12 us do not round short kernels."""
    total, covered_until = 0.0, float("-inf")
    for event in sorted(events, key=lambda e: e.ts):
        if event.ts >= covered_until:
            total += event.dur
        elif event.end > covered_until:
            total += event.end - covered_until
        covered_until = max(covered_until, event.end)
    return total


def _device_work(runtime: list[Event], device_by_corr) -> tuple[list[Event], list[float]]:
    """The activities the runtime calls launched, and one launch delay per launch call: kernel
    start - (launch start + duration), clipped at 0 (HTA's definition). A graph launch starts
    many kernels under one id; only its first kernel's wait is a launch delay."""
    kernels, delays, seen = [], [], set()
    for launch in runtime:
        if launch.corr is None or launch.corr in seen:
            continue  # a runtime call and the driver call under it can share one id: once
        seen.add(launch.corr)
        launched = device_by_corr.get(launch.corr, ())
        kernels.extend(launched)
        if launched and is_launch_api(launch.name):
            delays.append(max(0.0, min(k.ts for k in launched) - launch.end))
    kernels.sort(key=lambda e: e.ts)
    return kernels, delays


def _launch_and_blocking(runtime: list[Event], device_by_corr) -> tuple[float, float]:
    """(launch us, blocking us) of a step's runtime calls. A synchronize call blocks; so does a
    copy call that returned only after its own copy had finished (a DtoH copy waits for the
    stream's earlier kernels: 146 ms of `cudaMemcpyAsync` for 704 bytes is waiting, not launch
    overhead). Each correlation id counts once (a runtime call and its driver call share one)."""
    launch = blocking = 0.0
    seen = set()
    for call in runtime:
        if call.corr is not None:
            if call.corr in seen:
                continue
            seen.add(call.corr)
        if is_sync_api(call.name):
            blocking += call.dur
            continue
        copies = device_by_corr.get(call.corr, ()) if call.corr is not None else ()
        waited = is_copy_api(call.name) and copies and max(a.end for a in copies) <= call.end
        if waited:
            blocking += call.dur
        elif is_launch_api(call.name):
            launch += call.dur
    return launch, blocking


def _step_metrics(step, call, ops, runtime, device_by_corr, mode) -> StepMetrics:
    delays: list[float] = []
    if on_gpu(mode):
        kernels, delays = _device_work(runtime, device_by_corr)
        device_us = _union_us(kernels)
        # From the call's start until both its host code and its device work are done.
        first_start = min([call.ts] + [k.ts for k in kernels])
        last_end = max([call.end] + [k.end for k in kernels])
    else:
        kernels = [op for op in ops if is_cpu_kernel(op)]
        device_us = sum(kernel_us(k, gpu=False) for k in kernels)
        first_start, last_end = call.ts, call.end
    launch_us, blocking_us = _launch_and_blocking(runtime, device_by_corr)
    return StepMetrics(
        name=step.name, host_us=call.dur, device_us=device_us, n_kernels=len(kernels),
        launch_api_us=launch_us, blocking_us=blocking_us,
        launch_delays_us=delays, n_cpu_ops=len(ops), wall_us=last_end - first_start,
        kernels=kernels, op_events=ops, runtime=runtime,
        first_op_gap_us=(ops[0].ts - call.ts) if ops else float("nan"),
    )
