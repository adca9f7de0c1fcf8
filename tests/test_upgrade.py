"""A run folder written before run.json said its schema version (tests/fixtures/run_folders/
schema_v0, written by main at 8cd45f5) is read through the upgrade, by the reader, the report,
compare, collect and a resume; an older folder still has the columns it lacks filled, and a
folder of this version that lacks one says so."""
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from suites.reports.compare.command import main as compare
from suites.reports.ladder.command import main as collect
from suites.reports.run.build import write_report
from suites.results.columns import KERNEL_COLUMNS, KERNEL_DETAIL_COLUMNS
from suites.results.journal import SCHEMA_VERSION, RunState
from suites.results.reader import RunFolder, read_run
from suites.results.upgrade import MEASUREMENT_COLUMNS, with_empty
from test_end_to_end import assert_finished, run_suite

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "run_folders" / "schema_v0"
# The overrides it was made with (its .hydra/overrides.yaml): a resume must give the same.
OVERRIDES = ["suite=matmul_add", "suite.sizes=[64,128]", "suite.dtypes=[float32]",
             "suite.variants=[eager,addmm]", "timing=quick", "calibrate=false"]
CASES = ["M64-N64-K64-fp32", "M128-N128-K128-fp32"]


@pytest.fixture
def v0(tmp_path):
    """A copy of the fixture: the readers write into a run folder (plots, a report)."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "v0"))


def _edit(file: Path, change) -> None:
    frame = pd.read_csv(file)
    change(frame).to_csv(file, index=False)


def _edit_state(folder: Path, **fields) -> None:
    state = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**state, **fields}))


def test_a_run_says_its_schema_version(tmp_path):
    RunState(tmp_path, planned=1).save()
    assert json.loads((tmp_path / "run.json").read_text())["schema_version"] == SCHEMA_VERSION
    assert RunFolder(tmp_path).version == SCHEMA_VERSION


def test_the_fixture_reads_as_version_0_with_every_current_column(v0):
    run = read_run(v0)
    assert "schema_version" not in run.state and run.version == 0
    assert run.problems == []
    written = pd.read_csv(v0 / "measurements.csv")
    assert set(MEASUREMENT_COLUMNS) <= set(run.measurements.columns)
    assert run.measurements["median_us"].tolist() == written["median_us"].tolist()
    assert set(KERNEL_COLUMNS) <= set(run.kernels.columns)
    assert len(run.optree) == run.state["rows"]["optree.csv"]
    assert len(run.findings) == run.state["rows"]["findings.csv"]


def test_an_older_folder_has_what_it_lacks_filled(v0):
    """Older still: no reason, rounds or kernel_us column, no kernel details, no op trees."""
    _edit(v0 / "measurements.csv", lambda f: f.drop(columns=["reason", "rounds", "kernel_us"]))
    _edit(v0 / "kernels.csv",
          lambda f: f.drop(columns=[c for c in KERNEL_DETAIL_COLUMNS if c in f.columns]))
    (v0 / "optree.csv").unlink()
    run = RunFolder(v0)
    rows = run.measurements
    assert (rows["reason"] == "").all() and rows[["rounds", "kernel_us"]].isna().all().all()
    assert run.kernels["gemm_tflops"].isna().all() and len(run.kernels) == 8
    assert run.optree.empty
    assert run.problems == []  # expected of a run that old: nothing to say
    page = write_report(v0).read_text()
    assert "no op trees" in page and "M128-N128-K128-fp32" in page


def test_a_folder_of_this_version_lacking_a_column_says_so(v0):
    _edit_state(v0, schema_version=SCHEMA_VERSION)
    # This version's columns, all but kernel_us.
    _edit(v0 / "measurements.csv",
          lambda f: with_empty(f, MEASUREMENT_COLUMNS).drop(columns=["kernel_us"]))
    run = RunFolder(v0)
    assert run.measurements["kernel_us"].isna().all()
    assert f"{v0 / 'measurements.csv'}: no column(s) kernel_us (edited, or written by another " \
           "tool): read as empty" in run.problems


@pytest.mark.parametrize("value, said", [("two", "schema_version 'two' is not a version"),
                                         (SCHEMA_VERSION + 1, "written by a newer fusebench")])
def test_a_schema_version_garbled_or_newer_is_said(v0, value, said):
    _edit_state(v0, schema_version=value)
    assert any(said in p for p in RunFolder(v0).problems)


def test_the_report_reads_it(v0):
    page = write_report(v0).read_text()
    assert "no variant is faster than eager in any case by its 95% interval" in page
    results = page.split("Results (status ok)")[1].split("</table>")[0]
    assert all(case in results for case in CASES)


def test_compare_reads_it_against_itself_under_another_path(v0, tmp_path, capsys):
    again = shutil.copytree(v0, tmp_path / "again")
    assert compare([str(v0), str(again), "--out", str(tmp_path / "compare")]) == 0
    summary = [line for line in capsys.readouterr().out.splitlines()
               if line.startswith("4 rows: ")]
    # Identical rounds: never faster or slower (equivalent, or inconclusive where 3 rounds spread wide).
    assert summary and "faster" not in summary[0] and "slower" not in summary[0]
    rows = pd.read_csv(tmp_path / "compare" / "compare.csv")
    assert len(rows) == 4 and (rows["ratio"] == 1).all()


def test_collect_reads_it(v0, tmp_path, capsys):
    assert collect([str(v0), "--out", str(tmp_path / "ladder")]) == 0
    ladder = pd.read_csv(tmp_path / "ladder" / "ladder.csv")
    assert set(ladder["variant"]) == {"eager", "addmm"}
    assert set(ladder["shape"]) == {"M128-N128-K128"}  # the largest run, the reference not run


def test_a_resume_reads_it_and_writes_this_version(v0):
    """As a run killed before its second case's rows reached measurements.csv leaves it."""
    _edit(v0 / "measurements.csv", lambda f: f[f["case_id"] == CASES[0]])
    _edit_state(v0, state="interrupted", done=2)
    kept = pd.read_csv(v0 / "measurements.csv").set_index("variant")["median_us"]
    done = run_suite(*OVERRIDES, "resume=true", f"hydra.run.dir={v0}")
    # The kept rounds are the old version's as it measured them, 11.2 of 2 cores busy among them
    # (issue 36's impossible figure, from ticks over a short share): the audit names them.
    assert_finished(done, v0, allow=("cores",))
    run = read_run(v0)
    assert run.version == SCHEMA_VERSION and run.state["state"] == "complete"
    rows = run.measurements
    assert sorted(rows["case_id"]) == sorted(CASES * 2)
    again = rows[rows["case_id"] == CASES[0]].set_index("variant")["median_us"]
    assert (again == kept.loc[again.index]).all()  # kept as measured, not measured again
    assert run.problems == []
