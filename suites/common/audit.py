"""The audit's one shape: a contradiction between two things a folder says, or between a
statement and the numbers it rests on, each named with its source (a file, a column, a row).

Every page of a run (the console, report.md and report.html, findings.csv), of a ladder
(`collect`), of `compare` and of `history` is audited by checks of its own room
(an audit.py in the room that writes those pages); each check returns Contradictions, and `python -m
suites.report --check FOLDER` prints them and exits 1 on any. A check states what it tests in
its `check` code, so a test asserts codes, not sentences.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Contradiction:
    check: str    # which check found it, a code: "bound_ridge", "op_longer_than_call", ...
    where: str    # the row, case or page it concerns: "M512-N512-K512-bf16 eager"
    says: str     # one source: what it states, and where ("findings.csv: memory-bound at 85 FLOP/B")
    against: str  # the other source or the evidence ("env.json: ridge 108 FLOP/B")

    def line(self) -> str:
        return f"[{self.check}] {self.where}: {self.says} | against: {self.against}"


@dataclass(frozen=True)
class Audit:
    """What one folder's audit found: the contradictions, and how many statements it tested
    (a count of 0 tested is itself worth saying: nothing was checked)."""

    folder: str
    kind: str      # run, ladder, compare, history
    tested: int
    found: tuple[Contradiction, ...]

    def lines(self) -> list[str]:
        head = (f"audit of {self.kind} folder {self.folder}: {len(self.found)} contradiction"
                f"{'s' * (len(self.found) != 1)} in {self.tested} statement"
                f"{'s' * (self.tested != 1)} tested")
        return [head, *(f"  {c.line()}" for c in self.found)]


class Tally:
    """Collects a room's checks: each `test` is one statement tested; `contradict` records one
    that failed. Keeps the count honest without each check counting by hand."""

    def __init__(self):
        self.tested = 0
        self.found: list[Contradiction] = []

    def test(self, holds: bool, check: str, where: str, says: str, against: str) -> bool:
        self.tested += 1
        if not holds:
            self.found.append(Contradiction(check, where, says, against))
        return holds

    def extend(self, other: "Tally") -> None:
        self.tested += other.tested
        self.found += other.found

    def audit(self, folder, kind: str) -> Audit:
        return Audit(str(folder), kind, self.tested, tuple(self.found))


def finite(value) -> bool:
    """A number that a page may state: not inf, not absurd (a trace event of 1e302 s)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return True  # not a number: not this check's business
    return math.isnan(number) or (math.isfinite(number) and abs(number) < 1e15)


def every_number_finite(values: Iterable) -> bool:
    return all(finite(v) for v in values)


AUDIT_FAILED = "audit_failed"


def audit_safely(audit, folder, kind: str) -> Audit:
    """`audit(folder)` of a folder whose kind is known, where an audit that raises (a page it
    cannot read, a bug in a check) is itself a finding: the command that wrote the pages still
    ends, and says the statements went untested."""
    try:
        return audit(folder)
    except Exception as exc:  # noqa: BLE001 - reported as a finding, not swallowed
        return Audit(str(folder), kind, 0, (Contradiction(
            AUDIT_FAILED, str(folder), f"the audit raised {type(exc).__name__}: {exc}",
            "every page a folder holds must be readable by its audit"),))
