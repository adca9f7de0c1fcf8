"""The GPU timeline of a trace as TraceLens defines it (and HTA nearly so): computation, exposed
communication, exposed memcpy, busy, idle and total time, over the device activities.

Which activities count: kernels, memcpys and memsets that are linked to a launch on the host,
i.e. whose correlation id matches a runtime or driver event of the trace (an activity with no
launch, e.g. one launched before the profiler started, is counted apart and reported, never
dropped silently). Each counted activity is communication (a collective library's kernel:
NCCL, RCCL), memcpy (a memcpy activity, ROCm's copy kernels, MTIA's dma) or computation
(everything else, memsets and fill kernels included). Each kind's intervals are merged into a
union, then

    computation     = |computation|
    exposed comm    = |communication - computation|
    exposed memcpy  = |memcpy - computation - communication|
    busy            = |all|
    total           = end of the last counted activity - start of the first
    idle            = total - busy

so computation + exposed comm + exposed memcpy + idle = total.

The same rules per step, over the activities launched inside the step (matched by correlation
id, as the per-step metrics are): a step's total runs from the start of the first of them to
the end of the last, wherever the host was meanwhile. That is TraceLens's span of the activities,
not the step's window (StepMetrics.window_us, step_window.py), which holds the host's part of the
step too. And per stream, over the linked activities on that stream (the trace's device `tid`).
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from operator import itemgetter, sub

from suites.traces.events import Event, Trace

COMM = re.compile(r"nccl|rccl", re.IGNORECASE)
# Collectives by name that TraceLens's rule (NCCL or RCCL in the name) counts as computation:
# symmetric-memory all-reduce (multimem_all_reduce_kernel), vLLM's custom and quick all-reduce,
# TensorRT-LLM's all-reduce, all-gather, reduce-scatter and all-to-all kernels. Not in the
# timeline (it keeps TraceLens's numbers); said beside it, and counted in the share of work in
# collectives.
NAMED_COLLECTIVE = re.compile(r"all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|multimem|"
                              r"cross_device_reduce|quick_?reduce", re.IGNORECASE)


def collective_name(name: str) -> bool:
    """A collective's kernel by its name, TraceLens's rule or NAMED_COLLECTIVE."""
    return bool(COMM.search(name) or NAMED_COLLECTIVE.search(name))


def named_collective(event: Event) -> bool:
    """A kernel that is a collective by its name, which TraceLens's rule does not count so
    (asked of every kernel of a trace: by the cached kinds, not a regular expression each)."""
    return work_kind(event) == "communication" and kind(event) != "communication"
ROCM_COPY = re.compile(r"^(MEMORY_COPY|__amd_rocclr_copyBuffer)")
# MTIA's device activities: its copies are its DMA transfers (named dma..., as HTA groups them).
MTIA = "mtia_ccp_events"
COMM_CATS = frozenset({"kernel", MTIA})
FIELDS = ("computation_us", "exposed_comm_us", "exposed_memcpy_us", "busy_us", "idle_us",
          "total_us")

Intervals = list[tuple[float, float]]
_START, _END = itemgetter(0), itemgetter(1)


def kind(event: Event) -> str:
    """communication, memcpy or computation, by TraceLens's rules (names repeat: cached)."""
    key = (event.cat, event.name)
    found = _KINDS.get(key)
    if found is None:
        if (event.cat == "gpu_memcpy" or ROCM_COPY.match(event.name)
                or (event.cat == MTIA and event.name.startswith("dma"))):
            found = "memcpy"
        elif event.cat in COMM_CATS and COMM.search(event.name):
            found = "communication"
        else:
            found = "computation"
        _KINDS[key] = found
    return found


_KINDS: dict[tuple[str, str], str] = {}


def work_kind(event: Event) -> str:
    """kind(), but a collective by its name (NAMED_COLLECTIVE) is communication: what the
    verdicts weigh (steps' windows), where the timeline keeps TraceLens's rule."""
    key = (event.cat, event.name)
    found = _WORK_KINDS.get(key)
    if found is None:
        by_name = (event.cat in COMM_CATS and not COMM.search(event.name)
                   and NAMED_COLLECTIVE.search(event.name))
        found = _WORK_KINDS[key] = "communication" if by_name else kind(event)
    return found


_WORK_KINDS: dict[tuple[str, str], str] = {}


def union(intervals: Intervals) -> Intervals:
    """Sorted, merged, non-overlapping."""
    merged: Intervals = []
    for interval in sorted(intervals, key=_START):  # ties in any order merge alike
        start, end = interval
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append(interval)  # shared, not copied: a trace's unions hold millions
    return merged


def length(intervals: Intervals) -> float:
    return sum(map(sub, map(_END, intervals), map(_START, intervals)))  # at C speed


def subtract(a: Intervals, b: Intervals) -> Intervals:
    """a minus b, both merged unions."""
    out: Intervals = []
    j, n = 0, len(b)
    for interval in a:
        start, end = interval
        if j < n and b[j][1] <= start:  # skip b's intervals that end before this one starts
            j += 1
            if j < n and b[j][1] <= start:  # many: a step's few copies against its kernels
                j = bisect.bisect_right(b, start, j, n, key=_END)
        k, cursor = j, start
        while k < n:
            b_start, b_end = b[k]
            if b_start >= end:
                break
            if b_start > cursor:
                out.append((cursor, b_start))
            if b_end > cursor:  # max(), written out: this loop runs millions of times
                cursor = b_end
            k += 1
        if cursor < end:  # the interval itself where nothing of b lies in it (shared)
            out.append(interval if cursor == start else (cursor, end))
    return out


class Coverage:
    """A merged union of intervals, asked how much of it lies inside a window."""

    def __init__(self, merged: Intervals):
        self.merged = merged
        self.starts = [start for start, _ in merged]

    def covers(self, t: float) -> bool:
        """Whether instant t lies inside the union (ends excluded)."""
        i = bisect.bisect_right(self.starts, t) - 1
        return i >= 0 and self.merged[i][0] < t < self.merged[i][1]

    def within(self, lo: float, hi: float) -> float:
        total, merged = 0.0, self.merged
        i = max(0, bisect.bisect_right(self.starts, lo) - 1)
        n = len(merged)
        while i < n:
            start, end = merged[i]
            if start >= hi:
                break
            # max(0, min(end, hi) - max(start, lo)), written out (millions of intervals)
            inside = (end if end < hi else hi) - (start if start > lo else lo)
            if inside > 0.0:
                total += inside
            i += 1
        return total


@dataclass(frozen=True)
class Timeline:
    computation_us: float
    exposed_comm_us: float
    exposed_memcpy_us: float
    busy_us: float
    idle_us: float
    total_us: float
    total_comm_us: float
    total_memcpy_us: float
    counted: int    # activities linked to a launch
    unlinked: int   # activities with no launch event: not in this timeline

    def percent(self, name: str) -> float:
        return 100.0 * getattr(self, name) / self.total_us if self.total_us else float("nan")

    def row(self, scope: str) -> dict:
        return {"scope": scope, **{f: getattr(self, f) for f in FIELDS},
                "activities": self.counted, "unlinked_activities": self.unlinked}


def linked(trace: Trace) -> tuple[list[Event], int]:
    """The device activities with a launch event on the host, and how many have none."""
    launches = {e.corr for e in trace.runtime if e.corr is not None}
    counted = [e for e in trace.device if e.corr is not None and e.corr in launches]
    return counted, len(trace.device) - len(counted)


@dataclass(frozen=True)
class DeviceUnions:
    """Activities split by kind, each kind merged into a union, and the exposed parts (module
    docstring): what a timeline measures, whole (timeline) or window by window
    (step_window.DeviceCoverage)."""

    computation: Intervals
    communication: Intervals
    memcpy: Intervals
    exposed_comm: Intervals  # communication - computation
    exposed_memcpy: Intervals  # memcpy - computation - communication
    busy: Intervals  # all of them


def _unions_by_kind(activities: list[Event], classify=kind) -> dict[str, Intervals] | None:
    """kind -> the union of its activities, merged as they come: activities in order of start
    (a trace's lists and a step's kernels are) need no interval per activity, nor a sort of
    them (for a whole trace of 1.6M kernels, 130 MB and a second). None where they are not in
    that order."""
    by_kind: dict[str, Intervals] = {"computation": [], "communication": [], "memcpy": []}
    kinds, previous = (_WORK_KINDS if classify is work_kind else _KINDS), float("-inf")
    for e in activities:
        start = e.ts
        if start < previous:
            return None
        previous = start
        end = start + e.dur
        found = kinds.get((e.cat, e.name))
        merged = by_kind[found if found is not None else classify(e)]
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return by_kind


def device_unions(activities: list[Event], classify=kind) -> DeviceUnions:
    """The activities' unions by kind (`classify`: kind, TraceLens's rule, or work_kind)."""
    by_kind = _unions_by_kind(activities, classify)
    if by_kind is None:
        by_kind = {"computation": [], "communication": [], "memcpy": []}
        for e in activities:
            by_kind[classify(e)].append((e.ts, e.ts + e.dur))
        by_kind = {k: union(intervals) for k, intervals in by_kind.items()}
    comp, comm, copy = (by_kind[k] for k in ("computation", "communication", "memcpy"))
    return DeviceUnions(comp, comm, copy, subtract(comm, comp),
                        subtract(subtract(copy, comp), comm), union(comp + comm + copy))


def timeline(activities: list[Event], unlinked: int = 0) -> Timeline:
    u = device_unions(activities)
    busy = length(u.busy)
    total = u.busy[-1][1] - u.busy[0][0] if u.busy else 0.0
    return Timeline(length(u.computation), length(u.exposed_comm), length(u.exposed_memcpy),
                    busy, total - busy, total, length(u.communication), length(u.memcpy),
                    len(activities), unlinked)


def trace_timeline(trace: Trace) -> Timeline:
    """The whole trace's timeline over the activities linked to a launch."""
    counted, unlinked = linked(trace)
    return timeline(counted, unlinked)


def by_device(activities: list[Event]) -> dict:
    """device -> its activities, in device order. A device activity's `pid` is its device: one
    process that drives several GPUs (a model split over them) writes each one's apart."""
    devices: dict = {}
    for e in activities:
        devices.setdefault(e.pid, []).append(e)
    return dict(sorted(devices.items(), key=lambda item: str(item[0])))


def stream_timelines(trace: Trace, counted: list[Event] | None = None) -> dict:
    """scope -> its timeline, over the linked activities on each stream (`counted`:
    linked(trace)'s, where the caller has them), in stream order: "stream 7", or "device 1
    stream 7" where the trace holds several devices (their stream ids repeat)."""
    if counted is None:
        counted, _ = linked(trace)
    devices = by_device(counted)
    scopes: dict = {}
    for device, events in devices.items():
        streams: dict = {}
        for e in events:
            streams.setdefault(e.tid, []).append(e)
        prefix = f"device {device} " if len(devices) > 1 else ""
        for stream, mine in sorted(streams.items(), key=lambda item: str(item[0])):
            scopes[f"{prefix}stream {stream}"] = timeline(mine)
    return scopes


def device_timelines(counted: list[Event]) -> dict:
    """"device N" -> its timeline, where the activities run on several devices; else {}."""
    devices = by_device(counted)
    if len(devices) < 2:
        return {}
    return {f"device {device}": timeline(events) for device, events in devices.items()}
