"""A run is never lost to what it does after measuring: a detector or a trace reader that raises
costs only its own output, named where a user looks (suites/harness/guarded_steps.py); and
Inductor's compile pool is limited before any timing (suites/harness/compile_pool.py)."""
import io
import json

import pandas as pd
import pytest

from kernels.base import Case
from suites.harness import round_checks as rc
from suites.harness.contention import LoadMeter, RoundLoad
from suites.traces.call_profile import CallProfile
from suites.traces.findings import detectors
from specs import PROFILE, run_spec

CASE = Case.make("matmul_add", {"M": 8, "N": 8, "K": 8}, "float32", "cpu")
DETECTOR_FAILED = "findings: detector launch_gaps failed: KeyError: 'ts'"
READER_FAILED = "optree.csv: trace reader op_tree failed: RuntimeError: no parent for a launch"


def launch_gaps(ctx):
    """A detector meeting a trace shape it has never seen."""
    raise KeyError("ts")
    yield  # a generator, as the detectors are


def _clean_rounds(monkeypatch):
    """Findings are stated of ok rows only: every round clean whatever this machine's load, so
    the failing detector runs (the timing itself is not what is tested)."""
    monkeypatch.setattr(LoadMeter, "stop", lambda self: RoundLoad(0.1, others_cores=0.0))
    monkeypatch.setattr(rc, "off", lambda *args: "")
    monkeypatch.setattr(rc, "stall", lambda *args: "")


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory):
    """The tests' smallest profiled run, in-process, with one detector and the op tree reader
    raising; the reader notes how many rows measurements.csv held each time it was asked."""
    from suites.harness import runner

    out, rows_on_disk = tmp_path_factory.mktemp("failing"), []

    def op_tree(self):
        rows_on_disk.append(len(pd.read_csv(out / "measurements.csv")))
        raise RuntimeError("no parent for a launch")

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(detectors, "DETECTORS", (launch_gaps, *detectors.DETECTORS))
        monkeypatch.setattr(CallProfile, "op_tree", op_tree)
        _clean_rounds(monkeypatch)
        console = io.StringIO()
        result = runner.run(run_spec(out, CASE, ["addmm"], profile=PROFILE), stream=console)
    return out, result, console.getvalue(), rows_on_disk


def test_a_failing_detector_and_trace_reader_lose_no_row(failing_run):
    out, result, console, rows_on_disk = failing_run
    assert json.loads((out / "run.json").read_text())["state"] == "complete"
    frame = pd.read_csv(out / "measurements.csv")
    assert sorted(frame["variant"]) == ["addmm", "eager"] and (frame["status"] == "ok").all()
    assert len(result.frame) == 2
    # The rows were on disk before any profile was read.
    assert rows_on_disk and min(rows_on_disk) == 2
    # The other readers and detectors still ran.
    assert set(pd.read_csv(out / "kernels.csv")["variant"]) == {"eager", "addmm"}
    assert pd.read_csv(out / "optree.csv").empty
    findings = pd.read_csv(out / "findings.csv")
    assert (findings["code"] != "step_failed").any()
    failed = findings[findings["code"] == "step_failed"]
    for variant in ("eager", "addmm"):
        said = set(failed.loc[failed["variant"] == variant, "statement"])
        assert {DETECTOR_FAILED, READER_FAILED} <= said, said
    # A detector that reads the tree (against the baseline's) fails on its own, by name.
    assert (failed["statement"] == "findings: detector op_tree_diff failed: RuntimeError: "
                                   "no parent for a launch").sum() == 1
    assert (failed["severity"] == "warning").all()
    assert not failed.duplicated(["variant", "statement"]).any()


def test_the_failure_is_named_on_the_console_and_in_the_report(failing_run):
    from suites.reports.run.build import write_report

    out, _, console, _ = failing_run
    # Once each, at the first row it hit, though it hit every row twice (journal and end).
    assert console.count(DETECTOR_FAILED) == 1 and console.count(READER_FAILED) == 1, console
    assert f"{CASE.id} eager: {DETECTOR_FAILED}; the row is kept" in console
    page = write_report(out).read_text()
    assert "findings: detector launch_gaps failed: KeyError" in page
    assert "optree.csv: trace reader op_tree failed" in page


def test_a_failing_derive_is_a_finding_and_the_row_stays(monkeypatch):
    from suites.harness import guarded_steps
    from suites.harness.derived import new_row
    from kernels import registry

    op = registry.get_op("matmul_add")
    rows = [new_row("matmul_add", CASE, registry.get_variant("matmul_add", v), op, 1)
            for v in ("eager", "addmm")]

    def derive(row, peaks):
        if row.variant == "addmm":
            raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(guarded_steps, "derive", derive)
    failed = guarded_steps.derive_rows(rows, None)
    assert [(f["variant"], f["statement"]) for f in failed] == [
        ("addmm", "derived columns: derive failed: ZeroDivisionError: float division by zero")]


def test_the_start_up_limits_inductors_compile_pool(tmp_path, monkeypatch):
    from torch._inductor import config

    from suites.harness import compile_pool, runner

    from torch._inductor.async_compile import AsyncCompile

    monkeypatch.delenv(compile_pool.USER_SETTING, raising=False)
    # Inductor's own patch (monkeypatch would delete the setting on undo): as on 16 CPUs.
    with config.patch(compile_threads=16):
        env = runner._start(run_spec(tmp_path, CASE), io.StringIO())
        assert config.compile_threads == 1 and env["inductor_compile_threads"] == 1
        # No pool starts, whatever compiles next (torch 2.11 and 2.13 alike skip it at 1).
        assert not AsyncCompile().use_process_pool()


def test_a_users_own_compile_threads_stand(monkeypatch):
    from torch._inductor import config

    from suites.harness import compile_pool

    monkeypatch.setenv(compile_pool.USER_SETTING, "4")
    with config.patch(compile_threads=4):  # as Inductor read it from the variable
        assert compile_pool.limit_compile_pool() == 4 and config.compile_threads == 4
