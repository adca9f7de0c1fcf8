"""What the slowest rank of a job does that the others do not: the named range or top-level op
with the most time a step on it beyond any other rank's (rank 2's `extra_work`, 41.6 ms a step
against none on ranks 0 and 1, in the skewed gloo fixture). The others' skew wait is time the
slowest rank spent elsewhere; this names where, from the traces alone.

Named ranges (record_function, the program's own) are compared first and ops at the top of
their thread's stack second, each by its time inside the rank's steps; collectives are left
out (their time is the wait being explained).
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from operator import attrgetter

from suites.traces.call_profile import CallProfile
from suites.traces.op_kinds import STEP_PREFIX, is_cpu_collective

_START = attrgetter("ts")


def per_step_times(profile: CallProfile) -> dict[str, float]:
    """name -> mean us a step in the rank's named ranges and top-level ops."""
    steps = [s for s in profile.steps if s.call is not None]
    if not steps:
        return {}
    ranges = sorted((a for a in profile.analysis.trace.annotations
                     if not a.name.startswith(STEP_PREFIX)), key=_START)
    times: dict[str, float] = defaultdict(float)
    for step in steps:
        lo = bisect.bisect_left(ranges, step.call.ts, key=_START)
        hi = bisect.bisect_right(ranges, step.call.end, key=_START)
        for r in ranges[lo:hi]:
            if not _collective(r.name):
                times[r.name] += r.dur
        for op in step.op_events:
            if op.op is None and not _collective(op.name):
                times[op.name] += op.dur
    return {name: us / len(steps) for name, us in times.items()}


def _collective(name: str) -> bool:
    return is_cpu_collective(name) or name.startswith("nccl:")


def slowest_extra(slowest: CallProfile, others: list[CallProfile]) -> tuple[str, float, float]:
    """(name, its us a step on the slowest rank, the most any other rank spends on it a step)
    of the largest excess; ("", 0, 0) where the slowest rank spends nothing more than another."""
    mine = per_step_times(slowest)
    theirs = [per_step_times(p) for p in others]
    best = ("", 0.0, 0.0)
    for name, us in mine.items():
        other = max((t.get(name, 0.0) for t in theirs), default=0.0)
        if us - other > best[1] - best[2]:
            best = (name, us, other)
    return best
