"""Top-k hotspots from the op tree (the series' row_limit=15 table), and optree.csv through a
run: written by the runner, read back, kept by a resume, shown in the report, and an older run
folder without it still reported."""
import json
import shutil

import pandas as pd
import pytest

from kernels.base import Case
from suites.traces import op_tree as ot
from suites.reports.run import hotspots
from suites.reports.run.build import write_report
from suites.results.columns import OPTREE_COLUMNS
from suites.results.resume import read_previous
from suites.results.reader import RunFolder
from suites.results.tables import OPTREE_CSV

CASE = Case.make("matmul_add", {"M": 8, "N": 8, "K": 8}, "float32", "cpu")


def node(path, calls, own, total, kind=ot.OP):
    names = path.split(ot.SEP)
    return {"path": path, "depth": len(names), "name": names[-1], "kind": kind,
            "calls_per_call": calls, "self_us": own, "total_us": total}


TREE = [{"path": ot.CALL, "depth": 0, "name": ot.CALL, "kind": "call", "calls_per_call": 1.0,
         "self_us": 5.0, "total_us": 100.0},
        node("aten::matmul", 1, 1.0, 60.0), node("aten::matmul > aten::mm", 1, 55.0, 59.0),
        node("aten::matmul > aten::mm > aten::copy_", 1, 4.0, 4.0),
        node("aten::add", 1, 20.0, 35.0), node("aten::add > aten::copy_", 2, 15.0, 15.0)]


def test_hotspots_rank_by_self_time_not_total():
    top = ot.hotspots(TREE)
    assert [h["name"] for h in top] == ["aten::mm", "aten::add", "aten::copy_", ot.CALL,
                                        "aten::matmul"]
    # aten::matmul has the second largest total but the least self time: the wrapper is last.
    matmul = top[-1]
    assert matmul["total_us"] == 60 and matmul["self_share"] == pytest.approx(0.01)
    copy = top[2]  # one name over two places in the tree, as key_averages groups it
    assert copy["calls_per_call"] == 3 and copy["self_us"] == 19
    assert copy["total_share"] == pytest.approx(0.19)
    assert [h["name"] for h in ot.hotspots(TREE, k=2)] == ["aten::mm", "aten::add"]


def test_the_hotspot_table_shows_shares_in_percent():
    table = hotspots.table(TREE)
    assert list(table["name"])[3] == "(the call: time in no op)"
    assert table.loc[0, "self_pct"] == 55 and table.loc[0, "total_pct"] == 59


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One tiny matmul_add case, eager and addmm, profiled, in-process (a few seconds)."""
    from specs import PROFILE, run_spec
    from suites.harness import runner

    out = tmp_path_factory.mktemp("optree")
    runner.run(run_spec(out, CASE, ["addmm"], profile=PROFILE))
    return out


def test_optree_is_written_by_the_run_and_read_back(tiny_run):
    table = RunFolder(tiny_run).optree
    assert list(table.columns) == list(OPTREE_COLUMNS)
    assert set(table["variant"]) == {"eager", "addmm"}
    calls = table[table["depth"] == 0]
    assert len(calls) == 2 and (calls["path"] == ot.CALL).all()
    eager = table[table["variant"] == "eager"]
    assert {"aten::matmul > aten::mm", "aten::add"} <= set(eager["path"])
    assert json.loads((tiny_run / "run.json").read_text())["rows"][OPTREE_CSV] == len(table)
    # Whole cases keep their trees when a run is resumed.
    kept = read_previous(tiny_run, 2).tables[OPTREE_CSV]
    assert len(kept) == len(table)


def test_the_report_shows_the_op_tree_diff_and_the_hotspots(tiny_run):
    page = write_report(tiny_run).read_text()
    trees = page.split("<h2>Op tree per call, against eager</h2>")[1].split("<h2>")[0]
    assert "aten::addmm + aten::copy_ replaced aten::mm + aten::add" in trees
    assert "<details><summary>" in trees and "aten::matmul" in trees
    spots = page.split("<h2>Hotspots: the top 15 ops per call by self time</h2>")[1]
    spots = spots.split("<h2>")[0]
    assert spots.count("<details>") == 1 and "(the call: time in no op)" in spots
    # Lower down than the answer, the results and the findings.
    assert page.index("Op tree per call") > page.index("All findings")


def test_an_older_run_folder_without_optree_still_reports(tiny_run, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(tiny_run, old)
    (old / OPTREE_CSV).unlink()
    assert RunFolder(old).optree.empty
    assert not [p for p in RunFolder(old).problems if "optree" in p]
    page = write_report(old).read_text()
    assert "no op trees" in page and "no hotspots" in page
    assert "What the profile says" in page
    # A resume of such a run keeps its cases; they simply have no tree.
    assert read_previous(old, 2).tables[OPTREE_CSV] == []


def test_a_tree_read_back_diffs_as_the_profile_did(tiny_run):
    table = RunFolder(tiny_run).optree
    trees = {v: rows.to_dict("records") for v, rows in table.groupby("variant")}
    said = ot.diff_sentence(ot.tree_diff(trees["eager"], trees["addmm"]))
    findings = pd.read_csv(tiny_run / "findings.csv")
    stated = findings.loc[findings["code"] == "op_tree_diff", "statement"]
    if len(stated):  # only an ok (clean) row gets findings
        assert stated.iloc[0] == f"op tree against the baseline: {said}"
