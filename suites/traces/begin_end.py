"""Duration events written as a begin ('B') and an end ('E') event, made complete ('X') events.

Kineto writes complete events, but the Chrome trace format also allows a begin/end pair per
range (other writers and converters use it). Left unread, such a trace's ops and steps would
vanish without a word and the verdict would judge what is left. On one thread each end closes
the latest open begin, in the order the file gives them (a begin and an end at one instant keep
their order); an end that repeats its begin's name closes the latest open begin of that name,
so ranges that overlap without nesting (a step that opens inside a Python frame and outlives
it) pair as written. An end with no open begin, or a begin never ended, is counted, never
guessed at.
"""
from __future__ import annotations

import math
from collections import defaultdict
from operator import itemgetter

from suites.traces.trace_text import RawEvent, hashable_id

BEGIN = "B"
UNMATCHED_END = "an end ('E') event with no begin ('B') open on its thread"
UNENDED_BEGIN = "a begin ('B') event never ended on its thread"
BAD_TIME = "a begin or end ('B'/'E') event without a finite numeric timestamp"
_NUMBERS = (int, float)


def _latest(open_: list, name) -> int:
    """The index of the open begin an end closes: the latest of its name, else the latest."""
    if type(name) is str and name and open_[-1].name != name:
        for i in range(len(open_) - 2, -1, -1):
            if open_[i].name == name:
                return i
    return -1


def pair(events: list, skipped: dict) -> list:
    """Complete events (RawEvent, ph 'X') made of `events`' begin/end pairs, in file order; what
    cannot be paired is counted in `skipped` (why -> events)."""
    threads: dict = defaultdict(list)
    for order, event in enumerate(events):
        ts = event.ts
        if type(ts) not in _NUMBERS or not math.isfinite(ts):
            skipped[BAD_TIME] = skipped.get(BAD_TIME, 0) + 1
            continue
        threads[(hashable_id(event.pid), hashable_id(event.tid))].append((ts, order, event))
    made = []
    for marks in threads.values():
        marks.sort(key=itemgetter(0, 1))  # by time; at one instant, as the file gives them
        open_: list = []
        for ts, _, event in marks:
            if event.ph == BEGIN:
                open_.append(event)
                continue
            if not open_:
                skipped[UNMATCHED_END] = skipped.get(UNMATCHED_END, 0) + 1
                continue
            begin = open_.pop(_latest(open_, event.name))
            made.append(RawEvent(ph="X", cat=begin.cat, name=begin.name, ts=begin.ts,
                                 dur=ts - begin.ts, pid=begin.pid, tid=begin.tid,
                                 args=begin.args if begin.args is not None else event.args))
        if open_:
            skipped[UNENDED_BEGIN] = skipped.get(UNENDED_BEGIN, 0) + len(open_)
    return made
