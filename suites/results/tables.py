"""The run tables on disk: measurements.csv, kernels.csv, samples.csv, rounds.csv,
findings.csv and optree.csv written from typed rows (reader.py reads them back)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from suites.results import atomic, journal
from suites.results.columns import (BY_NAME, FINDING_COLUMNS, KERNEL_COLUMNS, LEADING, METRICS,
                                    OPTREE_COLUMNS, ROUND_COLUMNS, SAMPLE_COLUMNS)
from suites.results.row import ResultRow

MEASUREMENTS_CSV = journal.MEASUREMENTS_CSV
KERNELS_CSV, SAMPLES_CSV, ROUNDS_CSV, FINDINGS_CSV = (
    "kernels.csv", "samples.csv", "rounds.csv", "findings.csv")
OPTREE_CSV = "optree.csv"  # the op tree of each (case, variant)
TABLES = (MEASUREMENTS_CSV, KERNELS_CSV, SAMPLES_CSV, ROUNDS_CSV, FINDINGS_CSV, OPTREE_CSV)


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
    measurements.csv last, so a case found there has the other rows given with it. The runner
    gives its rows, samples and rounds here, and what its profiles give after (append_readings),
    so a trace that no reader understands cannot cost the rows: a kill between the two leaves
    that case without kernels, findings and op tree rows, as a failed reader would."""
    frames = table_frames(rows, kernel_rows, sample_rows, round_rows, finding_rows, optree_rows)
    for name in sorted(frames, key=lambda n: n == MEASUREMENTS_CSV):
        journal.append(out_dir / name, frames[name])


def append_readings(out_dir: Path, kernel_rows, finding_rows, optree_rows) -> None:
    """What one case's profiles give (kernels.csv, findings.csv, optree.csv) at the end of their
    tables, after the case's rows (append_tables)."""
    frames = table_frames((), kernel_rows, (), (), finding_rows, optree_rows)
    for name in (KERNELS_CSV, FINDINGS_CSV, OPTREE_CSV):
        journal.append(out_dir / name, frames[name])


def param_columns(frame: pd.DataFrame) -> list[str]:
    """The op's parameter columns: the writer puts them between the identity columns and
    `status`, so a metric column that a newer version adds (after `status`) is never taken for
    one."""
    names = list(frame.columns)
    end = names.index("status") if "status" in names else len(names)
    return [c for c in names[:end] if c not in BY_NAME]
