"""History's causes, the place of a change, and the audit of a history folder (issue 36, item
4): a cause is only what can move a time (never a lock wait); a change is placed where the data
puts it, or said to lie between two runs; the gate's verdict on the newest run agrees with the
place; "too short" says how many runs it needs; and `audit` of a history folder finds nothing in
what history writes, and names each check a corrupted folder fails. Histories are built from
the real runs of tests/fixtures/history_rounds by test_history's helpers."""
from __future__ import annotations

import json
import math
import re
import shutil

import numpy as np
import pandas as pd
import pytest

from suites.reports.history import audit as history_audit
from suites.reports.history import causes, command, series
from suites.reports.history.changepoints import Point, find_changes
from suites.reports.history.thresholds import Thresholds
from test_history import CASE, changes_of, history_of, make_history, set_env, slow_down

COMMIT = "abc1234"  # one commit for every run: the fixture's runs alternate two


def _one_commit(runs) -> None:
    for run in runs:
        set_env(run, fusebench_commit=COMMIT)


# --- causes: only what can move a time ----------------------------------------------------------

def test_the_allow_list_names_what_moves_a_time_and_nothing_else():
    for key in ("torch", "triton", "python", "fusebench_commit", "cpu_capability", "threads",
                "cpu", "gpu", "cpu_count", "TEARDOWN_CUPTI"):
        assert causes.env_kind(key) is not None, key
    # Bookkeeping and what is measured before any timing: never a cause.
    for key in ("waited_for_device_s", "created", "load_average", "cores_used_by_others",
                "warning", "suite", "launch_floors", "memory_probes", "triton_counters",
                "peak_probe_error", "event_resolution_us", "rounds", "a_key_added_tomorrow"):
        assert causes.env_kind(key) is None, key
    assert causes.timing_kind("preset") == "settings"
    assert causes.timing_kind("case_timeout_s") is None
    assert causes.config_kind("profile.enabled") == "config"
    assert causes.config_kind("hydra.run.dir") is None and causes.config_kind("resume") is None


def test_a_lock_wait_is_never_named_as_the_cause(tmp_path):
    """The issue's line: "REGRESSED ... at run #6: waited_for_device_s 1.5 -> 43" (the wait for
    another run's lock, before any timing)."""
    runs = make_history(tmp_path)
    _one_commit(runs)
    for i, run in enumerate(runs):
        set_env(run, waited_for_device_s=43.0 if i == len(runs) - 1 else 1.5)
    slow_down(runs[-1], 1.4, "addmm")
    code, report, out = history_of(tmp_path)
    regressed = [r for r in report["regressed"] if r["variant"] == "addmm"]
    assert code == 1 and regressed
    for change in report["changes"]:
        assert change["cause"] != "other", change
        assert change["cause_key"] != "waited_for_device_s", change
    assert "waited_for_device_s" not in (out / "history.md").read_text()


# --- the place of a change ----------------------------------------------------------------------

def test_a_change_at_run_5_of_6_is_placed_at_run_5_and_named_there(tmp_path):
    """Six runs, the whole case 2x slower from run 5 with the CPU capability AVX512 -> DEFAULT:
    the change is at run 5 in every series of the case that shows it, named by the capability;
    never at run 4 (where a minimum segment of 3 runs would put it) nor at run 6."""
    runs = make_history(tmp_path, n=6)
    _one_commit(runs)
    for i, run in enumerate(runs):
        set_env(run, cpu_capability="DEFAULT" if i >= 4 else "AVX512")
        if i >= 4:
            slow_down(run, 2.0)
    code, report, _ = history_of(tmp_path)
    found = [c for c in report["changes"] if c["case_id"] == CASE]
    assert not [c for c in found if c["run_index"] == 4], found
    for variant in ("eager", "addmm"):  # their time views: the case's 2x
        change = [c for c in found if c["variant"] == variant]
        assert [c["run_index"] for c in change] == [5], change
        assert change[0]["cause_key"] == "cpu_capability", change
        assert (change[0]["cause_before"], change[0]["cause_after"]) == ("AVX512", "DEFAULT")
    for entry in report["regressed"]:
        if entry["case_id"] == CASE:
            assert entry["run_index"] == 5 and entry["newest_run_index"] == 6, entry


def _points(logs, se=0.005, n=10):
    return [Point(float(m), se, n) for m in logs]


def test_where_the_data_cannot_tell_two_runs_apart_the_change_lies_between_them():
    """A run halfway between two levels, two of a run's sd from each: the step could come
    before it or after it alike."""
    changes = find_changes(_points([0.0] * 6 + [0.1] + [0.2] * 6, se=0.04))
    assert len(changes.steps) == 1
    step = changes.steps[0]
    assert (step.first, step.last) == (6, 7)
    # A clean step is placed exactly.
    exact = find_changes(_points([0.0] * 6 + [0.2] * 6, se=0.04)).steps[0]
    assert (exact.index, exact.first, exact.last) == (6, 6, 6)


def test_a_short_tail_is_placed_where_it_starts_not_where_three_runs_allow():
    rng = np.random.default_rng(7)
    logs = rng.normal(0, 0.01, 6) + np.array([0, 0, 0, 0, 0.7, 0.7])
    changes = find_changes(_points(logs))
    assert [s.index for s in changes.steps] == [4]


def test_a_change_point_at_the_newest_run_is_the_newest_run_regressed():
    """Vice versa: the data puts a 2x change at the newest run; the newest run regressed."""
    rng = np.random.default_rng(8)
    logs = rng.normal(0, 0.01, 12) + np.array([0.0] * 11 + [0.7])
    view = series.judge_view(series.TIME, list(range(12)), _points(logs), "", True,
                             Thresholds())
    assert [s.index for s in view.changes.steps] == [11]
    assert view.gate is not None and view.gate.state == "regressed"


def test_the_gate_s_flag_is_placed_where_the_new_level_began(tmp_path):
    """The issue's eager: the newest run regressed against its baseline, but its level began a
    run earlier (with a new commit): the change is placed there and named by the commit, and
    the REGRESSED flag stands there with the newest run it rests on."""
    runs = make_history(tmp_path)
    _one_commit(runs)
    for run in runs[8:]:
        set_env(run, fusebench_commit="def5678")
        slow_down(run, 1.5, "addmm")
    code, report, out = history_of(tmp_path)
    found = changes_of(report, "addmm")
    assert [c["run_index"] for c in found] == [9], found
    assert found[0]["cause_key"] == "fusebench_commit"
    for entry in report["regressed"]:
        assert entry["run_index"] == 9 and entry["newest_run_index"] == 10, entry
        assert entry["reason"], entry
    assert code == (1 if report["regressed"] else 0)


# --- too short ----------------------------------------------------------------------------------

def test_too_short_says_how_many_runs_a_series_needs(tmp_path):
    make_history(tmp_path, n=4)
    code, report, out = history_of(tmp_path)
    assert report["runs_needed"] == series.RUNS_NEEDED == 6
    headline = (out / "history.md").read_text().splitlines()[2]
    match = re.search(r"(\d+) too short \(fewer than (\d+) ", headline)
    assert match and int(match.group(1)) == report["counts"]["too_short"] > 0, headline
    assert int(match.group(2)) == series.RUNS_NEEDED
    frame = pd.read_csv(out / "series.csv")
    assert (frame.loc[frame["state"] == "too_short", "points"] < series.RUNS_NEEDED).all()


# --- the audit ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A history with a torch upgrade under a regression at the newest run, and a counter."""
    root = tmp_path_factory.mktemp("audited")
    runs = make_history(root)
    _one_commit(runs)
    set_env(runs[-1], torch="2.14.0+cpu")
    slow_down(runs[-1], 1.4, "addmm")
    code, report, out = history_of(root)
    assert code == 1
    return out


def test_the_audit_finds_nothing_in_a_history_it_wrote(written, capsys):
    result = history_audit.audit(written)
    assert result.kind == "history" and result.tested >= 50
    assert result.found == (), [c.line() for c in result.found]
    # Every history run ends with the audit's line, and keeps its exit code.
    root = written.parent
    code = command.main([str(root), "--out", str(root / "again")])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert code == 1 and last.startswith("audit of history folder") and " 0 contradictions" in last


def _json_edit(path, edit):
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _regressed_change(data) -> dict:
    entry = data["regressed"][0]
    return next(c for c in data["changes"] if (c["case_id"], c["variant"]) ==
                (entry["case_id"], entry["variant"]) and c["run_index"] == entry["run_index"])


def _corrupt(folder, how: str) -> None:
    md, js, csv, page = (folder / n for n in ("history.md", "regressions.json", "series.csv",
                                               "history.html"))
    if how == "headline_counts":  # both pages agree, and are wrong against series.csv
        for path in (md, page):
            path.write_text(re.sub(r"(\d+) changed", lambda m: f"{int(m.group(1)) + 1} changed",
                                   path.read_text(), count=1))
    elif how == "exit_code":
        _json_edit(js, lambda d: d.update(exit_code=0))
    elif how == "cause_allowed":
        _json_edit(js, lambda d: _regressed_change(d).update(cause="other",
                                                            cause_key="waited_for_device_s"))
    elif how == "cause_changed":
        _json_edit(js, lambda d: _regressed_change(d).update(cause_before="2.14.0+cpu"))
    elif how == "finite":
        frame = pd.read_csv(csv)
        frame.loc[0, "gate_ratio"] = math.inf
        frame.to_csv(csv, index=False)
    elif how == "md_html":
        text = page.read_text()
        page.write_text(re.sub(r"<p class='first'.*?</p>", "", text, count=1))
    elif how == "gate_place":
        _json_edit(js, lambda d: d["regressed"][0].update(run_index=11))


@pytest.mark.parametrize("code", ["headline_counts", "exit_code", "cause_allowed",
                                  "cause_changed", "finite", "md_html", "gate_place"])
def test_the_audit_names_each_corruption_by_its_check(written, tmp_path, code):
    folder = tmp_path / "history"
    shutil.copytree(written, folder)
    _corrupt(folder, code)
    found = history_audit.audit(folder).found
    assert {c.check for c in found} == {code}, [c.line() for c in found]
    assert all(c.says and c.against for c in found)


def test_the_audit_of_a_folder_that_is_no_history_is_one_clear_error(tmp_path):
    with pytest.raises(ValueError, match="regressions.json"):
        history_audit.audit(tmp_path)
