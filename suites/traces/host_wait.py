"""What the host was doing while the device waited for it.

A GPU step's host wait (step_window.py: idle, nothing launched waiting to run) is split by the
host's own record of that time, each instant given to the first of these that covers it:

    initialisation   one-time set-up calls (host_parts.py)
    sync             synchronize calls and copies that waited for their copy (steps.py)
    allocation       memory allocation and release calls (cudaMalloc, cudaFree, hipMalloc...)
    CPU collectives  collectives the host ran (gloo; host_parts.py)
    data loading     DataLoader ranges
    host code        the program's own named ranges that launch nothing (preprocessing,
                     tokenising, a Python loop: named by their range names)
    launch           the rest: Python, dispatch and launch calls between the device's work

so a step's host causes and its device parts add up to its window, and every host cause the
trace records is weighed against the device's work (step_bound.py), not only past half of it.
"""
from __future__ import annotations

from suites.traces.gpu_timeline import Intervals, length, subtract, union

ORDER = ("initialisation", "sync", "allocation", "CPU collectives", "data loading", "host code")


def intersect(a: Intervals, b: Intervals) -> Intervals:
    """a and b, both merged unions."""
    return subtract(a, subtract(a, b))


def split_host_wait(idle: Intervals, causes: dict[str, Intervals]) -> dict[str, float]:
    """cause -> us of `idle` (merged) it covers, in ORDER; `launch` the rest."""
    remaining, out = idle, {}
    for name in ORDER:
        ranges = causes.get(name)
        if not ranges or not remaining:
            continue
        inside = intersect(remaining, union(ranges))
        if inside:
            out[name] = length(inside)
            remaining = subtract(remaining, inside)
    out["launch"] = length(remaining)
    return out
