"""The audit of a folder (`python -m suites.report --check FOLDER`): 0 contradictions on what
fusebench writes, and each corruption named by its check's code, with both sources."""
from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from suites.report import audit_folder, main as report_main

ROOT_OF_ANSWER = "## The answer"


@pytest.fixture
def run(tiny_run, tmp_path):
    """A copy of the session's tiny run (read only), to corrupt."""
    out, _ = tiny_run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    return copy


def _codes(folder) -> set[str]:
    return {c.check for c in audit_folder(folder).found}


def _edit(folder, name, change):
    frame = pd.read_csv(folder / name)
    change(frame)
    frame.to_csv(folder / name, index=False)


def test_a_run_as_written_has_no_contradiction(tiny_run, capsys):
    out, result = tiny_run
    found = audit_folder(out)
    assert found.tested > 20 and not found.found, "\n".join(found.lines())
    assert "audit of run folder" in result.stdout and "0 contradictions" in result.stdout
    assert report_main(["--check", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"audit of run folder {out}: 0 contradictions")


def _judged(frame):
    return frame["roofline_bound"].isin(["compute", "memory", "overhead"])


def test_a_bound_against_its_own_numbers_is_found(run):
    flip = {"compute": "memory", "memory": "compute", "overhead": "compute"}
    _edit(run, "measurements.csv", lambda f: f.__setitem__(
        "roofline_bound", f["roofline_bound"].map(lambda b: flip.get(b, b))))
    assert {"bound_rule", "bound_finding"} <= _codes(run)


def test_a_ridge_its_peaks_do_not_give_is_found(run):
    _edit(run, "measurements.csv", lambda f: f.__setitem__("ridge", f["ridge"] * 2))
    assert "bound_ridge" in _codes(run)


def test_an_answer_the_tables_do_not_give_is_found(run):
    md = (run / "report.md").read_text()
    at = md.index(ROOT_OF_ANSWER) + len(ROOT_OF_ANSWER) + 2
    (run / "report.md").write_text(md[:at] + "Fusion pays off everywhere." + md[md.index("\n",
                                                                                        at):])
    assert {"answer_recomputed", "answer_md_html"} <= _codes(run)


def test_more_cores_than_the_machine_has_and_a_borrowed_wait_are_found(run):
    cores = json.loads((run / "env.json").read_text())["cpu_count"]

    def busy(frame):
        frame["reason"] = frame["reason"].astype(object)
        frame.loc[0, "others_cores"] = cores + 0.5
        frame.loc[1, "wait_frac"] = 0.0
        frame.loc[1, "reason"] = "the timing's threads waited for a CPU for 40% of the share's time"
    _edit(run, "rounds.csv", busy)
    assert {"cores", "share_wait"} <= _codes(run)


def test_an_impossible_number_is_found(run):
    _edit(run, "findings.csv", lambda f: f.__setitem__(
        "statement", f["statement"].where(f.index != 0, "1e+302 s of a inf s step")))
    _edit(run, "measurements.csv", lambda f: f.__setitem__("host_us", f["host_us"] * 0 + 1e302))
    assert "finite" in _codes(run)


def test_an_op_longer_than_its_call_in_a_clean_profile_is_found(run):
    _edit(run, "optree.csv", lambda f: f.__setitem__("total_us", f["total_us"] * 1e4))
    assert "op_longer_than_call" in _codes(run)


def test_a_contended_profile_stated_as_fact_is_found(run):
    frame = pd.read_csv(run / "measurements.csv")
    row = frame[_judged(frame)].iloc[0]
    _edit(run, "measurements.csv", lambda f: f.__setitem__(
        "profile_state", f["profile_state"].where(f["case_id"] + f["variant"]
                                                  != row["case_id"] + row["variant"],
                                                  "contended")))
    assert {"bound_unclean_profile", "unclean_unmarked"} <= _codes(run)


def test_a_folder_that_is_no_folder_of_ours_is_one_line_exit_2(tmp_path, capsys):
    assert report_main(["--check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fusebench: error: ") and err.count("\n") == 1


def test_the_ladder_of_a_run_has_no_contradiction_and_a_bent_break_even_is_found(tiny_run,
                                                                                 tmp_path):
    from suites.reports.ladder.command import main as collect

    out, _ = tiny_run
    runs = tmp_path / "runs"
    shutil.copytree(out, runs / "matmul_add")
    assert collect([str(runs), "--out", str(tmp_path / "ladder")]) == 0
    ladder = tmp_path / "ladder"
    found = audit_folder(ladder)
    assert found.tested > 0 and not found.found, "\n".join(found.lines())

    def counted(frame):  # a count of calls where the interval does not say faster
        frame["change"] = "inconclusive"
        frame["calls"] = 19.0
        frame["verdict"] = "after 19 calls"
    _edit(ladder, "breakeven.csv", counted)
    assert {"breakeven_rule", "breakeven_recomputed"} <= _codes(ladder)
