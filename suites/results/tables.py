"""The run tables on disk: measurements.csv, kernels.csv, samples.csv, rounds.csv,
findings.csv and optree.csv written from typed rows, and measurements.csv read back, checked
against the schema and typed."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from suites.common.errors import ConfigError
from suites.results import atomic, journal
from suites.results.columns import (BY_NAME, FINDING_COLUMNS, KERNEL_COLUMNS, KEY, LEADING,
                                    METRICS, ROUND_COLUMNS, SAMPLE_COLUMNS, Status, column, empty, numeric)
from suites.results.columns import OPTREE_COLUMNS
from suites.results.columns import KERNEL_DETAIL_COLUMNS
from suites.results.row import ResultRow

MEASUREMENTS_CSV = journal.MEASUREMENTS_CSV
KERNELS_CSV, SAMPLES_CSV, ROUNDS_CSV, FINDINGS_CSV = (
    "kernels.csv", "samples.csv", "rounds.csv", "findings.csv")
OPTREE_CSV = "optree.csv"  # the op tree of each (case, variant): absent in runs before it
TABLES = (MEASUREMENTS_CSV, KERNELS_CSV, SAMPLES_CSV, ROUNDS_CSV, FINDINGS_CSV, OPTREE_CSV)
CSV_ERRORS = (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError)


def measurements_frame(rows: Sequence[ResultRow]) -> pd.DataFrame:
    """One row per ResultRow: identity, every parameter any row has (in first-seen order), then
    every metric, present or not."""
    params = list(dict.fromkeys(p for row in rows for p in row.params))
    columns = [c.name for c in LEADING] + params + [c.name for c in METRICS]
    return pd.DataFrame([row.record() for row in rows], columns=columns)


def table_frames(rows: Sequence[ResultRow], kernel_rows, sample_rows, round_rows,
                 finding_rows, optree_rows=()) -> dict[str, pd.DataFrame]:
    """file name -> its table, for the rows given."""
    frames = {MEASUREMENTS_CSV: measurements_frame(rows)}
    for name, columns, records in ((KERNELS_CSV, KERNEL_COLUMNS, kernel_rows),
                                   (SAMPLES_CSV, SAMPLE_COLUMNS, sample_rows),
                                   (ROUNDS_CSV, ROUND_COLUMNS, round_rows),
                                   (FINDINGS_CSV, FINDING_COLUMNS, finding_rows),
                                   (OPTREE_CSV, OPTREE_COLUMNS, optree_rows)):
        frames[name] = pd.DataFrame(records, columns=list(columns))
    return frames


def write_tables(out_dir: Path, rows: Sequence[ResultRow], kernel_rows, sample_rows,
                 round_rows, finding_rows, optree_rows=()) -> dict[str, pd.DataFrame]:
    """Every table, whole, each replacing its file atomically (suites/results/atomic.py);
    returns them by file name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    frames = table_frames(rows, kernel_rows, sample_rows, round_rows, finding_rows, optree_rows)
    for name, frame in frames.items():
        with atomic.replacing(out_dir / name) as tmp:
            frame.to_csv(tmp, index=False)
    return frames


def append_tables(out_dir: Path, rows: Sequence[ResultRow], kernel_rows, sample_rows,
                  round_rows, finding_rows, optree_rows=()) -> None:
    """One case's rows at the end of every table, on disk when it returns (journal.py);
    measurements.csv last, so a case found there has all its other rows too."""
    frames = table_frames(rows, kernel_rows, sample_rows, round_rows, finding_rows, optree_rows)
    for name in sorted(frames, key=lambda n: n == MEASUREMENTS_CSV):
        journal.append(out_dir / name, frames[name])


def param_columns(frame: pd.DataFrame) -> list[str]:
    """The op's parameter columns: the writer puts them between the identity columns and
    `status`, so a metric column that a newer version adds (after `status`) is never taken for
    one."""
    names = list(frame.columns)
    end = names.index("status") if "status" in names else len(names)
    return [c for c in names[:end] if c not in BY_NAME]


def read_measurements(folder: Path, required: Sequence[str] = ()) -> pd.DataFrame:
    """measurements.csv of a run folder, which must hold KEY, `status` and `required`, with
    known statuses; numeric columns as numbers (a value that is not one becomes NaN)."""
    file = Path(folder) / MEASUREMENTS_CSV
    try:
        frame = pd.read_csv(file)
    except CSV_ERRORS as exc:
        raise ConfigError(f"{file}: not a readable CSV ({exc})") from None
    wanted = list(dict.fromkeys([*KEY, "status", "median_us", *required]))
    missing = [c for c in wanted if c not in frame.columns]
    if missing:
        raise ConfigError(f"{file}: missing column(s) {', '.join(missing)}")
    frame["status"] = frame["status"].fillna("(empty)").astype(str)
    unknown = sorted(set(frame["status"]) - {s.value for s in Status})
    if unknown:
        raise ConfigError(f"{file}: unknown status value(s) {', '.join(unknown)}; accepted: "
                          f"{', '.join(s.value for s in Status)}")
    for name in numeric(frame.columns):
        frame[name] = pd.to_numeric(frame[name], errors="coerce")
    if impossible := _drop_impossible(frame):
        frame.attrs["impossible"] = impossible  # said in the readers' banner (run_folders.py)
    # Empty for ok rows (and absent in the oldest runs): "" rather than NaN, so it reads as text.
    reasons = frame["reason"] if "reason" in frame else [None] * len(frame)
    frame["reason"] = ["" if pd.isna(v) else str(v) for v in reasons]
    return frame


# Times no measurement can give: a call takes more than 0 us and less than forever; a speedup is
# a ratio of two such times. Any other value was edited or garbled.
_POSITIVE = ("median_us", "min_us", "p10_us", "p90_us", "speedup", "speedup_low", "speedup_high",
             "kernel_speedup")
# Times that may be 0 (no device work seen) but never below. Not launch_delay_us (a kernel may
# start before its launch call returns) nor exposed_overhead_us (a difference).
_NOT_NEGATIVE = ("kernel_us", "host_us", "device_us", "launch_api_us")


def _drop_impossible(frame: pd.DataFrame) -> str:
    """Values no run writes (a negative or infinite time, a median of 0, a speedup of 0 or
    below, a speedup interval upside down) become missing; returns what was found, in words
    ("" if nothing)."""
    found = {}
    for name in [c for c in frame.columns if c in _POSITIVE or c in _NOT_NEGATIVE]:
        values = frame[name]
        if not pd.api.types.is_numeric_dtype(values):
            continue
        bad = np.isinf(values) | (values <= 0 if name in _POSITIVE else values < 0)
        if bad.any():
            found[name] = int(bad.sum())
            frame.loc[bad, name] = np.nan
    if {"speedup_low", "speedup_high"} <= set(frame.columns):
        upside = frame["speedup_low"] > frame["speedup_high"]
        if upside.any():
            found["speedup interval upside down"] = int(upside.sum())
            frame.loc[upside, ["speedup_low", "speedup_high"]] = np.nan
    return "; ".join(f"{n} impossible value(s) in {c}" if not c.startswith("speedup interval")
                     else f"{c} in {n} row(s)" for c, n in found.items())


def read_kernels(folder: Path) -> pd.DataFrame:
    """kernels.csv of a run folder, its times as numbers; empty (with its columns) where the
    file is missing or unreadable: the readers' banner names that (run_folders.py)."""
    try:
        frame = pd.read_csv(Path(folder) / KERNELS_CSV)
    except (FileNotFoundError, *CSV_ERRORS):
        frame = pd.DataFrame(columns=list(KERNEL_COLUMNS))
    if not set(KERNEL_COLUMNS) - set(KERNEL_DETAIL_COLUMNS) <= set(frame.columns):
        frame = pd.DataFrame(columns=list(KERNEL_COLUMNS))
    # A run from before the detail columns: they are there, empty.
    frame = frame.assign(**{c: None for c in KERNEL_DETAIL_COLUMNS if c not in frame.columns})
    for name in ("calls_per_call", "total_us_per_call", "mean_us") + _KERNEL_NUMBERS:
        frame[name] = pd.to_numeric(frame[name], errors="coerce")
    return frame


_KERNEL_NUMBERS = ("gemm_stages", "gemm_tflops", "registers_per_thread", "shared_mem_bytes",
                   "blocks_per_sm", "warps_per_sm", "est_occupancy_pct", "theoretical_occupancy_pct",
                   "launch_configs")


def read_optree(folder: Path) -> pd.DataFrame:
    """optree.csv of a run folder, its numbers as numbers; empty (with its columns) where a run
    wrote none (one from before the table existed) or it is unreadable."""
    try:
        frame = pd.read_csv(Path(folder) / OPTREE_CSV, keep_default_na=False,
                            na_values={c: [""] for c in ("depth", "calls_per_call", "self_us",
                                                         "total_us")})
    except (FileNotFoundError, *CSV_ERRORS):
        return pd.DataFrame(columns=list(OPTREE_COLUMNS))
    if not set(OPTREE_COLUMNS) <= set(frame.columns):
        return pd.DataFrame(columns=list(OPTREE_COLUMNS))
    for name in ("depth", "calls_per_call", "self_us", "total_us"):
        frame[name] = pd.to_numeric(frame[name], errors="coerce")
    return frame


def with_columns(frame: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """`frame` with every column in `names` (schema columns: a typo is an error), empty where a
    run did not write one, e.g. an older version's run."""
    for name in names:
        column(name)
    return frame.assign(**{n: empty(n) for n in names if n not in frame.columns})
