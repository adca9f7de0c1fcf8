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

from suites.errors import ConfigError
from suites.results.journal import read_state
from suites.results.columns import KEY
from suites.results.tables import (CSV_ERRORS, FINDINGS_CSV, MEASUREMENTS_CSV, ROUNDS_CSV,
                                   SAMPLES_CSV, read_measurements)

ENV = "env.json"


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
    """samples.csv or rounds.csv; a run from before they existed simply has none."""
    file = Path(folder) / name
    if not file.is_file():
        return None
    try:
        return pd.read_csv(file)
    except CSV_ERRORS:
        return None


def read_env(folder: Path) -> dict:
    try:
        return json.loads((Path(folder) / ENV).read_text())
    except (OSError, ValueError):
        return {}


def read_run(folder: Path, required: Sequence[str] = (), samples: bool = True) -> RunFiles:
    """One run folder's files; `samples=False` skips samples.csv and rounds.csv (the largest,
    often unneeded)."""
    folder = Path(folder)
    measurements, state = read_measurements(folder, required), read_state(folder)
    return RunFiles(folder, measurements,
                    _read_optional(folder, SAMPLES_CSV) if samples else None,
                    _read_optional(folder, ROUNDS_CSV) if samples else None, read_env(folder),
                    state, table_problems(folder, measurements, state))


def table_problems(folder: Path, measurements: pd.DataFrame, state: dict | None) -> list[str]:
    """What does not add up: rows against run.json's count, rows twice, files missing."""
    folder, problems = Path(folder), []
    if state and state.get("state") == "complete" and len(measurements) != state.get("done"):
        problems.append(f"{folder}: {MEASUREMENTS_CSV} holds {len(measurements)} rows where "
                        f"run.json counted {state.get('done')} written: cut or edited")
    twice = int(measurements.duplicated(list(KEY)).sum()) if set(KEY) <= set(measurements) else 0
    if twice:
        problems.append(f"{folder}: {twice} row(s) of {MEASUREMENTS_CSV} are there twice")
    for name in (ENV, FINDINGS_CSV):
        if not (folder / name).is_file():
            problems.append(f"{folder}: no {name} (machine, versions and peaks unknown)"
                            if name == ENV else f"{folder}: no {name}: no findings to show")
    return problems
