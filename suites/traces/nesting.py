"""Which event ran inside which: events nested by time containment, one thread at a time.

On one thread the profiler records a call's children inside its span, so in nesting order (by
start, the longer first at equal starts: a parent before its child) the events around an event
are the open ones that end after it starts: a stack, walked in one pass per thread: here for
the GEMM op around each launch (gemm_rates.py) and an op's calls (suggest); the two walks over
every event, each op's self time and enclosing op (steps.py) and a call's op tree (op_tree.py),
write the same walk out, for speed.
"""
from __future__ import annotations

from itertools import compress, repeat
from operator import attrgetter, eq
from typing import Callable

from suites.traces.events import Event, sort_nesting_order


# Up to this many threads in a group, each thread's events are picked out at C speed, one pass
# per thread; a trace's ops and launches run on one to a few threads.
_FEW_THREADS = 8
_PID, _TID = attrgetter("pid"), attrgetter("tid")


def _threads(events: list[Event]):
    """Each event's (pid, tid), lazily: zip reuses its tuple where nothing keeps it, where a
    list of them would be 140 MB for a 1 GB trace's ops and launches."""
    return zip(map(_PID, events), map(_TID, events))


def by_thread(*groups: list[Event]) -> list[list[Event]]:
    """The groups' events per thread (pid, tid), in the order the threads first appear, each in
    nesting order; events with equal start and duration keep the order given (an earlier group
    first: a range before an op, an op before the launch it makes)."""
    threads: dict = {}
    for events in groups:
        distinct = dict.fromkeys(_threads(events))  # in the order they first appear
        if len(distinct) == 1:
            threads.setdefault(next(iter(distinct)), []).extend(events)
        elif len(distinct) <= _FEW_THREADS:
            for key in distinct:
                threads.setdefault(key, []).extend(
                    compress(events, map(eq, _threads(events), repeat(key))))
        else:
            for key, event in zip(_threads(events), events):
                found = threads.get(key)
                if found is None:
                    threads[key] = [event]
                else:
                    found.append(event)
    for events in threads.values():
        sort_nesting_order(events)
    return list(threads.values())


def nest(events: list[Event], enter: Callable[[Event, list], object],
         leave: Callable[[object], None] | None = None) -> None:
    """Walk one thread's events in nesting order (by_thread). `enter(event, frames)` gets the
    frames of the events open around the event, the innermost last, and returns the event's own
    frame (what its children will see), or None for an event that holds none (a runtime call
    among ops). `leave(frame)`, where given, is called once the frame's event has ended: when a
    later event starts at or after its end, or at the end of the walk, innermost first."""
    ends: list[float] = []  # of the open frames' events; a stack beside the frames
    frames: list = []
    for event in events:
        start = event.ts
        while ends and ends[-1] <= start:
            ends.pop()
            frame = frames.pop()
            if leave is not None:
                leave(frame)
        frame = enter(event, frames)
        if frame is not None:
            ends.append(start + event.dur)  # event.end: a property call per event is slower
            frames.append(frame)
    if leave is not None:
        while frames:
            leave(frames.pop())
