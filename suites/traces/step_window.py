"""A step's device window, and what the device did in it.

A step's device window runs from when the device could start the step's work to when both the
host and the device are done with it:

    start = the later of the step's host start and the end of the previous step's device work
            (never after the step's first activity starts)
    end   = the later of the step's host end and the end of the step's last activity

so consecutive windows never overlap. When the device runs behind the host, each window follows
the device through its step's work (busy throughout, not half idle because the host started the
step earlier); when the host is slow, the window is the host's span and the device's idle time in
it shows. For a suite call (a sync before it, its kernels launched inside it) the window is the
call's start to the end of its last kernel.

Inside a window every device activity of the trace counts (the device was busy, whoever launched
it), split as TraceLens splits a timeline: computation, exposed communication, exposed memcpy.
The idle rest is split by what was queued:

    host wait    nothing launched was waiting to run: the device waited for the host
    queued idle  an activity had been launched but had not started: the device waited on
                 something else (an event, another stream or device, work launched before the
                 trace began)

An activity counts as launched when its launch call (an asynchronous launch, op_kinds.LAUNCH_APIS)
returned and the trace's own launch latency passed (launch_latency: the median wait of launches
onto an idle device; the launch path's time, not a queue), or when it started if that was
earlier (the call's own time is host work, not a queue); any other call that starts device
work (a blocking copy such as hipMemcpyWithStream) launched it when the call began, and the
device idle before it was waiting on something else.
"""
from __future__ import annotations

import bisect
import statistics
from dataclasses import dataclass
from operator import attrgetter

from suites.traces.gpu_timeline import Coverage, device_unions, subtract, union, work_kind
from suites.traces.op_kinds import is_launch_api
from suites.traces.events import Event, starts as start_times

_START = attrgetter("ts")


@dataclass(frozen=True)
class DeviceWindow:
    start: float
    end: float
    computation_us: float
    exposed_comm_us: float
    exposed_memcpy_us: float
    busy_us: float
    host_wait_us: float
    queued_idle_us: float

    @property
    def window_us(self) -> float:
        return self.end - self.start


class DeviceCoverage:
    """The trace's device activities as unions, built once; `window` measures a step in them."""

    def __init__(self, activities: list[Event], launches: dict):
        """`launches`: correlation id -> the launch call (its first runtime or driver event)."""
        unions = device_unions(activities, work_kind)  # a collective by name is one
        self.computation = Coverage(unions.computation)
        self.exposed_comm = Coverage(unions.exposed_comm)
        self.exposed_memcpy = Coverage(unions.exposed_memcpy)
        self.busy = Coverage(unions.busy)
        self.launch_latency_us = launch_latency(activities, launches, self.busy)
        self.queued_idle = Coverage(subtract(
            union(_queued(activities, launches, self.launch_latency_us)), unions.busy))
        self.occupied = union(unions.busy + self.queued_idle.merged)  # busy or waiting on the queue
        self._occupied_starts = [start for start, _ in self.occupied]

    def host_wait(self, start: float, end: float) -> list[tuple[float, float]]:
        """The window's host wait as intervals: neither busy nor with work queued."""
        i = max(0, bisect.bisect_right(self._occupied_starts, start) - 1)
        out, cursor = [], start
        while i < len(self.occupied) and self.occupied[i][0] < end:
            lo, hi = self.occupied[i]
            if lo > cursor:
                out.append((cursor, lo))
            cursor = max(cursor, hi)
            i += 1
        if cursor < end:
            out.append((cursor, end))
        return out

    def window(self, start: float, end: float) -> DeviceWindow:
        busy = self.busy.within(start, end)
        queued = self.queued_idle.within(start, end)
        return DeviceWindow(start, end, self.computation.within(start, end),
                            self.exposed_comm.within(start, end),
                            self.exposed_memcpy.within(start, end), busy,
                            max(0.0, (end - start) - busy - queued), queued)


# Launch latency is read from the trace only with this many launches onto an idle device.
MIN_LATENCY_SAMPLES = 5


def launch_latency(activities: list[Event], launches: dict, busy: Coverage) -> float:
    """The trace's own launch-to-start latency, us: the median wait of activities that nothing
    else can have held: launched by an asynchronous call that returned while the device was
    idle, and the next activity of the device to start (none queued before it; of a graph
    launch only its first). 1-3 us on an H100 or B200, 14-24 us from hipLaunchKernel's return
    on an MI300. 0 with fewer than MIN_LATENCY_SAMPLES."""
    in_order = sorted(activities, key=_START)
    starts = start_times(in_order)
    waits, seen = [], set()
    for a in in_order:
        call = launches.get(a.corr) if a.corr is not None else None
        if call is None or a.corr in seen or not is_launch_api(call.name):
            continue
        seen.add(a.corr)
        returned = call.ts + call.dur
        if returned > a.ts or busy.covers(returned):
            continue
        i = bisect.bisect_right(starts, returned)
        if i == len(starts) or starts[i] >= a.ts:  # nothing started in between
            waits.append(a.ts - returned)
    return statistics.median(waits) if len(waits) >= MIN_LATENCY_SAMPLES else 0.0


def _queued(activities: list[Event], launches: dict,
            latency: float = 0.0) -> list[tuple[float, float]]:
    """Each activity's wait in the queue: from when it was launched (module docstring), plus
    the trace's launch latency (the launch path's, not a wait on anything), to its start."""
    queued = []
    for a in activities:
        call = launches.get(a.corr) if a.corr is not None else None
        if call is not None:
            if is_launch_api(call.name):
                launched = min(call.end + latency, a.ts)
            else:
                launched = call.ts
            if launched < a.ts:
                queued.append((launched, a.ts))
    return queued


def window_bounds(host_start: float, host_end: float, own: list[Event],
                  previous_device_end: float,
                  previous_window_end: float = float("-inf")) -> tuple[float, float]:
    """The step's device window (module docstring) from its host span, its own activities and
    where the previous step's device work and window ended. Never before the previous window's
    end: an activity placed in this step by its time (no launch in the trace) may start while
    the previous step's work still runs, and two windows must not count one stretch twice."""
    start = max(host_start, previous_device_end)
    end = host_end
    if own:
        start = min(start, min(a.ts for a in own))
        end = max(end, max(a.end for a in own))
    start = max(start, previous_window_end)
    end = max(end, start)
    return min(start, end), end
