"""One side of a comparison: every run folder under a path, their rows, raw samples and env.json.

A side is a run folder or any folder holding run folders (a multirun sweep, a results/ tree);
run folders are found by their measurements.csv. Each (suite, case_id, variant) must appear
once per side: when two run folders of a side hold the same row there is no safe way to pick
one (the newest is not always the one meant: a rerun with another timing preset, a sweep over
thread counts), so that is an error naming the row and the folders, and the user passes the
folder they mean.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from suites.errors import ConfigError

KEY = ["suite", "case_id", "variant"]
REQUIRED = KEY + ["status"]


@dataclass
class Side:
    label: str                      # "A" or "B"
    path: Path                      # as the user gave it
    runs: list[Path]                # run folders found under it, sorted
    rows: pd.DataFrame              # measurements.csv rows of every run, plus a `run` column
    samples: dict[tuple, np.ndarray] = field(default_factory=dict)  # key -> time_us
    envs: list[dict] = field(default_factory=list)                   # env.json per run


def find_runs(path: Path, label: str) -> list[Path]:
    if not path.exists():
        raise ConfigError(f"{label}: {path}: no such file or folder")
    if path.is_file():
        if path.name != "measurements.csv":
            raise ConfigError(f"{label}: {path}: not a folder; pass a run folder or a folder of runs")
        return [path.parent]
    runs = sorted(p.parent for p in path.rglob("measurements.csv"))
    if not runs:
        raise ConfigError(f"{label}: {path}: no measurements.csv under it; pass a run folder "
                          "(results/<suite>/<time>) or a folder holding run folders")
    return runs


def _read_rows(run: Path, label: str) -> pd.DataFrame:
    file = run / "measurements.csv"
    try:
        rows = pd.read_csv(file)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{label}: {file}: not a readable CSV ({exc})") from None
    missing = [c for c in REQUIRED if c not in rows.columns]
    if missing:
        raise ConfigError(f"{label}: {file}: missing column(s) {', '.join(missing)}")
    return rows.assign(run=str(run))


def _read_samples(run: Path) -> dict[tuple, np.ndarray]:
    """Raw per-call times; a run from before samples.csv existed simply has none."""
    file = run / "samples.csv"
    if not file.is_file():
        return {}
    try:
        samples = pd.read_csv(file)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        return {}
    if not set(KEY + ["time_us"]) <= set(samples.columns):
        return {}
    samples = samples[np.isfinite(samples["time_us"]) & (samples["time_us"] > 0)]
    return {key: group["time_us"].to_numpy(dtype=float)
            for key, group in samples.groupby(KEY, sort=False)}


def _read_env(run: Path) -> dict:
    try:
        return json.loads((run / "env.json").read_text())
    except (OSError, ValueError):
        return {}


def _check_duplicates(rows: pd.DataFrame, label: str) -> None:
    counts = rows.groupby(KEY, sort=False)["run"].agg(list)
    twice = counts[counts.map(len) > 1]
    if twice.empty:
        return
    (suite, case_id, variant), runs = twice.index[0], twice.iloc[0]
    more = f" (and {len(twice) - 1} more row(s))" if len(twice) > 1 else ""
    raise ConfigError(f"{label}: {suite}/{case_id}/{variant} is in {len(runs)} run folders: "
                      f"{', '.join(runs)}{more}; pass the run folder you mean")


def load_side(path: Path, label: str) -> Side:
    path = Path(path)
    runs = find_runs(path, label)
    rows = pd.concat([_read_rows(run, label) for run in runs], ignore_index=True)
    _check_duplicates(rows, label)
    samples: dict[tuple, np.ndarray] = {}
    for run in runs:
        samples.update(_read_samples(run))
    return Side(label, path, runs, rows, samples, [_read_env(run) for run in runs])


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
