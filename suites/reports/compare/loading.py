"""One side of a comparison: every run folder under a path, their rows, clean round medians (from
samples.csv and rounds.csv) and env.json.

A side is a run folder or any folder holding run folders (a multirun sweep, a results/ tree);
run folders are found by their measurements.csv. Each (suite, case_id, variant) must appear
once per side: when two run folders of a side hold the same row there is no safe way to pick
one (the newest is not always the one meant: a rerun with another timing preset, a sweep over
thread counts), so that is an error naming the row and the folders, and the user passes the
folder they mean.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from suites.common.errors import InputError
from suites.results.columns import KEY
from suites.results.tables import MEASUREMENTS_CSV
from suites.reports.kit.banner import state_line
from suites.results.reader import read_run
from suites.results.run_folders import find_runs, sweep_problems


@dataclass
class Side:
    label: str                      # "A" or "B"
    path: Path                      # as the user gave it
    runs: list[Path]                # run folders found under it, sorted
    rows: pd.DataFrame              # measurements.csv rows of every run, plus a `run` column
    rounds: dict[tuple, np.ndarray] = field(default_factory=dict)  # key -> clean round medians
    envs: list[dict] = field(default_factory=list)                  # env.json per run
    incomplete: list[str] = field(default_factory=list)  # a line per run that did not finish


def _find_runs(path: Path) -> list[Path]:
    if path.is_file():  # a run's measurements.csv names its run folder
        if path.name != MEASUREMENTS_CSV:
            raise InputError(f"{path}: not a folder; pass a run folder or a folder of runs")
        return [path.parent]
    return find_runs(path)


def round_medians(samples: pd.DataFrame | None, rounds: pd.DataFrame | None) -> dict[tuple, np.ndarray]:
    """key -> the median of each clean round. Rounds that rounds.csv marks as not clean are left
    out; samples without rounds (a run from before them, or another tool's table) give none."""
    if samples is None or not set(KEY + ("round", "time_us")) <= set(samples.columns):
        return {}
    times = pd.to_numeric(samples["time_us"], errors="coerce")
    samples = samples[np.isfinite(times) & (times > 0)].assign(time_us=times)
    medians = samples.groupby([*KEY, "round"], sort=False)["time_us"].median()
    if rounds is not None and set(KEY + ("round", "state")) <= set(rounds.columns):
        state = rounds.set_index([*KEY, "round"])["state"]
        clean = state[state == "clean"].index
        medians = medians[medians.index.isin(clean)]
    return {key: group.to_numpy(dtype=float)
            for key, group in medians.groupby(level=list(range(len(KEY))), sort=False)}


def _check_duplicates(rows: pd.DataFrame, label: str) -> None:
    counts = rows.groupby(list(KEY), sort=False)["run"].agg(list)
    twice = counts[counts.map(len) > 1]
    if twice.empty:
        return
    (suite, case_id, variant), runs = twice.index[0], twice.iloc[0]
    more = f" (and {len(twice) - 1} more row(s))" if len(twice) > 1 else ""
    raise InputError(f"{label}: {suite}/{case_id}/{variant} is in {len(runs)} run folders: "
                     f"{', '.join(runs)}{more}; pass the run folder you mean")


def load_side(path: Path, label: str) -> Side:
    path = Path(path)
    try:
        runs = _find_runs(path)
        files = [read_run(run) for run in runs]
    except InputError as exc:  # say which side is at fault
        raise InputError(f"{label}: {exc}") from None
    rows = pd.concat([f.measurements.assign(run=str(f.folder)) for f in files], ignore_index=True)
    _check_duplicates(rows, label)
    rounds: dict[tuple, np.ndarray] = {}
    for f in files:
        rounds.update(round_medians(f.samples, f.rounds))
    incomplete = [f"{label}: {line}" for line in sweep_problems(path)]
    incomplete += [f"{label}: {line}" for f in files
                   for line in [state_line(f.folder, f.state), *f.problems] if line]
    return Side(label, path, runs, rows, rounds, [f.env for f in files], incomplete)


def _joined(values) -> str:
    unique = list(dict.fromkeys(str(v) for v in values if v not in (None, "")))
    return ", ".join(unique) if unique else "-"


def env_facts(side: Side) -> dict[str, str]:
    """What a reader needs to judge whether A and B are comparable at all."""
    envs = side.envs
    created = sorted(str(e["created"]) for e in envs if e.get("created"))
    return {
        "folder": str(side.path),
        "run folders": str(len(side.runs)),
        "suite": _joined(e.get("suite") for e in envs),
        "device": _joined(f"{e.get('device', '?')} ({e.get('gpu') or e.get('cpu', '?')})"
                          for e in envs),
        "threads": _joined(e.get("threads") for e in envs),
        "torch": _joined(e.get("torch") for e in envs),
        "triton": _joined(e.get("triton") for e in envs),
        "commit": _joined(e.get("fusebench_commit") for e in envs),
        "timing preset": _joined(e.get("timing", {}).get("preset") for e in envs),
        "created": (created[0] if len(set(created)) == 1 else
                    f"{created[0]} to {created[-1]}") if created else "-",
    }
