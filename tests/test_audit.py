"""The audit of a folder (`python -m suites.report --check FOLDER`): 0 contradictions on what
fusebench writes, and each corruption named by its check's code, with both sources."""
from __future__ import annotations

import json
import re
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


def test_a_folder_holding_runs_has_each_audited_and_a_bad_folder_stops_none(run, tmp_path,
                                                                            capsys):
    """`--check` on a sweep (its jobs, its ladder) or a results/ tree audits every folder
    fusebench wrote under it; a folder that is none among several is named, exit 2, and the
    others are audited all the same."""
    tree = tmp_path / "results"
    shutil.copytree(run, tree / "sweep" / "0")
    shutil.copytree(run, tree / "sweep" / "1")
    (tree / "sweep" / "notes").mkdir()
    _edit(tree / "sweep" / "1", "measurements.csv",
          lambda f: f.__setitem__("ridge", f["ridge"] * 2))
    assert report_main(["--check", str(tree)]) == 1
    out = capsys.readouterr().out
    assert out.count("audit of run folder") == 2 and "[bound_ridge]" in out
    assert report_main(["--check", str(tmp_path / "nothing"), str(tree / "sweep" / "0")]) == 2
    captured = capsys.readouterr()
    assert "nothing: no such folder" in captured.err
    assert f"audit of run folder {tree / 'sweep' / '0'}: 0 contradictions" in captured.out


def test_an_audit_that_raises_is_a_finding_not_a_crash(run, capsys):
    """An audit that cannot read a page (or a check with a bug) must not kill the command that
    wrote the pages: it is reported as `audit_failed`, exit 1 under --check."""
    from suites.common.audit import AUDIT_FAILED, audit_safely

    def broken(folder):
        raise KeyError("flops")

    found = audit_safely(broken, run, "run")
    assert [c.check for c in found.found] == [AUDIT_FAILED] and "KeyError" in found.lines()[1]
    (run / "env.json").write_text("{ not json")
    code = report_main(["--check", str(run)])
    out = capsys.readouterr().out
    assert code == 1 and out.startswith("audit of run folder"), out


def test_a_run_whose_rows_a_rerun_replaced_is_not_held_to_the_ladder(tiny_run, tmp_path):
    """collect keeps the newest of two runs holding the same rows; the older run's report.md
    speaks of its own rows, not the ladder's, so it is not held to the ladder's break-even."""
    from suites.reports.ladder.command import main as collect

    out, _ = tiny_run
    runs = tmp_path / "runs"
    old, new = runs / "old", runs / "rerun"
    shutil.copytree(out, old)
    shutil.copytree(out, new)
    env = json.loads((new / "env.json").read_text())
    env["created"] = "2999-01-01T00:00:00"
    (new / "env.json").write_text(json.dumps(env))
    md = (old / "report.md").read_text()
    said = re.search(r"it repays it at (\d+) of (\d+) cases", md)
    assert said is not None, md
    (old / "report.md").write_text(md.replace(
        said.group(0), f"it repays it at {int(said.group(2)) + 5} of {said.group(2)} cases"))
    assert collect([str(runs), "--out", str(tmp_path / "ladder")]) == 0
    found = audit_folder(tmp_path / "ladder")
    assert "ladder_vs_report" not in {c.check for c in found.found}, "\n".join(found.lines())


def test_a_tree_with_links_a_broken_run_and_a_runs_own_ladder_is_audited_whole(run, tmp_path,
                                                                               capsys):
    """Links to folders are not followed (a loop would never end, a `latest` link audit a run
    twice); a folder fusebench wrote whose audit cannot read it is a finding, not left out;
    a run's own `collect` folder (RUN/ladder) is audited beside the run."""
    from suites.reports.ladder.command import main as collect

    tree = tmp_path / "results"
    shutil.copytree(run, tree / "good")
    assert collect([str(tree / "good")]) == 0  # writes good/ladder
    (tree / "loop").mkdir()
    (tree / "loop" / "x").symlink_to(tree, target_is_directory=True)
    (tree / "latest").symlink_to(tree / "good", target_is_directory=True)
    (tree / "sweep" / "0").mkdir(parents=True)
    (tree / "sweep" / "0" / "measurements.csv").write_text("")
    assert report_main(["--check", str(tree)]) == 1
    out = capsys.readouterr().out
    assert out.count(f"audit of run folder {tree / 'good'}:") == 1
    assert f"audit of ladder folder {tree / 'good' / 'ladder'}:" in out
    assert f"audit of run folder {tree / 'sweep' / '0'}:" in out and "[audit_failed]" in out
