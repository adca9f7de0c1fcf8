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
returned, or when it started if that was earlier (the call's own time is host work, not a
queue); any other call that starts device work (a blocking copy such as hipMemcpyWithStream)
launched it when the call began, and the device idle before it was waiting on something else.
"""
from __future__ import annotations

from dataclasses import dataclass

from suites.traces.gpu_timeline import Coverage, device_unions, subtract, union
from suites.traces.op_kinds import is_launch_api
from suites.traces.events import Event


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
        unions = device_unions(activities)
        self.computation = Coverage(unions.computation)
        self.exposed_comm = Coverage(unions.exposed_comm)
        self.exposed_memcpy = Coverage(unions.exposed_memcpy)
        self.busy = Coverage(unions.busy)
        self.queued_idle = Coverage(subtract(union(_queued(activities, launches)), unions.busy))

    def window(self, start: float, end: float) -> DeviceWindow:
        busy = self.busy.within(start, end)
        queued = self.queued_idle.within(start, end)
        return DeviceWindow(start, end, self.computation.within(start, end),
                            self.exposed_comm.within(start, end),
                            self.exposed_memcpy.within(start, end), busy,
                            max(0.0, (end - start) - busy - queued), queued)


def _queued(activities: list[Event], launches: dict) -> list[tuple[float, float]]:
    """Each activity's wait in the queue: from when it was launched (module docstring) to its
    start."""
    queued = []
    for a in activities:
        call = launches.get(a.corr) if a.corr is not None else None
        if call is not None:
            launched = min(call.end, a.ts) if is_launch_api(call.name) else call.ts
            if launched < a.ts:
                queued.append((launched, a.ts))
    return queued


def window_bounds(host_start: float, host_end: float, own: list[Event],
                  previous_device_end: float) -> tuple[float, float]:
    """The step's device window (module docstring) from its host span, its own activities and
    where the previous step's device work ended."""
    start = max(host_start, previous_device_end)
    end = host_end
    if own:
        start = min(start, min(a.ts for a in own))
        end = max(end, max(a.end for a in own))
    return min(start, end), end
