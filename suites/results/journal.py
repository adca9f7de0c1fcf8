"""A run's rows on disk as they are measured, and its state in run.json.

Each finished case appends its rows to measurements.csv, kernels.csv, samples.csv, rounds.csv
and findings.csv, flushed to disk, so a crash, a kill -9 or a full disk loses at most the case
in flight. At the end of the run (or when it is interrupted) the tables are written once more,
whole and atomically, with the run's final figures (the end-of-run peak probe, findings across
rows). run.json says what was planned, how much is done, and whether the run is running,
complete, interrupted or failed, with times, host and pid; readers check a folder by it. It
also says which schema the folder's files follow (`schema_version`), so that the reader can
bring an older folder up to this one (upgrade.py).
"""
from __future__ import annotations

import errno
import json
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from suites.results import atomic

RUN_JSON = "run.json"
SWEEP_JSON = "sweep.json"  # a multirun's planned jobs (suites/config/hydra_sweep.py)
MEASUREMENTS_CSV = "measurements.csv"
RUNNING, COMPLETE, INTERRUPTED, FAILED = "running", "complete", "interrupted", "failed"
# The schema of the files this version writes. A change to them (a column, a file, a meaning)
# bumps it, and upgrade.py gains the step that brings a folder of the version before up to it.
SCHEMA_VERSION = 6


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


@dataclass
class RunState:
    """run.json's content, rewritten atomically whenever it changes."""

    folder: Path
    planned: int  # (case, variant) rows the config asks for
    done: int = 0
    state: str = RUNNING
    started: str = field(default_factory=_now)
    finished: str | None = None
    reason: str = ""  # why it stopped, when it did not complete
    config: dict = field(default_factory=dict)  # the resolved config: a resume must match it
    job: dict | None = None  # {"num", "overrides"} of a multirun job: collect finds a missing one
    # Once the tables are written whole: rows per file (a reader finds a file cut at a row
    # boundary by it) and measurements.csv's rows per status (the exit code is taken from it).
    rows: dict = field(default_factory=dict)
    statuses: dict = field(default_factory=dict)

    def save(self) -> None:
        record = {"schema_version": SCHEMA_VERSION, "state": self.state,
                  "planned": self.planned, "done": self.done, "started": self.started,
                  "finished": self.finished, "reason": self.reason,
                  "host": socket.gethostname(), "pid": os.getpid(),
                  "cluster_job": cluster_job(), "job": self.job,
                  "rows": self.rows, "statuses": self.statuses, "config": self.config}
        atomic.write_text(self.folder / RUN_JSON, json.dumps(record, indent=2) + "\n")

    def advance(self, rows: int) -> None:
        self.done += rows
        self.save()

    def written(self, frames: dict[str, pd.DataFrame]) -> None:
        """The tables as just written whole (saved with the next end())."""
        self.rows = {name: len(frame) for name, frame in frames.items()}
        counts = frames[MEASUREMENTS_CSV]["status"].value_counts()
        self.statuses = {str(status): int(n) for status, n in counts.items()}

    def end(self, state: str, reason: str = "") -> None:
        self.state, self.reason, self.finished = state, reason, _now()
        self.save()


def append(path: Path, frame: pd.DataFrame) -> None:
    """Rows at the end of a CSV (its header first if the file is empty), on disk when it returns;
    or, where they do not all fit (a full disk), none of them and an OSError."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        text = frame.to_csv(header=size == 0, index=False).encode("utf-8")
        try:
            _write_all(fd, text, path)
            os.fsync(fd)
        except OSError:
            # A disk that fills inside the case's rows leaves part of one written: cut back to
            # the rows before them, so the table stays whole rows (a resume measures the case).
            os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def _write_all(fd: int, text: bytes, path: Path) -> None:
    """All of `text`, or OSError. One write call for the case's rows, so a kill lands before or
    after it, not inside a row; a full disk makes that call write only part and say so by its
    count, not by an error, so a short count is taken for one."""
    written = os.write(fd, text)
    while written < len(text):
        more = os.write(fd, text[written:])
        if more == 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        written += more


def disk_full(exc: BaseException | None) -> OSError | None:
    """The full disk (or full quota) behind `exc`: itself, or an error it was raised while
    handling (the harness writes the tables whole after a failure, and that fails too); None if
    there is none. The run cannot go on, and what it wrote is kept (run_suite.py says so)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def cluster_job() -> str | None:
    """The SLURM job this process runs in (array job and task for a sweep), or None."""
    env = os.environ
    if env.get("SLURM_ARRAY_JOB_ID"):
        return f"{env['SLURM_ARRAY_JOB_ID']}_{env.get('SLURM_ARRAY_TASK_ID', '')}"
    return env.get("SLURM_JOB_ID")


def still_running(state: dict) -> bool:
    """A `running` run.json whose process is alive (on this machine; another host's run is
    taken to be alive: it cannot be checked from here, unless it is this very cluster job's
    earlier attempt, which a requeue ended)."""
    if state.get("state") != RUNNING:
        return False
    if state.get("cluster_job") and state.get("cluster_job") == cluster_job():
        return False
    if state.get("host") != socket.gethostname():
        return True
    try:
        os.kill(int(state.get("pid")), 0)
    except (OSError, TypeError, ValueError):
        return False
    return True
