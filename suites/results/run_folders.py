"""Run folders, as the readers find them: under a path given on the command line, and as the
jobs of a multirun sweep left them.

A run folder is any folder holding a measurements.csv (what run_suite.py writes under
results/<suite>/<time>); a path given on the command line may be one, or hold any number of
them at any depth (a multirun sweep, a cluster launcher's job folders, a whole results/ tree).
Rows are identified by KEY across run folders. What to do when two run folders hold the same
row is each reader's own policy. Each folder's files are read through reader.py.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from suites.common.errors import InputError
from suites.results.journal import MEASUREMENTS_CSV, RUN_JSON, SWEEP_JSON
from suites.results.reader import read_state


def find_runs(path: Path) -> list[Path]:
    """Every run folder under path (path itself included), sorted; an error when there is none."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if not path.is_dir():
        raise InputError(f"{path}: not a folder; pass a run folder or a folder holding run folders")
    runs = sorted(p.parent for p in path.rglob(MEASUREMENTS_CSV))
    if not runs:
        raise InputError(f"{path}: no run folder under it (none holds a {MEASUREMENTS_CSV}); pass "
                         "a run folder (results/<suite>/<time>) or a folder holding run folders")
    return runs


@dataclass
class SweepJob:
    num: int
    overrides: list[str]
    folder: Path | None   # the run folder whose run.json names this job; None: none does
    state: dict | None


def sweep_jobs(sweep_dir: Path) -> list[SweepJob]:
    """The jobs a multirun planned (its sweep.json), each with the run folder it left, if any."""
    sweep_dir = Path(sweep_dir)
    try:
        planned = json.loads((sweep_dir / SWEEP_JSON).read_text())["jobs"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    found = {}
    for file in sorted(sweep_dir.rglob(RUN_JSON)):
        state = read_state(file.parent)
        job = (state or {}).get("job") or {}
        if isinstance(job, dict) and isinstance(job.get("num"), int):
            found[job["num"]] = (file.parent, state)
    return [SweepJob(j.get("num"), list(j.get("overrides", [])),
                     *found.get(j.get("num"), (None, None)))
            for j in planned if isinstance(j, dict)]


def sweep_problems(path: Path) -> list[str]:
    """Every multirun under path whose jobs did not all leave rows: a job that never started,
    or crashed, or was cancelled before its first row is named, with its overrides."""
    problems = []
    if not Path(path).is_dir():
        return problems
    for manifest in sorted(Path(path).rglob(SWEEP_JSON)):
        jobs = sweep_jobs(manifest.parent)
        if not jobs:  # a sweep plans one job at least: this manifest cannot be read
            problems.append(f"{manifest}: garbled (no list of jobs): whether every job of "
                            "this multirun left its rows cannot be told")
        for job in jobs:
            name = f"multirun job {job.num} of {len(jobs)} ({' '.join(job.overrides)})"
            if job.folder is None:
                problems.append(f"{manifest.parent}: {name} left no run folder: it never "
                                "started, or it failed before its first case")
            elif not (job.folder / MEASUREMENTS_CSV).is_file():
                why = (job.state or {}).get("reason") or (job.state or {}).get("state", "?")
                problems.append(f"{job.folder}: {name} wrote no rows ({why})")
    return problems
