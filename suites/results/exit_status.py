"""The exit status of a run or a sweep, taken from the run.json files it left (so it is the same
whichever launcher ran the jobs, on this machine or on a cluster):

    0    every row ok or skipped, every job complete
    1    finished, but some rows failed, were incorrect or noisy (the last line says so in those
         words: a finished run, not a crash); or a job did not complete or left no rows
    2    could not do what was asked: bad input (run_suite.py's `fail`, before any work), a
         folder another run owns, or a full disk (the rows written so far are kept, whole, and
         the line says what finishes the run once there is space)
    130/143  interrupted by SIGINT/SIGTERM (run_suite.py)

`make run` takes 1 for a finished run (Makefile): make's own "Error 1" reads as a crash.
"""
from __future__ import annotations

from collections import Counter

from suites.results.columns import Status
from suites.results.journal import COMPLETE

NOT_RESULTS = (Status.FAILED, Status.INCORRECT, Status.NOISY)


def exit_status(states: list[dict | None], problems: list[str] = ()) -> tuple[int, str]:
    """(exit code, the last line to print) for the runs behind one command: `states` their
    run.json, `problems` jobs of a sweep that left no rows (run_folders.sweep_problems)."""
    counts = Counter()
    for state in states:
        counts.update((state or {}).get("statuses") or {})
    rows = sum(counts.values())
    bad = {s.value: counts[s.value] for s in NOT_RESULTS if counts.get(s.value)}
    unfinished = sum(1 for s in states if not s or s.get("state") != COMPLETE)
    parts = []
    if bad:
        parts.append(f"{sum(bad.values())} of {rows} rows are not results ("
                     + ", ".join(f"{n} {s}" for s, n in bad.items()) + ": the report says why)")
    if unfinished:
        parts.append(f"{unfinished} of {len(states)} runs did not complete")
    if problems:
        parts.append(f"{len(problems)} job(s) left no rows")
    if not parts:
        return 0, f"fusebench: all {rows} rows ok or skipped"
    if not unfinished and not problems:  # every run ran to its end: say so first
        return 1, f"fusebench: finished, but {parts[0]}; exit 1 marks that, not a crash"
    return 1, "fusebench: " + "; ".join(parts) + " (exit 1)"
