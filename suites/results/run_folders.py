"""Run folders, as the results readers (compare, collect) find and read them.

A run folder is any folder holding a measurements.csv (what run_suite.py writes under
results/<suite>/<time>); a path given on the command line may be one, or hold any number of
them at any depth (a multirun sweep, a cluster launcher's job folders, a whole results/ tree).
Rows are identified by KEY across run folders. What to do when two run folders hold the same
row is each reader's own policy.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from suites.common.errors import ConfigError
from suites.results.journal import RUN_JSON, SWEEP_JSON, read_state
from suites.results.columns import KEY, numeric
from suites.results.tables import (CSV_ERRORS, FINDINGS_CSV, MEASUREMENTS_CSV, ROUNDS_CSV,
                                   SAMPLES_CSV, TABLES, read_measurements)

ENV = "env.json"
# The numeric columns of the tables read beside measurements.csv.
NUMBERS = {SAMPLES_CSV: ("round", "sample", "time_us"),
           ROUNDS_CSV: ("round", "position", "n_samples", "median_us", "wait_frac",
                        "others_cores", "gpu_other_processes", "sm_clock_ratio")}


@dataclass
class RunFiles:
    folder: Path
    measurements: pd.DataFrame
    samples: pd.DataFrame | None  # None when samples.csv is absent, unreadable or not asked for
    rounds: pd.DataFrame | None   # rounds.csv, the same way
    env: dict                     # {} when env.json is absent or unreadable (an old or partial run)
    state: dict | None = None     # run.json (journal.py); None for a run from before it existed
    problems: list = None         # what does not add up in the folder (table_problems)


def find_runs(path: Path) -> list[Path]:
    """Every run folder under path (path itself included), sorted; an error when there is none."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file or folder")
    if not path.is_dir():
        raise ConfigError(f"{path}: not a folder; pass a run folder or a folder holding run folders")
    runs = sorted(p.parent for p in path.rglob(MEASUREMENTS_CSV))
    if not runs:
        raise ConfigError(f"{path}: no run folder under it (none holds a {MEASUREMENTS_CSV}); pass "
                          "a run folder (results/<suite>/<time>) or a folder holding run folders")
    return runs


def _read_optional(folder: Path, name: str) -> pd.DataFrame | None:
    """samples.csv or rounds.csv, numbers as numbers (a value that is not one: NaN, and said by
    table_problems); a run from before they existed simply has none."""
    file = Path(folder) / name
    if not file.is_file():
        return None
    try:
        frame = pd.read_csv(file)
    except CSV_ERRORS:
        return None
    for column in [c for c in NUMBERS.get(name, ()) if c in frame]:
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame


def ends_cut(file: Path) -> bool:
    """A table whose last byte is not a line end was cut inside its last row (a full disk, or a
    copy that stopped): pandas reads the partial row as a row, its missing fields as empty."""
    try:
        with open(file, "rb") as f:
            f.seek(-1, 2)
            return f.read(1) != b"\n"
    except OSError:  # empty (seek before the start) or unreadable
        return False


def _not_numbers(file: Path, frame: pd.DataFrame) -> int:
    """Values in numeric columns that are not numbers (garbled), counted on the raw text."""
    try:
        raw = pd.read_csv(file, dtype=str, keep_default_na=False)
    except CSV_ERRORS:
        return 0
    columns = NUMBERS.get(file.name) or (numeric(raw.columns) if file.name == MEASUREMENTS_CSV
                                         else ())
    # Counted on the text itself: a number the reader then rejected (run_folders' impossible
    # values) is said apart, not here.
    return sum(int(((raw[c].str.strip() != "")
                    & pd.to_numeric(raw[c], errors="coerce").isna()).sum())
               for c in columns if c in raw and c in frame)


# The env.json keys readers use and the JSON type each must have; a key of another type (an
# edited or garbled file) is left out, as if not recorded, and the banner says so.
ENV_TYPES = {"timing": dict, "rounds": dict, "peaks": dict, "peak_probes": list,
             "reference": dict, "suite": str, "device": str, "created": str, "gpu": str,
             "cpu": str, "threads": int}


def env_checked(folder: Path) -> tuple[dict, str | None]:
    """env.json's keys of the right type, and what was wrong with the file (None: nothing,
    or no file: table_problems names that)."""
    file = Path(folder) / ENV
    try:
        env = json.loads(file.read_text())
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError) as exc:
        return {}, f"{file}: not readable JSON ({type(exc).__name__}): machine, versions and " \
                   "peaks unknown"
    if not isinstance(env, dict):
        return {}, f"{file}: a JSON {type(env).__name__}, not an object: machine, versions " \
                   "and peaks unknown"
    wrong = [k for k, kind in ENV_TYPES.items() if k in env and env[k] is not None
             and not (isinstance(env[k], kind) and not isinstance(env[k], bool))]
    if not wrong:
        return env, None
    return {k: v for k, v in env.items() if k not in wrong}, \
        f"{file}: {', '.join(wrong)} of the wrong type (edited or garbled): left out"


def read_env(folder: Path) -> dict:
    return env_checked(folder)[0]


def read_run(folder: Path, required: Sequence[str] = (), samples: bool = True) -> RunFiles:
    """One run folder's files; `samples=False` skips samples.csv and rounds.csv (the largest,
    often unneeded)."""
    folder = Path(folder)
    measurements, state = read_measurements(folder, required), read_state(folder)
    read = {n: _read_optional(folder, n) for n in (SAMPLES_CSV, ROUNDS_CSV)} if samples else {}
    return RunFiles(folder, measurements, read.get(SAMPLES_CSV), read.get(ROUNDS_CSV),
                    read_env(folder), state, table_problems(folder, measurements, state, read))


def table_problems(folder: Path, measurements: pd.DataFrame, state: dict | None,
                   read: dict[str, pd.DataFrame | None] | None = None) -> list[str]:
    """What does not add up: a table cut inside a row, fewer or more rows than run.json counted
    when the run wrote them whole, values that are not numbers, rows twice, files missing.
    `read`: the other tables the caller read (file name -> frame), checked the same way."""
    folder, problems = Path(folder), []
    state = state if isinstance(state, dict) else None
    complete = bool(state) and state.get("state") == "complete"
    counted = (state or {}).get("rows") or {}
    tables = {MEASUREMENTS_CSV: measurements, **(read or {})}
    for name in TABLES:
        file = folder / name
        if file.is_file() and ends_cut(file):
            problems.append(f"{file}: cut inside its last row (no line end): that row is partial")
        frame = tables.get(name)
        if name in tables and frame is None and file.is_file():
            problems.append(f"{file}: not a readable CSV: its rows are left out")
        if frame is None:
            continue
        if bad := _not_numbers(file, frame):
            problems.append(f"{file}: {bad} value(s) in numeric columns are not numbers "
                            "(garbled): read as missing")
        expected = counted.get(name) if isinstance(counted, dict) else None
        if expected is None and name == MEASUREMENTS_CSV:
            expected = (state or {}).get("done")
        if not complete or expected is None:
            continue
        if not isinstance(expected, int) or isinstance(expected, bool):
            problems.append(f"{folder / RUN_JSON}: its row count for {name} is not a whole "
                            "number (edited or garbled): the rows cannot be checked")
        elif len(frame) != expected:
            problems.append(f"{file}: holds {len(frame)} rows where run.json counted {expected} "
                            "written: cut or edited")
    twice = int(measurements.duplicated(list(KEY)).sum()) if set(KEY) <= set(measurements) else 0
    if twice:
        problems.append(f"{folder}: {twice} row(s) of {MEASUREMENTS_CSV} are there twice")
    if state is None and (folder / RUN_JSON).is_file():
        problems.append(f"{folder / RUN_JSON}: garbled (not a JSON object): whether the run "
                        "completed is unknown")
    elif state is None:
        problems.append(f"{folder}: no {RUN_JSON}: whether the run completed is unknown")
    if env_problem := env_checked(folder)[1]:
        problems.append(env_problem)
    if impossible := measurements.attrs.get("impossible"):
        problems.append(f"{folder / MEASUREMENTS_CSV}: {impossible}: read as missing")
    for name in (ENV, FINDINGS_CSV):
        if not (folder / name).is_file():
            problems.append(f"{folder}: no {name} (machine, versions and peaks unknown)"
                            if name == ENV else f"{folder}: no {name}: no findings to show")
    return problems


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
