"""What the profiler itself puts in a trace, told apart from the program's own time.

The flush. torch.profiler synchronizes the device when it stops recording (stop_trace calls
torch/autograd/profiler.py's __exit__, which calls torch.cuda.synchronize), so the host waits
there for everything still queued: a long cudaDeviceSynchronize (hipDeviceSynchronize on ROCm)
at the end of the active window that no line of the program issued. It is told

    by its frame    a device sync inside the profiler's own stop_trace frame (the trace was
                    recorded with_stack): certain;
    by its place    else, the last device sync of the trace, called from no op, with nothing
                    after it on its thread, that no closed step holds: the profiler closes its
                    last ProfilerStep before it stops, so only a trace without steps, or a step
                    whose end was written late (clipped to the trace), holds the flush.

Buffer requests. Kineto records an `Activity Buffer Request` (category `overhead`) when CUPTI
asks for a new buffer for its activity records; the thread that asked waits meanwhile, so the
device can run dry. The idle stretches of a step's device window that overlap one are the
profiler's, not the program's: the first buffer is requested as recording starts, later ones
when a buffer fills, so a program's own gap recurs in every step and a buffer request's does not.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from operator import attrgetter

from suites.traces.gpu_timeline import Coverage, Intervals, subtract, union
from suites.traces.events import Event, Trace

_START = attrgetter("ts")

DEVICE_SYNCS = frozenset({"cudaDeviceSynchronize", "hipDeviceSynchronize"})
BUFFER_REQUEST = "Activity Buffer Request"
BY_FRAME = "inside the profiler's stop_trace"
BY_PLACE = "the trace's last device sync, after every call of its thread"


@dataclass(frozen=True)
class Flush:
    call: Event  # the sync call
    how: str  # BY_FRAME or BY_PLACE: what told it

    @property
    def us(self) -> float:
        return self.call.dur


def find_flush(trace: Trace, closed: list[Event]) -> Flush | None:
    """The profiler's end-of-window sync (module docstring), or None. `closed`: the trace's
    step ranges that ended where their annotation says (not clipped to the trace's end)."""
    syncs = [c for c in trace.runtime if c.name in DEVICE_SYNCS and c.op is None]
    if not syncs:
        return None
    for frame in trace.profiler_frames:
        for call in syncs:
            if (call.pid, call.tid) == (frame.pid, frame.tid) and (
                    frame.ts <= call.ts and call.end <= frame.end):
                return Flush(call, BY_FRAME)
    last = max(syncs, key=lambda c: c.ts)
    thread = (last.pid, last.tid)
    for events in (trace.runtime, trace.cpu_ops):  # each sorted by start (events.py)
        later = events[bisect.bisect_right(events, last.ts, key=_START):]
        if any((e.pid, e.tid) == thread for e in later):
            return None  # the program went on after it: its own sync
    if any(step.ts <= last.ts and last.end <= step.end for step in closed):
        return None  # inside a step the program closed: the profiler's stop comes after
    return Flush(last, BY_PLACE)


def buffer_requests(trace: Trace) -> list[Event]:
    return [e for e in trace.overhead if e.name == BUFFER_REQUEST]


def idle_overlap(requests: Intervals, busy: Coverage, start: float,
                 end: float) -> tuple[int, float]:
    """(how many idle stretches of the device in the window [start, end] overlap a buffer
    request, the idle time they overlap); `requests` is a merged union (request_intervals)."""
    mine = [(max(lo, start), min(hi, end)) for lo, hi in requests if lo < end and hi > start]
    if not mine:  # most windows: only the request's own step pays for the union below
        return 0, 0.0
    first = max(0, bisect.bisect_right(busy.starts, start) - 1)
    last = bisect.bisect_left(busy.starts, end)
    gaps, idle = 0, 0.0
    for lo, hi in subtract([(start, end)], busy.merged[first:last]):
        overlap = sum(max(0.0, min(hi, b) - max(lo, a)) for a, b in mine)
        if overlap > 0:
            gaps, idle = gaps + 1, idle + overlap
    return gaps, idle


def request_intervals(requests: list[Event]) -> Intervals:
    return union([(e.ts, e.end) for e in requests])
