"""Finding, its context, and the detector registry every findings module adds to."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterable

from suites.profiling.call_profile import CallProfile

SEVERITIES = ("info", "notice", "warning")


@dataclass(frozen=True)
class Finding:
    code: str
    severity: str  # info: how it is; notice: worth knowing; warning: costs time or is wrong
    statement: str
    evidence: dict = field(default_factory=dict)

    def as_row(self) -> dict:
        return {"code": self.code, "severity": self.severity, "statement": self.statement,
                "evidence": format_evidence(self.evidence)}


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

    device_type: str
    profile: CallProfile | None
    row: dict = field(default_factory=dict)
    baseline_row: dict | None = None
    baseline_profile: CallProfile | None = None
    dtype: str | None = None  # a suite row's dtype; for any other trace, what the user says

    @property
    def is_compiled(self) -> bool:
        if self.row.get("family"):
            return self.row["family"] == "compile"
        ops = self.profile.ops_per_call() if self.profile else {}
        return any(name.startswith("Torch-Compiled Region") for name in ops)

    @property
    def is_baseline(self) -> bool:
        return self.baseline_row is None or self.baseline_row is self.row

    def metric(self, name: str) -> float:
        value = self.row.get(name) if self.row else None
        if value is None and self.profile is not None:
            value = self.profile.metrics().get(name)
        return float("nan") if value is None else float(value)


Detector = Callable[[FindingContext], Iterable[Finding]]
DETECTORS: list[Detector] = []


def detector(fn: Detector) -> Detector:
    DETECTORS.append(fn)
    return fn


def run_detectors(ctx: FindingContext) -> list[Finding]:
    _load_detectors()
    found: list[Finding] = []
    for fn in DETECTORS:
        found.extend(fn(ctx))
    return found


def find_all(row: dict, profile, baseline_row, baseline_profile, device: str) -> list[dict]:
    """Findings of one suite row (only rows that ran have a profile to read)."""
    if row.get("status") != "ok" or profile is None:
        return []
    ctx = FindingContext(device_type=device.split(":")[0], profile=profile, row=row,
                         baseline_row=baseline_row if baseline_row is not row else None,
                         baseline_profile=baseline_profile if baseline_row is not row else None,
                         dtype=row.get("dtype"))
    return [f.as_row() for f in run_detectors(ctx)]


def _load_detectors() -> None:
    # Importing a module registers its detectors; kept here so core has no import cycle.
    from suites.findings import (bounds, compiled, copies, fusion, kernels, noise,  # noqa: F401
                                 timeline)
