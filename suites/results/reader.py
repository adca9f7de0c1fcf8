"""The one reader of run folders: the report, compare, collect, a resume and the tools read a
run folder's files through RunFolder.

A RunFolder reads each file once, when first asked for it, and keeps it: run.json (the run's
state and its schema version), env.json, and the tables, each brought up to this version's
schema (upgrade.py), checked and typed (table_reading.py). `problems` says, a line each, what
does not add up in what was read (folder_checks.py): the readers' banner shows those lines.
`op` is the run's block, a user's own one too (its module imported again from the `op:` its
run.json's config names, as the run did).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import pandas as pd

from suites.common.errors import InputError
from suites.results import folder_checks as checks
from suites.results import table_reading as read
from suites.results.columns import FINDING_COLUMNS, KERNEL_COLUMNS, KEY
from suites.results.journal import MEASUREMENTS_CSV, RUN_JSON
from suites.results.tables import (FINDINGS_CSV, KERNELS_CSV, OPTREE_CSV, ROUNDS_CSV,
                                   SAMPLES_CSV, TABLES)
from suites.results.upgrade import SCHEMA_COLUMNS, schema_version, upgrade, with_empty

if TYPE_CHECKING:  # the registry imports torch (2 s): only where a block is needed
    from kernels.base import Op

ENV_JSON = checks.ENV_JSON
# What a page cannot know, or recompute, without a file of the folder, by the keys it would
# have read there. samples.csv: every timed call, which the row's figures other than the
# rounds' mean summarise (they stand as the run wrote them, unchecked). env.json: the machine
# (gpu or cpu), its measured peaks (so % of peak), the threads, the device and the versions.
FROM_SAMPLES = ("median_us", "p10_us", "p90_us", "min_us", "iqr_rel", "slow_calls")
FROM_ENV = ("peaks", "machine", "threads", "device", "versions")


@dataclass(frozen=True)
class Gap:
    """A file the folder lacks, or holds in a shape no reader can use: `code` (no_samples,
    no_env, env_not_json, env_not_object), the keys unknown without it, and the line every page
    (the report's banner, compare's console and pages) says it in."""
    code: str
    unknown: tuple[str, ...]
    line: str


def _env_gap(folder: Path, data: bytes | None) -> Gap | None:
    """env.json missing, not JSON, or JSON but not an object: all of it unknown."""
    unknown = f"{', '.join(FROM_ENV)} unknown"
    if data is None:
        return Gap("no_env", FROM_ENV, f"{folder}: no {ENV_JSON}: {unknown}")
    try:
        env = json.loads(data.decode())
    except ValueError as exc:  # UnicodeDecodeError is one too
        return Gap("env_not_json", FROM_ENV, f"{folder / ENV_JSON}: not readable JSON "
                                             f"({type(exc).__name__}): {unknown}")
    if not isinstance(env, dict):
        return Gap("env_not_object", FROM_ENV, f"{folder / ENV_JSON}: a JSON "
                                               f"{type(env).__name__}, not an object: {unknown}")
    return None


class RunFolder:
    """One run folder's files, each read once. `required`: columns measurements.csv must have
    besides the key, status and median_us (a folder without one is an InputError)."""

    def __init__(self, folder: Path, required: Sequence[str] = ()):
        self.folder = Path(folder)
        self.required = tuple(required)
        self._bytes: dict[str, bytes | None] = {}
        self._judged: dict[str, pd.DataFrame | None] = {}  # tables read whose rows are checked
        self._notes: list[str] = []  # what reading a table found, said with the problems

    def _data(self, name: str) -> bytes | None:
        """A file's bytes, read once; None where it is missing (or not a file)."""
        if name not in self._bytes:
            try:
                self._bytes[name] = (self.folder / name).read_bytes()
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                self._bytes[name] = None
        return self._bytes[name]

    @cached_property
    def own_op(self) -> str | None:
        """The `module:Class` of a user's own block, as the run's config named it; None for a
        built-in suite."""
        config = (self.state or {}).get("config")
        suite = config.get("suite") if isinstance(config, dict) else None
        reference = suite.get("op") if isinstance(suite, dict) else None
        return reference if isinstance(reference, str) else None

    def load_own_op(self) -> str | None:
        """Register a user's block before its rows are read (its module from PYTHONPATH, as the
        run imported it); what went wrong, in one line, or None."""
        if self.own_op is None:
            return None
        from kernels import registry  # torch's import (2 s): only where a block is needed
        try:
            registry.load_op(self.own_op)
        except registry.OpLoadError as exc:
            return f"{self.folder}: suite.{exc}"
        return None

    @cached_property
    def op(self) -> Op:
        """The run's block: a built-in one, or the user's block its config names (the
        registry, and torch with it, imported here: history and collect read rows only)."""
        from kernels import registry
        frame = self.measurements
        suite = self.env.get("suite") or (frame["suite"].iloc[0] if len(frame) else None)
        if problem := self.load_own_op():
            raise InputError(problem)
        try:
            return registry.get_op(suite)
        except registry.UnknownNameError as exc:
            raise InputError(f"{self.folder}: {exc}") from None

    @cached_property
    def state(self) -> dict | None:
        """run.json (journal.py); None where there is none or it is not a JSON object."""
        data = self._data(RUN_JSON)
        try:
            state = json.loads(data.decode()) if data is not None else None
        except ValueError:
            return None
        return state if isinstance(state, dict) else None  # a list or a string: garbled

    @cached_property
    def _version(self) -> tuple[int, str | None]:
        return schema_version(self.state, self.folder / RUN_JSON)

    @property
    def version(self) -> int:
        """The schema the folder's files follow; 0: written before run.json said it."""
        return self._version[0]

    @cached_property
    def _env(self) -> tuple[dict, str | None]:
        return checks.env_checked(self.folder / ENV_JSON, self._data(ENV_JSON))

    @property
    def env(self) -> dict:
        """env.json's keys of the right type; {} where it is missing or unreadable."""
        return self._env[0]

    def _current(self, name: str, frame: pd.DataFrame) -> pd.DataFrame:
        """A table at this version's schema: upgraded from the folder's version; a column still
        missing was taken out (by hand, or another tool wrote the file): said, and empty."""
        frame = upgrade(name, frame, self.version)
        if lacking := [c for c in SCHEMA_COLUMNS.get(name, ()) if c not in frame.columns]:
            self._notes.append(f"{self.folder / name}: no column(s) {', '.join(lacking)} "
                               "(edited, or written by another tool): read as empty")
        return with_empty(frame, lacking)

    @cached_property
    def measurements(self) -> pd.DataFrame:
        """measurements.csv, typed (table_reading.py); an InputError where it cannot be read as
        one, or lacks a column the reader needs."""
        file = self.folder / MEASUREMENTS_CSV
        data = self._data(MEASUREMENTS_CSV)
        if data is None:
            raise InputError(f"{self.folder}: no {MEASUREMENTS_CSV}: not a run folder")
        frame = read.measurements(file, data, self.required)
        frame = read.typed_measurements(file, self._current(MEASUREMENTS_CSV, frame))
        self._judged[MEASUREMENTS_CSV] = frame
        return frame

    def _numbers_table(self, name: str) -> pd.DataFrame | None:
        frame = read.numbers_table(name, self._data(name))
        self._judged[name] = frame
        return frame

    @cached_property
    def samples(self) -> pd.DataFrame | None:
        """samples.csv; None where it is missing or unreadable (its problems say which)."""
        return self._numbers_table(SAMPLES_CSV)

    @cached_property
    def rounds(self) -> pd.DataFrame | None:
        """rounds.csv, the same way, as written: an older run's rounds have no mean_us, and its
        readers say which figure they used (compare: the median on both sides then)."""
        return self._numbers_table(ROUNDS_CSV)

    @cached_property
    def kernels(self) -> pd.DataFrame:
        """kernels.csv, its figures as numbers; empty (with its columns) where it is missing,
        unreadable, or lacks the columns every version wrote (another tool's file)."""
        frame = read.kernels(self._data(KERNELS_CSV))
        frame = pd.DataFrame(columns=list(KERNEL_COLUMNS)) if frame is None else \
            self._current(KERNELS_CSV, frame)
        return read.typed_kernels(frame)

    @cached_property
    def optree(self) -> pd.DataFrame:
        """optree.csv: the op tree of each (case, variant); empty where there is none."""
        return read.optree(self._data(OPTREE_CSV))

    @cached_property
    def findings(self) -> pd.DataFrame:
        """findings.csv; empty (with its columns) where it is missing or unreadable, or lacks
        one of them (then said)."""
        frame = read.table(self._data(FINDINGS_CSV), ())
        if frame is not None and (lacking := [c for c in FINDING_COLUMNS if c not in frame]):
            self._notes.append(f"{self.folder / FINDINGS_CSV}: no column(s) "
                               f"{', '.join(lacking)} (edited or from another tool): its "
                               "findings are left out")
            frame = None
        return pd.DataFrame(columns=list(FINDING_COLUMNS)) if frame is None else frame

    @cached_property
    def gaps(self) -> tuple[Gap, ...]:
        """The files the folder lacks or cannot be read as what they are, and what is unknown
        without them (their lines are among `problems`)."""
        gaps = []
        # samples.csv is the largest file: looked for, not read, where no one has read it.
        if (self._bytes[SAMPLES_CSV] is None if SAMPLES_CSV in self._bytes
                else not (self.folder / SAMPLES_CSV).is_file()):
            gaps.append(Gap("no_samples", FROM_SAMPLES,
                            f"{self.folder}: no {SAMPLES_CSV}: {', '.join(FROM_SAMPLES)} cannot "
                            "be recomputed from the timed calls (they stand as the run wrote "
                            "them)"))
        if env := _env_gap(self.folder, self._data(ENV_JSON)):
            gaps.append(env)
        return tuple(gaps)

    @property
    def problems(self) -> list[str]:
        """What does not add up in the folder, a line each: in measurements.csv, in the other
        tables read through this reader whose rows are checked (samples.csv, rounds.csv), and in
        the folder as a whole (run.json, env.json, files missing)."""
        self.measurements  # always judged: read now if no one has yet
        return self._table_problems() + self._folder_problems() + self._notes

    def _table_problems(self) -> list[str]:
        folder, state, problems = self.folder, self.state, []
        for name in TABLES:
            data = self._bytes.get(name)
            if checks.ends_cut(data) if data is not None else \
                    checks.last_byte_cut(folder / name):
                problems.append(f"{folder / name}: cut inside its last row (no line end): that "
                                "row is partial")
            frame = self._judged.get(name)
            if name in self._judged and frame is None and data is not None:
                problems.append(f"{folder / name}: not a readable CSV: its rows are left out")
            if frame is None:
                continue
            if bad := checks.not_numbers(name, data, frame):
                problems.append(f"{folder / name}: {bad} value(s) in numeric columns are not "
                                "numbers (garbled): read as missing")
            if line := checks.row_count(folder, name, frame, state):
                problems.append(line)
        return problems

    def _folder_problems(self) -> list[str]:
        folder, measurements, problems = self.folder, self.measurements, []
        twice = int(measurements.duplicated(list(KEY)).sum())
        if twice:
            problems.append(f"{folder}: {twice} row(s) of {MEASUREMENTS_CSV} are there twice")
        if self.state is None and self._data(RUN_JSON) is not None:
            problems.append(f"{folder / RUN_JSON}: garbled (not a JSON object): whether the run "
                            "completed is unknown")
        elif self.state is None:
            problems.append(f"{folder}: no {RUN_JSON}: whether the run completed is unknown")
        if self._version[1]:
            problems.append(self._version[1])
        gaps = self.gaps
        problems += [gap.line for gap in gaps]
        if self._env[1] and not any(gap.unknown == FROM_ENV for gap in gaps):
            problems.append(self._env[1])  # keys of the wrong type in a readable object
        if impossible := measurements.attrs.get("impossible"):
            problems.append(f"{folder / MEASUREMENTS_CSV}: {impossible}: read as missing")
        if not (folder / FINDINGS_CSV).is_file():
            problems.append(f"{folder}: no {FINDINGS_CSV}: no findings to show")
        return problems


def read_run(folder: Path, required: Sequence[str] = (), samples: bool = True) -> RunFolder:
    """A run folder with measurements.csv read (an InputError here if it cannot be), and its
    samples.csv and rounds.csv unless `samples` is False (the largest files, often unneeded)."""
    run = RunFolder(folder, required)
    run.measurements  # read now: a bad file is an error here, not in the middle of a report
    if samples:
        run.samples
        run.rounds
    return run


def read_state(folder: Path) -> dict | None:
    """run.json of a run folder; None where there is none or it cannot be read."""
    return RunFolder(folder).state
