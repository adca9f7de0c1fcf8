"""A Finding, and the context a detector reads: a profile, and for suite runs the row's column
values and the baseline's. Detectors live in their own modules; detectors.py lists them.

A row is a mapping of column name -> value (suites/results/columns.py names them), as
`ResultRow.record()` or a measurements.csv row gives it, so the engine needs nothing of the
harness or the results tables to run."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from suites.traces.findings.codes import Code, Severity
from suites.traces.call_profile import CallProfile
from suites.traces.device_time import on_gpu
from suites.results.columns import Status, column, empty

NAN = float("nan")
Row = Mapping[str, object]  # column name -> value: one row of measurements.csv


def column_value(row: Row | None, name: str):
    """A column of a row; NaN (a number) or None (text) where the row has no value: the key is
    missing, None, or NaN (pandas reads an empty text cell as NaN). A name that is no column
    is an error, so a typo cannot pass for a missing value."""
    column(name)
    value = row.get(name) if row is not None else None
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return empty(name)
    return value


def is_ok(row: Row) -> bool:
    """Whether the row ran and passed (status ok): only such a row's figures are results."""
    return column_value(row, "status") == Status.OK


@dataclass(frozen=True)
class Finding:
    code: Code
    severity: Severity
    statement: str
    evidence: dict = field(default_factory=dict)

    def as_row(self) -> dict:
        return {"code": str(self.code), "severity": str(self.severity),
                "statement": self.statement, "evidence": format_evidence(self.evidence)}


def step_failed(step: str, exc: Exception) -> Finding:
    """A step after the measurement (`findings: detector idle_gaps`, a trace reader) that raised:
    a trace of a shape never seen must cost that step's output, never the row. The statement
    names the step and the exception's first line, as a reader of findings.csv needs them."""
    lines = str(exc).strip().splitlines()
    error = f"{type(exc).__name__}: {lines[0][:300]}" if lines else type(exc).__name__
    return Finding(Code.STEP_FAILED, Severity.WARNING, f"{step} failed: {error}",
                   {"step": step.split(":")[0]})


def format_evidence(evidence: dict) -> str:
    """`host_us=24.1, device_us=3.2`: the numbers behind the statement, readable in a CSV cell."""
    parts = []
    for key, value in evidence.items():
        if isinstance(value, float):
            value = "nan" if math.isnan(value) else f"{value:.4g}"
        parts.append(f"{key}={value}")
    return ", ".join(parts)


@dataclass
class FindingContext:
    """What a detector may look at: a profile, and for suite runs the row and the baseline's."""

    profile: CallProfile | None
    row: Row | None = None  # column values (module docstring)
    baseline_row: Row | None = None
    baseline_profile: CallProfile | None = None
    dtype: str | None = None  # a suite row's dtype; for any other trace, what the user says

    @property
    def on_gpu(self) -> bool:
        """The trace decides: device activities in it mean a GPU (device_time.trace_mode)."""
        return self.profile is not None and on_gpu(self.profile.analysis.mode)

    @property
    def is_compiled(self) -> bool:
        family = self.value("family")
        if family:
            return family == "compile"
        ops = self.profile.ops_per_call() if self.profile else {}
        return any(name.startswith("Torch-Compiled Region") for name in ops)

    @property
    def is_baseline(self) -> bool:
        return self.baseline_row is None or self.baseline_row is self.row

    def value(self, name: str):
        """A column of the row (suites/results/columns.py); NaN or None where it has none."""
        return column_value(self.row, name)

    def baseline_value(self, name: str):
        return column_value(self.baseline_row, name)

    def metric(self, name: str) -> float:
        """A profile metric: from the row where it has it, else from the profile."""
        value = self.value(name)
        if (value is None or value != value) and self.profile is not None:
            value = self.profile.metrics().get(name)
        return NAN if value is None else float(value)
