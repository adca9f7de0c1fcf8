"""Which event times a trace cannot hold, one rule each, and the count of the events each rule
leaves out (with the first one's name, so a reader can find it in the file).

A corrupt time must never reach a sum: one event of 1e308 us makes a step "1e+302 s" long, and
two make it infinite. The rules, from the cheapest (each event as it is read, events.py) to those
that need the whole trace (drop_impossible, once it is read):

- a time that is not a number, not finite, or a negative duration (read_problem);
- past the clock: a start or an end beyond 2**53 us from the clock's zero (285 years; Kineto's
  clock counts microseconds since 1970, 2**50.6 today). A double holds every whole microsecond
  only below it, so no profiler writes such a time;
- a start far from the trace: more than FACTOR times the span of the trace's starts away from
  them (an event with a zeroed or wrapped timestamp), the span taken without each list's
  farthest hundredth at either end, which such starts would stretch;
- an overlong duration: over FACTOR times that span. The margin is wide because a range may
  hold a long idle tail after the last event that starts in it (50 times the starts' span in
  this project's synthetic traces, 1.002 in the real ones). ProfilerStep ranges are exempt,
  while anything else is left to cut them at: the profiler writes the end of the step it stops
  in late (13 s in a 355 ms trace, 8800 times the span of its starts), and steps.py cuts such a
  step at the trace's last event.
"""
from __future__ import annotations

import bisect
import math
from operator import attrgetter

CLOCK_LIMIT_US = float(2 ** 53)
PAST_THE_CLOCK = "a start or an end past 2**53 us (285 years: no clock writes one)"
FACTOR = 1000
OVERLONG = (f"a duration longer than the trace (over {FACTOR} times the span of its events' "
            "start times)")
FAR_START = f"a start over {FACTOR} times the span of the trace's other starts away from them"
STEP_PREFIX = "ProfilerStep#"  # op_kinds.STEP_PREFIX (op_kinds imports events, which imports this)

_START, _DURATION = attrgetter("ts"), attrgetter("dur")


def number(value):
    """`value` where it is a number (bool is not), else None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def read_problem(ts, dur) -> str:
    """Why a complete event's raw `ts` and `dur` cannot be used, once the reader's check failed.
    A missing duration is not 0: counted as 0, a kernel would vanish from the device's busy time
    without a word."""
    if ts is None:
        return "no timestamp"
    if number(ts) is None:
        return "a timestamp that is not a number"
    if dur is None:
        return "no duration"
    if number(dur) is None:
        return "a duration that is not a number"
    if not (_finite(ts) and _finite(dur)):
        return "a time that is not finite"
    if dur < 0:
        return "negative duration"
    return PAST_THE_CLOCK


def _finite(value) -> bool:
    """Without math.isfinite, which raises on an int too large for a float (10**400)."""
    return value == value and abs(value) != math.inf


def count_skipped(trace, why: str, name, n: int = 1) -> None:
    """`n` events of `trace` left out for `why`, the first of them named."""
    trace.skipped[why] = trace.skipped.get(why, 0) + n
    if why not in trace.skipped_first and name is not None:
        trace.skipped_first[why] = str(name)[:120]


def drop_impossible(trace, names: tuple[str, ...]) -> None:
    """The trace's lists `names` (each sorted by start) without far starts and overlong
    durations, each counted (the device's too, in trace.skipped_device)."""
    lists = {name: getattr(trace, name) for name in names}
    core = _core_starts(list(lists.values()))
    if core is not None:
        lo, hi = core
        margin = FACTOR * (hi - lo)
        lists = {name: _drop_far(events, lo - margin, hi + margin, trace, name == "device")
                 for name, events in lists.items()}
    limit = _duration_limit(list(lists.values()))
    kept = {name: _drop_overlong(events, limit, trace, name == "device")
            for name, events in lists.items()}
    if not any(not e.name.startswith(STEP_PREFIX) for events in kept.values() for e in events):
        # Only step ranges are left: nothing to cut an overlong one at, so none is exempt; a
        # trace whose every event was impossible is then an error naming it (steps.py).
        kept = {name: _drop_overlong(events, limit, trace, name == "device", exempt_steps=False)
                for name, events in kept.items()}
    for name, events in kept.items():
        setattr(trace, name, events)


def _core_starts(sorted_lists: list[list]) -> tuple[float, float] | None:
    """The first and last start of the trace without each list's farthest hundredth at either
    end (at least one, in a list of three or more); None where they coincide: no span to judge
    a start by."""
    firsts, lasts = [], []
    for events in sorted_lists:
        n = len(events)
        if n:
            cut = max(1, n // 100) if n >= 3 else 0
            firsts.append(events[cut].ts)
            lasts.append(events[n - 1 - cut].ts)
    if not firsts or max(lasts) <= min(firsts):
        return None
    return min(firsts), max(lasts)


def _drop_far(events: list, lo: float, hi: float, trace, device: bool) -> list:
    """`events` (sorted by start) without those that start before `lo` or after `hi`."""
    if not events or (events[0].ts >= lo and events[-1].ts <= hi):
        return events
    first = bisect.bisect_left(events, lo, key=_START)
    last = bisect.bisect_right(events, hi, key=_START)
    far = events[:first] + events[last:]
    count_skipped(trace, FAR_START, far[0].name, len(far))
    if device:
        trace.skipped_device[FAR_START] = trace.skipped_device.get(FAR_START, 0) + len(far)
    return events[first:last]


def _duration_limit(sorted_lists: list[list]) -> float | None:
    """The longest duration an event of the trace can have, from the span of the events' starts
    (each list sorted by start); None where every event starts at one instant: nothing to judge
    a duration by."""
    firsts = [events[0].ts for events in sorted_lists if events]
    lasts = [events[-1].ts for events in sorted_lists if events]
    span = max(lasts, default=0.0) - min(firsts, default=0.0)
    return FACTOR * span if span > 0 else None


def _drop_overlong(events: list, limit: float | None, trace, device: bool,
                   exempt_steps: bool = True) -> list:
    """`events` without those longer than `limit`, counted; step ranges kept while
    `exempt_steps`."""
    if limit is None or max(map(_DURATION, events), default=0.0) <= limit:
        return events
    kept, first = [], None
    for e in events:
        if e.dur <= limit or (exempt_steps and e.name.startswith(STEP_PREFIX)):
            kept.append(e)
        elif first is None:
            first = e.name
    dropped = len(events) - len(kept)
    if dropped:
        count_skipped(trace, OVERLONG, first, dropped)
        if device:
            trace.skipped_device[OVERLONG] = trace.skipped_device.get(OVERLONG, 0) + dropped
    return kept
