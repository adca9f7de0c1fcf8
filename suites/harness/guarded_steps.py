"""The steps after a case is measured, run so that none can lose a row: the derived columns,
the trace readers (kernels.csv, optree.csv) and the detectors (findings.csv).

Their input is a trace of whatever shape the machine's profiler writes (nvjet kernels, a newer
Kineto, cuLaunchKernelEx, CUDA-graph replays), which no test has seen all of; one exception in
them used to lose every row of the run. So the runner journals a case's rows before it reads
its profiles, and a step that raises becomes a `step_failed` finding on its row, naming the
step and the exception (findings.csv, the report's findings, one console line): the row stands
without what that step adds.
"""
from __future__ import annotations

from typing import Callable

from suites.harness.derived import derive
from suites.results.columns import KEY
from suites.traces.findings.codes import Code
from suites.traces.findings.core import step_failed


def row_keys(row) -> dict:
    """The key a row's lines in the other tables join on (suite, case_id, variant)."""
    return dict(zip(KEY, (row.suite, row.case_id, row.variant)))


def failure_row(keys: dict, step: str, exc: Exception) -> dict:
    """The findings.csv row of a step that raised on the row of `keys`."""
    return {**keys, **step_failed(step, exc).as_row()}


def derive_rows(rows, peaks: dict | None) -> list[dict]:
    """derive() on every row, in place; a row it raises on keeps its measured columns, and the
    returned findings.csv rows say so."""
    failed = []
    for row in rows:
        try:
            derive(row, peaks)
        except Exception as exc:
            failed.append(failure_row(row_keys(row), "derived columns: derive", exc))
    return failed


def read(reader: Callable[[], list], step: str, keys: dict, failed: list[dict]) -> list:
    """A trace reader's rows (a profile's kernel_rows or op_tree); none where it raises, with a
    step_failed row added to `failed`."""
    try:
        return list(reader())
    except Exception as exc:
        failed.append(failure_row(keys, step, exc))
        return []


def once_each(findings: list[dict]) -> list[dict]:
    """`findings` with each step failure once per row: a resumed run keeps the failures of the
    rows it kept and meets them again when it derives and judges those rows anew."""
    seen, out = set(), []
    for f in findings:
        if f.get("code") == Code.STEP_FAILED:
            key = (*(f.get(k) for k in KEY), f.get("statement"))
            if key in seen:
                continue
            seen.add(key)
        out.append(f)
    return out


class FailureLines:
    """A console line for each distinct step failure, at the first row it hits; findings.csv
    holds every row (a detector that fails on one trace shape fails on every case of it)."""

    def __init__(self, say: Callable[[str], None]):
        self.say, self.said = say, set()

    def show(self, findings: list[dict]) -> None:
        for f in findings:
            if f.get("code") != Code.STEP_FAILED or f["statement"] in self.said:
                continue
            self.said.add(f["statement"])
            self.say(f"warning: {f['case_id']} {f['variant']}: {f['statement']}; the row is "
                     "kept without it (findings.csv names every row this step failed on)")
