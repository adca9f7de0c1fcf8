"""What the profiler adds to each op it records, measured here: the evidence a CPU trace's
"the profiler's cost" rests on (verdict.py). A CPU trace's op spans hold the profiler's own work
for every op recorded inside them; a replay runs unprofiled.

The figure is the run's own probe (suites/harness/launch_floor.py: x.add_(1) in blocks of calls,
under torch.profiler and without it, as env.json records it): `profiler_op`'s extra_us, and as
its bounds the farthest its blocks allow (the fastest profiled block less the slowest plain one,
the slowest profiled less the fastest plain), so a probe the machine shook gives wide bounds and
explains nothing. Taken under the load meter: a probe other work disturbed (round_checks'
contention rules) gives no figure at all.
"""
from __future__ import annotations

import math

from suites.harness.contention import LoadMeter, usable_cpus
from suites.harness.round_checks import contention, waited

NONE = (math.nan, math.nan, math.nan)


def profiler_us_per_op() -> tuple[float, float, float]:
    """(us, low, high) the profiler adds to one recorded op on this CPU, or NaNs (not
    measured, or measured while other work held the cores)."""
    from suites.harness.launch_floor import measure_floors  # its first profile costs seconds
    meter = LoadMeter("cpu")
    meter.start()
    try:
        floors = measure_floors("cpu")
    except Exception:  # no figure: no cause is said from it
        return NONE
    load = meter.stop()
    if waited(load) or contention([load], len(usable_cpus()), 1):
        return NONE
    profiled, plain = floors.get("profiler_op") or {}, floors.get("eager_dispatch") or {}
    try:
        extra = float(profiled["extra_us"])
        low = max(0.0, float(profiled["min_us"]) - float(plain["max_us"]))
        high = float(profiled["max_us"]) - float(plain["min_us"])
    except (KeyError, TypeError, ValueError):  # a probe that recorded its error instead
        return NONE
    return (extra, low, high) if extra > 0 and low <= extra <= high else NONE
