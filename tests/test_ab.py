"""The A/B design (python -m suites.compare --ab; suites/reports/ab): its order, its plan kept
and resumed, each row judged by its pairs, its compare folder audited like compare's, history
reading a design as a point a side, plain compare pointing at it, and one real design made
from two checkouts of this repository (run_suite.py for every run, a worktree for HEAD)."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from suites.common.errors import ConfigError
from suites.reports.ab import plan as plans
from suites.reports.ab.design import judge_design
from suites.reports.ab.pairs import Cell, judge_row
from suites.reports.ab.plan import Checkout, Plan
from suites.results.ab_folders import A, A2, AB_JSON, B, run_folder, run_name
from suites.reports.ab.revisions import commits_in, moved_lines, range_text
from suites.reports.compare import audit
from suites.compare import main as compare_main
from suites.reports.history import loading
from suites.reports.kit.change import Change
from suites.results.intervals import pair_ratio, planned_mde, t_quantile
from test_compare import write_run

ROOT = Path(__file__).resolve().parents[1]


def _plan(pairs=4, aa=False, overrides=("suite=matmul_add",)) -> Plan:
    return Plan(Checkout(A, "HEAD~1", "a" * 40, "/x"), Checkout(B, "HEAD", "b" * 40, "/y"),
                list(overrides), pairs, aa)


# --- the order and the plan -------------------------------------------------------------------

def test_the_order_alternates_so_a_trend_favours_neither_side():
    order = _plan(4).order()
    assert order == [(0, A), (0, B), (1, B), (1, A), (2, A), (2, B), (3, B), (3, A)]
    with_aa = _plan(2, aa=True).order()
    assert with_aa == [(0, A), (0, B), (0, A2), (1, A2), (1, B), (1, A)]


def test_the_design_defaults_yield_to_the_users_overrides():
    args = _plan(overrides=["suite=mlp", "profile=default", "+calibrate=true"]).arguments()
    assert args[:3] == ["suite=mlp", "profile=default", "+calibrate=true"]
    assert "profile=off" not in args and "calibrate=false" not in args
    assert {"triton_counters=off", "progress=false"} <= set(args)


def test_a_default_the_checkout_does_not_know_is_left_out(tmp_path):
    assert plans.knows(ROOT, "triton_counters=off") and plans.knows(ROOT, "timing=quick")
    assert not plans.knows(ROOT, "timing=no_such_preset")
    older = tmp_path / "older"  # a revision from before triton_counters
    (older / "conf" / "timing").mkdir(parents=True)
    (older / "conf" / "timing" / "quick.yaml").write_text("preset: quick\n")
    (older / "conf" / "profile").mkdir()
    (older / "conf" / "profile" / "off.yaml").write_text("enabled: false\n")
    (older / "conf" / "config.yaml").write_text("device: auto\ncalibrate: true\n")
    assert _plan().arguments(older) == ["suite=matmul_add", "timing=quick", "profile=off",
                                        "calibrate=false"]


def test_another_design_in_the_same_folder_is_refused_naming_what_differs(tmp_path):
    plans.save(_plan(4), tmp_path)
    kept = plans.load(tmp_path)
    assert kept.same_design(_plan(4)) == []
    assert _plan(6).same_design(kept) == []  # more pairs: the design extended
    diffs = _plan(3).same_design(kept)
    assert diffs == ["pairs: 4 there, 3 now (more pairs extend a design; fewer would leave runs "
                     "out)"]
    (tmp_path / AB_JSON).write_text("{not json")
    with pytest.raises(Exception, match="ab.json: not an A/B plan"):
        plans.load(tmp_path)
    with pytest.raises(ConfigError, match="--pairs 2"):
        plans.check_pairs(2)


# --- a row judged by its pairs ----------------------------------------------------------------

def test_pair_ratio_is_yuens_trimmed_mean_so_one_pair_astray_does_not_decide():
    # Three pairs: nothing set aside, a plain one-sample t on the log ratios.
    logs = [0.10, 0.12, 0.08]
    model = pair_ratio(logs)
    se = np.std(logs, ddof=1) / math.sqrt(3)
    assert model.trimmed == 0 and model.ratio.dof == 2
    assert model.ratio.low == pytest.approx(math.exp(0.10 - t_quantile(0.995, 2) * se))
    # Eight pairs, one 40% astray: one set aside each end, the rest winsorized.
    logs = [0.10, 0.12, 0.08, 0.11, 0.09, 0.10, 0.10, math.log(1.4)]
    model = pair_ratio(logs)
    kept = sorted(logs)[1:-1]
    wins = [kept[0]] + kept + [kept[-1]]
    se = np.std(wins, ddof=1) * math.sqrt(7 / (6 * 5))
    assert model.trimmed == 1 and model.ratio.dof == 5
    assert model.ratio.ratio == pytest.approx(math.exp(np.mean(kept)))
    assert model.ratio.low == pytest.approx(math.exp(np.mean(kept) - t_quantile(0.995, 5) * se))
    assert model.ratio.high < 1.14 and model.ratio.mde < 0.03  # the astray pair did not decide it
    # What N pairs buy, before any is run: a 2% (winsorized) spread, 8 pairs -> about 5%.
    assert 0.045 < planned_mde(0.02, 8) < 0.05
    assert planned_mde(0.02, 16) < planned_mde(0.02, 8)


def _cell(us, status="ok", reason=""):
    return Cell(status, reason, us, 1e-5, "float32")


def test_a_ten_percent_slowdown_in_steady_pairs_is_called_slower_and_a_a_is_not():
    rng = np.random.default_rng(3)
    shared = np.exp(0.15 * rng.standard_normal(8))  # the machine, shared by each pair
    a = [_cell(100 * s * math.exp(0.01 * rng.standard_normal())) for s in shared]
    b = [_cell(110 * s * math.exp(0.01 * rng.standard_normal())) for s in shared]
    row = judge_row(("matmul_add", "M128", "addmm"), a, b, 0.05)
    assert row["verdict"] == Change.SLOWER and 1.05 < row["ratio"] < 1.15
    assert row["mde"] < 0.05 and row["pairs"] == 8
    same = judge_row(("matmul_add", "M128", "addmm"), a, a[1:] + a[:1], 0.05)
    assert same["verdict"] != Change.SLOWER and same["verdict"] != Change.FASTER


def test_a_row_judged_by_its_ok_pairs_is_ok_on_both_sides_whatever_the_other_runs_said():
    rng = np.random.default_rng(5)
    a = [_cell(100 * math.exp(0.01 * rng.standard_normal())) for _ in range(5)]
    a += [_cell(0.0, "noisy", "too few clean rounds")] * 7
    b = [_cell(110 * math.exp(0.01 * rng.standard_normal())) for _ in range(12)]
    row = judge_row(("s", "c", "v"), a, b, 0.05)
    assert row["pairs"] == 5 and row["verdict"] == Change.SLOWER
    assert row["status_a"] == row["status_b"] == "ok"  # as compare's audit holds a judged row
    assert "A noisy (too few clean rounds) in 7 run(s)" in row["note"]


def test_pairs_a_row_is_not_ok_in_are_left_out_and_said_and_too_few_is_not_comparable():
    a = [_cell(100.0), _cell(101.0), _cell(99.0), _cell(100.0)]
    b = [_cell(100.0), _cell(0.0, "noisy", "too few clean rounds"), _cell(98.0), _cell(101.0)]
    row = judge_row(("s", "c", "v"), a, b, 0.05)
    assert row["pairs"] == 3 and "B noisy (too few clean rounds) in 1 run(s)" in row["note"]
    assert row["pair_ratios"].split(";")[1] == ""
    few = judge_row(("s", "c", "v"), a[:2], b[:2], 0.05)
    assert few["verdict"] == "not comparable" and "1 pair(s), 3 needed" in few["note"]
    only = judge_row(("s", "c", "v"), a, [None] * 4, 0.05)
    assert only["verdict"] == "only in A" and only["n_b"] == 0


# --- a design folder written by hand, judged, audited, read by history -----------------------

ROWS = [("M64", "eager", 100.0), ("M64", "addmm", 80.0), ("M128", "eager", 400.0),
        ("M128", "addmm", 300.0)]


def _design(tmp_path: Path, pairs=5, slower=1.10) -> tuple[Plan, Path]:
    """A design's folder as `--ab` leaves it: ab.json and runs/p0i_A, p0i_B; B's M128 addmm
    `slower` times A's; every run of a pair moved by the same machine state."""
    out = tmp_path / "design"
    plan = _plan(pairs)
    rng = np.random.default_rng(7)
    for i in range(pairs):
        state = math.exp(0.12 * rng.standard_normal())
        for label in (A, B):
            rows = [(case, variant, "ok", "", us * state * math.exp(0.005 * rng.standard_normal())
                     * (slower if (label, case, variant) == (B, "M128", "addmm") else 1.0))
                    for case, variant, us in ROWS]
            folder = write_run(run_folder(out, i, label), rows, seed=i * 2 + (label == B),
                               spread=0.005, mean=True)
            env = json.loads((folder / "env.json").read_text())
            env["created"] = f"2026-01-01T10:{i:02d}:{0 if label == A else 30:02d}"
            (folder / "env.json").write_text(json.dumps(env))
            plan.runs[run_name(i, label)] = {"state": "done", "seconds": 10.0}
    plans.save(plan, out)
    return plan, out


def test_a_design_folder_is_a_compare_folder_its_audit_holds(tmp_path, capsys):
    plan, out = _design(tmp_path)
    judge_design(plan, out, 0.05, say=lambda line: None)
    frame = pd.read_csv(out / "compare.csv")
    called = frame.set_index(["case_id", "variant"])["verdict"]
    assert called[("M128", "addmm")] == Change.SLOWER
    assert (called.drop(("M128", "addmm")) != Change.SLOWER).all()
    assert (frame["pairs"] == 5).all() and frame["drift_sd"].notna().all()
    result = audit.audit(out)
    assert result.found == () and result.tested > 20
    md = (out / "compare.md").read_text()
    assert "design: 5 pairs of runs" in md and "power: 5 pairs bought an mde of" in md
    assert "drift between runs, measured from the pairs" in md
    assert (out / "pairs.png").stat().st_size > 5000
    assert moved_lines(frame) == [line for line in moved_lines(frame) if "M128 addmm" in line]


def test_a_run_the_design_lacks_is_named_and_the_rest_judged(tmp_path):
    plan, out = _design(tmp_path)
    shutil.rmtree(run_folder(out, 2, B))
    plan.runs.pop("p03_B")
    lines = []
    judge_design(plan, out, 0.05, say=lines.append)
    text = "\n".join(lines)
    assert "B: p03_B: no rows: not run yet (resume the design)" in text
    frame = pd.read_csv(out / "compare.csv")
    assert (frame["pairs"] == 4).all()
    assert audit.audit(out).found == ()


def test_history_reads_each_side_of_a_design_as_one_point(tmp_path):
    _, out = _design(tmp_path, pairs=4)
    history = loading.load([out])
    assert len(history.runs) == 2  # A's 4 runs and B's 4: a point a side, not 8 points
    a, b = history.runs
    assert "A of A/B design" in a.label() and "B of A/B design" in b.label()
    key = ("matmul_add", "M128", "addmm")
    assert len(a.rounds[key]) == 4  # the runs are the point's rounds: their spread its interval
    assert b.rows[key]["mean_us"] / a.rows[key]["mean_us"] == pytest.approx(1.10, rel=0.03)
    assert any("read as one point a side" in note for note in history.notes)


def test_plain_compare_says_what_it_can_see_and_prints_the_ab_command(tmp_path, capsys):
    _, out = _design(tmp_path, pairs=3)
    code = compare_main([str(run_folder(out, 0, A)), str(run_folder(out, 1, B)),
                         "--out", str(tmp_path / "cmp")])
    printed = capsys.readouterr().out
    assert code == 0
    assert "two single runs: a change below" in printed
    assert "python -m suites.compare --ab abc1234 abc1234 --" in printed
    assert audit.audit(tmp_path / "cmp").found == ()


def test_bad_ab_input_is_one_line_and_exit_code_2(capsys):
    assert compare_main(["--ab", "HEAD"]) == 2
    assert "give two (A B: revisions or checkouts) or one range" in capsys.readouterr().err
    assert compare_main(["--ab", "no-such-revision-xyz", "HEAD"]) == 2
    assert "--ab A no-such-revision-xyz" in capsys.readouterr().err
    assert compare_main(["--ab", "HEAD", "HEAD", "--pairs", "1"]) == 2
    assert "--pairs 1: at least 3" in capsys.readouterr().err


# --- a real design: HEAD's worktree against this checkout --------------------------------------

def _git_ok() -> bool:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True)
    return done.returncode == 0


@pytest.mark.skipif(not _git_ok(), reason="not a git checkout: no revision to make a worktree of")
def test_a_real_design_is_made_resumed_and_leaves_no_worktree(tmp_path):
    out = tmp_path / "ab"
    command = [sys.executable, "-m", "suites.compare", "--ab", "HEAD", str(ROOT), "--pairs", "3",
               "--out", str(out), "--", "suite=matmul_add", "suite.sizes=[32]",
               "suite.dtypes=[float32]", "suite.variants=[eager,addmm]", "device=cpu",
               "timing=quick"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "run 5 of 6: p03_A" in done.stdout and "run 6 of 6: p03_B" in done.stdout
    assert f"audit of compare folder {out}: 0 contradictions" in done.stdout
    record = json.loads((out / AB_JSON).read_text())
    assert all(r["state"] == "done" for r in record["runs"].values()) and len(record["runs"]) == 6
    env = json.loads((run_folder(out, 0, A) / "env.json").read_text())
    assert record["a"]["commit"].startswith(env["fusebench_commit"])
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=ROOT, capture_output=True,
                               text=True).stdout
    assert str(out) not in worktrees and not (out / "checkouts").exists()
    frame = pd.read_csv(out / "compare.csv")
    assert len(frame) == 2 and (frame["pairs"] == 3).all()
    # Cut short: a run lost, the same command again makes that run alone and judges again.
    shutil.rmtree(run_folder(out, 1, B))
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "resuming" in again.stdout and "5 of 6 runs done; to make: p02_B" in again.stdout
    assert again.stdout.count(": done in") == 1
    assert (run_folder(out, 1, B) / "measurements.csv").is_file()


def _commits() -> int:
    done = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True)
    return int(done.stdout.strip() or 0) if done.returncode == 0 else 0


@pytest.mark.skipif(_commits() < 3, reason="a range needs a history of 3 commits")
def test_a_range_walks_first_parent_commits_oldest_first_and_says_what_each_moved(tmp_path):
    commits = commits_in("HEAD~2..HEAD")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip()
    assert len(commits) == 2 and commits[-1][0] == head
    with pytest.raises(ConfigError, match="no commit in that range"):
        commits_in("HEAD..HEAD")
    with pytest.raises(ConfigError, match="not a range of"):
        commits_in("no-such-rev..HEAD")
    plan, out = _design(tmp_path)
    judge_design(plan, out, 0.05, say=lambda line: None)
    text = range_text("HEAD~1..HEAD", [(head, "a subject", out)])
    assert f"## {head[:12]} a subject" in text
    assert "- M128 addmm: slower, B/A 1.1" in text and "1 moved" in text
