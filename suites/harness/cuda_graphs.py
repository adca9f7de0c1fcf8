"""Profiling calls that replay a CUDA graph (torch.compile mode='reduce-overhead').

CUPTI records a graph's kernels only if it was set up when the graph was captured. Kineto tears
CUPTI down at the end of each profiler session (TEARDOWN_CUPTI, on by default on CUDA 12.6 and
later) and sets it up again lazily at the next; a graph captured in between (the next case's
first call) can then replay with none of its kernels in the next profile, and the row would
report zero kernels and no device time. So a CUDA run with a replaying variant keeps CUPTI set
up from its first session on (`keep_cupti_between_sessions`); a run without one tears it down
as Kineto does by default, since CUPTI left attached adds its callbacks to every later launch
of the run's timing (gpu_check's `cupti probe` measures that cost). As that is Kineto's
behaviour and not ours to prove,
each replaying row's profile is checked against the variant it replays (`missed_graph_kernels`):
a replay runs at least the kernels of the compiled graph it captured.
"""
from __future__ import annotations

import os
from dataclasses import replace

from suites.results.row import NAN, ResultRow

_KEEP = {"TEARDOWN_CUPTI": "0"}


def keep_cupti_between_sessions(device_type: str, replaying: bool = True) -> None:
    """Before the run's first profiler session, for a run with a variant that replays a CUDA
    graph (`replaying`): CUPTI stays set up between sessions (a user's own setting wins). Only
    the tear-down at each session's end is skipped; nothing is traced outside the sessions.
    Kineto reads the variable when a session ends, which is why torch.compile itself can set
    it (torch/__init__.py does, for CUDA graphs before 12.6)."""
    if device_type == "cuda" and replaying:
        for name, value in _KEEP.items():
            os.environ.setdefault(name, value)


def missed_graph_kernels(rows: list[ResultRow], replays: dict[str, str]) -> dict[str, str]:
    """`replays`: variant -> the variant whose compiled graph it replays. A replaying row whose
    profile shows fewer kernels per call than that variant's did not see the graph's kernels:
    its device columns are emptied (host columns kept) and the returned note says why."""
    by_name = {r.variant: r for r in rows}
    notes = {}
    for name, source in replays.items():
        row, compiled = by_name.get(name), by_name.get(source)
        if row is None or compiled is None or row.profile is None or compiled.profile is None:
            continue
        seen, expected = row.profile.n_kernels, compiled.profile.n_kernels
        if seen == seen and expected == expected and seen < expected:
            row.profile = replace(row.profile, device_us=NAN, n_kernels=NAN, idle_frac=NAN,
                                  launch_delay_us=NAN)
            notes[name] = (f"the profile missed the CUDA graph's kernels ({seen:g} per call, "
                           f"{source} ran {expected:g}): its device columns are left empty")
    return notes
