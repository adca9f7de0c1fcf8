"""A run folder's tables from their text: checked against the schema and typed. The reader
(reader.py) reads each file once and hands its bytes here; a table too bad to read at all is an
InputError for measurements.csv (nothing to report without it) and an empty table for the
others (the readers' banner names what was left out)."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from suites.common.errors import InputError
from suites.results.columns import (KERNEL_COLUMNS, KERNEL_DETAIL_COLUMNS, KEY,
                                    OPTREE_COLUMNS, Status, numeric)
from suites.results.tables import ROUNDS_CSV, SAMPLES_CSV

CSV_ERRORS = (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError)
# The numeric columns of the tables read beside measurements.csv.
NUMBERS = {SAMPLES_CSV: ("round", "sample", "time_us"),
           ROUNDS_CSV: ("round", "position", "n_samples", "calls_per_sample", "median_us",
                        "kernel_mean_us", "wait_frac", "others_cores", "gpu_other_processes",
                        "sm_clock_ratio", "sm_clock_mhz")}
_KERNEL_NUMBERS = ("calls_per_call", "total_us_per_call", "mean_us", "gemm_stages", "gemm_tflops",
                   "gemm_flop_per_byte", "gemm_gbps",
                   "registers_per_thread", "shared_mem_bytes", "blocks_per_sm", "warps_per_sm",
                   "est_occupancy_pct", "theoretical_occupancy_pct", "launch_configs")
_OPTREE_NUMBERS = ("depth", "calls_per_call", "self_us", "total_us")


def parse(data: bytes, **options) -> pd.DataFrame:
    """A CSV file's bytes as pandas reads the file itself."""
    return pd.read_csv(io.BytesIO(data), **options)


def measurements(file: Path, data: bytes, required: Sequence[str] = ()) -> pd.DataFrame:
    """measurements.csv as written, which must hold KEY, `status`, `median_us` and `required`."""
    try:
        frame = parse(data)
    except CSV_ERRORS as exc:
        raise InputError(f"{file}: not a readable CSV ({exc})") from None
    wanted = list(dict.fromkeys([*KEY, "status", "median_us", *required]))
    missing = [c for c in wanted if c not in frame.columns]
    if missing:
        raise InputError(f"{file}: missing column(s) {', '.join(missing)}")
    return frame


def typed_measurements(file: Path, frame: pd.DataFrame) -> pd.DataFrame:
    """Known statuses (any other is an InputError); numeric columns as numbers (a value that is
    not one becomes NaN, an impossible one too: said in frame.attrs["impossible"]); reasons as
    text, "" where a row has none."""
    frame["status"] = frame["status"].fillna("(empty)").astype(str)
    unknown = sorted(set(frame["status"]) - {s.value for s in Status})
    if unknown:
        raise InputError(f"{file}: unknown status value(s) {', '.join(unknown)}; accepted: "
                         f"{', '.join(s.value for s in Status)}")
    for name in numeric(frame.columns):
        frame[name] = pd.to_numeric(frame[name], errors="coerce")
    if impossible := _drop_impossible(frame):
        frame.attrs["impossible"] = impossible  # said in the readers' banner (reader.py)
    # "" rather than NaN for an ok row, so it reads as text.
    frame["reason"] = ["" if pd.isna(v) else str(v) for v in frame["reason"]]
    return frame


# Times no measurement can give: a call takes more than 0 us and less than forever; a speedup is
# a ratio of two such times. Any other value was edited or garbled.
_POSITIVE = ("mean_us", "median_us", "min_us", "p10_us", "p90_us", "speedup", "speedup_low",
             "speedup_high", "kernel_speedup")
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


def numbers_table(name: str, data: bytes | None) -> pd.DataFrame | None:
    """samples.csv or rounds.csv, numbers as numbers (a value that is not one: NaN, which the
    reader's problems count); None where the file is missing or not a readable CSV."""
    if data is None:
        return None
    try:
        frame = parse(data)
    except CSV_ERRORS:
        return None
    for column in [c for c in NUMBERS.get(name, ()) if c in frame]:
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame


def table(data: bytes | None, columns: Sequence[str], **options) -> pd.DataFrame | None:
    """A table read beside measurements.csv; None where the file is missing, not a readable
    CSV, or lacks `columns` (edited, or another tool's file)."""
    if data is None:
        return None
    try:
        frame = parse(data, **options)
    except CSV_ERRORS:
        return None
    return frame if set(columns) <= set(frame.columns) else None


def kernels(data: bytes | None) -> pd.DataFrame | None:
    """kernels.csv (its detail columns filled by the upgrade where an older run lacks them)."""
    return table(data, [c for c in KERNEL_COLUMNS if c not in KERNEL_DETAIL_COLUMNS])


def typed_kernels(frame: pd.DataFrame) -> pd.DataFrame:
    for name in _KERNEL_NUMBERS:
        frame[name] = pd.to_numeric(frame[name], errors="coerce")
    return frame


def optree(data: bytes | None) -> pd.DataFrame:
    """optree.csv, its numbers as numbers (its names as written: an empty one stays "");
    empty, with its columns, where a run wrote none (nothing profiled, or a run from before the
    table) or it cannot be read."""
    frame = table(data, OPTREE_COLUMNS, keep_default_na=False,
                  na_values={c: [""] for c in _OPTREE_NUMBERS})
    if frame is None:
        return pd.DataFrame(columns=list(OPTREE_COLUMNS))
    for name in _OPTREE_NUMBERS:
        frame[name] = pd.to_numeric(frame[name], errors="coerce")
    return frame
