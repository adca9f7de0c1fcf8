"""What a trace holds from before it began: device work launched before the profiler started
(still running as the first recorded step opens), and the stretch before the first recorded
device activity, in which queued work may have waited behind work the trace does not hold.
steps.py keeps the first out of the steps' own work and measures the second (StepMetrics)."""
from __future__ import annotations

from itertools import takewhile

from suites.traces.events import Event, Trace
from suites.traces.op_kinds import is_stream_wait_api


def first_recorded_start(trace: Trace) -> float:
    """The start of the trace's first device activity, before which queued work that does not
    start may have waited behind work the trace does not hold (StepMetrics.unrecorded_us); -inf
    where a stream's wait for an event comes first: the trace then shows what held the queue."""
    if not trace.device:
        return float("-inf")
    first = trace.device[0].ts  # sorted by start
    before = takewhile(lambda c: c.ts < first, trace.runtime)  # sorted by start too
    if any(is_stream_wait_api(c.name) for c in before):
        return float("-inf")
    return first


def launched_before(unlinked: list[Event], runtime: list[Event]
                    ) -> tuple[list[Event], list[Event]]:
    """(the activities without a launch in the trace that were launched before it began, the
    rest). Such an activity started before the trace's first launch call, or carries a
    correlation id below every launch call's: the profiler and the runtime number launches in
    order, so a smaller id was launched earlier (the previous step's work, still running when
    the profiler started: on the Qwen traces, 509 kernels that run through the sync at the top
    of the first recorded step)."""
    if not runtime or not unlinked:
        return [], unlinked
    first_launch = runtime[0].ts  # sorted by start
    first_id = min((c.corr for c in runtime if c.corr is not None and c.corr > 0), default=None)
    before, after = [], []
    for a in unlinked:
        early = a.ts < first_launch or (first_id is not None and a.corr is not None
                                        and 0 < a.corr < first_id)
        (before if early else after).append(a)
    return before, after
