"""Where a step's host time goes besides launching: one-time set-up, data loading and
collectives run by the host (blocking calls are measured with the launches, steps.py).

One-time set-up is a runtime call of at least INIT_MIN_US that is either a set-up call
(op_kinds.SETUP_APIS: context creation, device queries, module loading) or far longer than the
same call's steady state (INIT_FACTOR x the median of its at least 3 calls in the trace: the
first cudaLaunchKernel that loads the module, 4.3 s where the rest take 15 us). Synchronize calls
and copies are never set-up: a long one waits for the device.
"""
from __future__ import annotations

import bisect
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from suites.traces.gpu_timeline import length, union
from suites.traces.op_kinds import (is_copy_api, is_cpu_collective, is_data_loading,
                                    is_setup_api, is_sync_api)
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

    def is_init(self, call: Event) -> bool:
        if call.dur < INIT_MIN_US or is_sync_api(call.name) or is_copy_api(call.name):
            return False
        if is_setup_api(call.name):
            return True
        steady = self.steady.get(call.name)
        return steady is not None and call.dur >= INIT_FACTOR * max(steady, 1.0)

    def parts(self, runtime: list[Event], lo: float, hi: float) -> HostParts:
        """The set-up calls, data-loading ranges and host collectives inside [lo, hi]."""
        init = [call for call in runtime if self.is_init(call)]
        return HostParts(init_us=sum(c.dur for c in init),
                         data_us=self.data.covered(lo, hi),
                         collective_us=self.collectives.covered(lo, hi), init_calls=init)


class _Ranges:
    """Host ranges of one kind, sorted, so a step finds its own without a scan of them all."""

    def __init__(self, events: list[Event]):
        self.events = sorted(events, key=lambda e: e.ts)
        self.starts = [e.ts for e in self.events]
        self.longest = max((e.dur for e in self.events), default=0.0)

    def covered(self, lo: float, hi: float) -> float:
        """Time inside [lo, hi] covered by at least one range (nested ones count once)."""
        first = bisect.bisect_left(self.starts, lo - self.longest)
        last = bisect.bisect_left(self.starts, hi)
        return length(union([(max(e.ts, lo), min(e.end, hi)) for e in self.events[first:last]
                             if e.end > lo]))
