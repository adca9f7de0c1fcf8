"""Peak memory a call allocates, from the profiler's memory events (profile_memory=True).

Each `[memory]` instant event is one allocation (Bytes > 0) or free (Bytes < 0). Inside one
call's range (its record_function span), the running sum of Bytes from the call's start is what
the call holds beyond what existed before it; its maximum is the call's peak: intermediates and
the output, not the inputs, which were allocated before. The series' point in bytes: the eager
MLP's gelu(g) tensor or naive attention's (S, S) scores are held at the peak, a fused kernel's
intermediates never are.
"""
from __future__ import annotations

import statistics
from pathlib import Path

from suites.traces.events import iter_raw_events

# Kineto's Device Type: 0 is the CPU, 1 CUDA (ROCm reports as CUDA). Which allocator a call is
# judged by follows the run's device.
DEVICE_TYPE = {"cpu": 0, "cuda": 1}


def call_peaks(path: Path, label: str, device_type: str) -> list[float]:
    """Peak bytes allocated during each `label` range of the trace, in order of the calls."""
    ranges, memory = [], []
    wanted = DEVICE_TYPE.get(device_type, 0)
    for e in iter_raw_events(path):
        if not isinstance(e, dict):
            continue
        if e.get("name") == label and e.get("ph") == "X" and e.get("cat") == "user_annotation":
            ranges.append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))))
        elif e.get("name") == "[memory]":
            args = e.get("args") or {}
            if args.get("Device Type") == wanted and isinstance(args.get("Bytes"), (int, float)):
                memory.append((float(e["ts"]), float(args["Bytes"])))
    memory.sort()
    peaks = []
    for start, end in sorted(ranges):
        inside = [nbytes for ts, nbytes in memory if start <= ts <= end]
        held = peak = 0.0
        for nbytes in inside:
            held += nbytes
            peak = max(peak, held)
        # No event at all: the profiler recorded no allocation (not "0 bytes": any call that
        # returns a new tensor allocates), so the call's peak is unknown.
        peaks.append(peak if inside else float("nan"))
    return peaks


def peak_mb(path: Path, label: str, device_type: str) -> float:
    """The median over the profiled calls of each call's peak, in MiB; NaN without events."""
    peaks = [p for p in call_peaks(path, label, device_type) if p == p]
    return statistics.median(peaks) / 2 ** 20 if peaks else float("nan")
