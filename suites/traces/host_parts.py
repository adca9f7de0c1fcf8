"""Where a step's host time goes besides launching: one-time set-up, data loading and
collectives run by the host (blocking calls are measured with the launches, steps.py).

One-time set-up is a runtime call of at least INIT_MIN_US that is either a set-up call
(op_kinds.SETUP_APIS: context creation, device queries, module loading) or far longer than the
same call's steady state (INIT_FACTOR x the median of its at least 3 calls in the trace: the
first cudaLaunchKernel that loads the module, 4.3 s where the rest take 15 us), and not long in
most steps (then it is the steady state: set_recurring). Synchronize calls and copies are never
set-up: a long one waits for the device. Nested calls (a runtime call and its driver call)
count once.
"""
from __future__ import annotations

import bisect
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from suites.traces.gpu_timeline import length, union
from suites.traces.op_kinds import (STEP_PREFIX, is_alloc_api, is_copy_api, is_cpu_collective,
                                    is_data_loading, is_launch_api, is_setup_api, is_sync_api)
from suites.traces.events import Event, Trace

INIT_MIN_US = 1000.0
INIT_FACTOR = 50.0
MIN_CALLS_FOR_STEADY_STATE = 3


@dataclass
class HostParts:
    init_us: float = 0.0
    data_us: float = 0.0
    collective_us: float = 0.0
    init_calls: list[Event] = field(default_factory=list)


class HostClassifier:
    """Knows each runtime call's steady state in this trace, and the host's special ranges."""

    def __init__(self, trace: Trace):
        durations: dict[str, list[float]] = defaultdict(list)
        for call in trace.runtime:
            durations[call.name].append(call.dur)
        self.steady = {name: statistics.median(d) for name, d in durations.items()
                       if len(d) >= MIN_CALLS_FOR_STEADY_STATE}
        ranges = trace.annotations + trace.cpu_ops
        self.data = _Ranges([e for e in ranges if is_data_loading(e.name)])
        self.collectives = _Ranges([e for e in ranges if is_cpu_collective(e.name)])
        self.code = _Ranges(_host_code(trace))
        self.recurring: set[str] = set()  # long in most steps: steady state (set_recurring)
        # cudaFree(0) creates the context, and cudaHostAlloc a pinned pool, before the first
        # launch; after it, an allocation call is the allocator at work (empty_cache, then
        # cudaMalloc again), set-up only where far longer than its steady state (a 5 s cudaFree
        # while cuDNN loads).
        self.first_launch = next((c.ts for c in trace.runtime if is_launch_api(c.name)),
                                 float("inf"))

    def set_recurring(self, steps_runtime: list[list[Event]]) -> None:
        """Calls that are long in most steps (at least 2, and half of them) are the steady
        state, not set-up: a launch that blocks on a full queue every step, a blocking submit,
        an allocation each step. `steps_runtime`: each step's runtime calls."""
        counts: dict[str, int] = defaultdict(int)
        for runtime in steps_runtime:
            for name in {c.name for c in runtime if c.dur >= INIT_MIN_US and self.is_init(c)}:
                counts[name] += 1
        need = max(2, (len(steps_runtime) + 1) // 2)
        self.recurring = {name for name, n in counts.items() if n >= need}

    def causes(self, step, lo: float, hi: float) -> dict[str, list[tuple[float, float]]]:
        """What the host did in [lo, hi] besides launching, as intervals (host_wait.py)."""
        return {"initialisation": [(c.ts, c.end) for c in step.host.init_calls],
                "sync": [(c.ts, c.end) for c in step.blocking_calls],
                "allocation": [(c.ts, c.end) for c in step.runtime if is_alloc_api(c.name)],
                "CPU collectives": self.collectives.intervals(lo, hi),
                "data loading": self.data.intervals(lo, hi),
                "host code": self.code.intervals(lo, hi)}

    def code_names(self, lo: float, hi: float) -> list[str]:
        """The host-code ranges' names in [lo, hi], longest first."""
        return names_by_time(self.code.inside(lo, hi), lo, hi)

    def is_init(self, call: Event) -> bool:
        if (call.dur < INIT_MIN_US or is_sync_api(call.name) or is_copy_api(call.name)
                or call.name in self.recurring):
            return False
        if is_setup_api(call.name) and not (is_alloc_api(call.name)
                                             and call.ts > self.first_launch):
            return True  # (an allocation after the first launch: set-up only if far longer)
        steady = self.steady.get(call.name)
        return steady is not None and call.dur >= INIT_FACTOR * max(steady, 1.0)

    def parts(self, runtime: list[Event], lo: float, hi: float) -> HostParts:
        """The set-up calls, data-loading ranges and host collectives inside [lo, hi]."""
        init = [call for call in runtime if call.dur >= INIT_MIN_US and self.is_init(call)]
        # A runtime call and the driver call under it are one wait: counted once.
        return HostParts(init_us=length(union([(c.ts, c.end) for c in init])),
                         data_us=self.data.covered(lo, hi),
                         collective_us=self.collectives.covered(lo, hi), init_calls=init)


def names_by_time(events, lo: float, hi: float) -> list[str]:
    """The names of `events` by their time inside [lo, hi], longest first (events outside it
    count nothing)."""
    time: dict[str, float] = defaultdict(float)
    for e in events:
        if e.ts < hi and e.end > lo:
            time[e.name] += min(e.end, hi) - max(e.ts, lo)
    return sorted(time, key=time.get, reverse=True)


class _Ranges:
    """Host ranges of one kind, sorted, so a step finds its own without a scan of them all."""

    def __init__(self, events: list[Event]):
        self.events = sorted(events, key=lambda e: e.ts)
        self.starts = [e.ts for e in self.events]
        self.longest = max((e.dur for e in self.events), default=0.0)
        # Their union, once: a step clips it. One range as long as the trace (a Python frame
        # of the whole program) would make every step scan every range (`inside`).
        self.merged = union([(e.ts, e.ts + e.dur) for e in self.events])
        self.merged_starts = [start for start, _ in self.merged]

    def inside(self, lo: float, hi: float) -> list[Event]:
        """The ranges that overlap [lo, hi]."""
        first = bisect.bisect_left(self.starts, lo - self.longest)
        last = bisect.bisect_left(self.starts, hi)
        return [e for e in self.events[first:last] if e.end > lo]

    def intervals(self, lo: float, hi: float) -> list[tuple[float, float]]:
        """Their union clipped to [lo, hi] (nested ones count once)."""
        merged, out = self.merged, []
        i = max(0, bisect.bisect_right(self.merged_starts, lo) - 1)
        while i < len(merged) and merged[i][0] < hi:
            start, end = merged[i]
            if end > lo:
                out.append((max(start, lo), min(end, hi)))
            i += 1
        return out

    def covered(self, lo: float, hi: float) -> float:
        """Time inside [lo, hi] covered by at least one range."""
        return length(self.intervals(lo, hi))


def _host_code(trace: Trace) -> list[Event]:
    """The program's own named ranges (record_function) that launch nothing on the device:
    host work of its own (preprocessing, tokenising), not the profiler's steps, a DataLoader
    or a collective, and not a range around a model's launches ("forward": its host time is
    launch and dispatch). Python frames (with_stack) count where they are long enough to be
    kept (events.PYTHON_RANGE_MIN_US). Only ranges on the threads that launch device work (where
    nothing is launched: that run ops, runtime calls or annotated ranges) count: another
    thread's frames (tqdm's monitor waiting, 50 ms, over the whole trace) are not what the
    program's own thread did while the device waited."""
    calls = [c for c in trace.runtime if is_launch_api(c.name)]
    launches = sorted(c.ts for c in calls)
    working = {(c.pid, c.tid) for c in calls} or {
        (e.pid, e.tid) for e in trace.cpu_ops + trace.runtime + trace.annotations}
    out = []
    for e in trace.annotations + trace.python_ranges:
        if (e.name.startswith(STEP_PREFIX) or is_data_loading(e.name)
                or is_cpu_collective(e.name) or e.dur <= 0
                or (working and (e.pid, e.tid) not in working)):
            continue
        i = bisect.bisect_left(launches, e.ts)
        if i < len(launches) and launches[i] < e.end:
            continue
        out.append(e)
    return out
