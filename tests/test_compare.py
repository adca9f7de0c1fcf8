"""python -m suites.compare: the round-level decision, the join of two run folders, the
outputs, and one comparison of real runs of run_suite.py."""
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from suites.reports.compare.command import main
from suites.reports.compare.decision import FLOOR, change, note
from suites.reports.compare.drift import DRIFT_SD
from suites.reports.compare.joined import Rule
from suites.reports.compare.loading import clean_rounds, round_figures
from suites.reports.kit.change import Change
from suites.results.intervals import aa_shift_sd, aa_drift_sd, run_ratio
from test_end_to_end import TINY_CASE, assert_finished

ROOT = Path(__file__).resolve().parents[1]
OUTPUTS = ["compare.csv", "compare.md", "compare.html", "compare.png"]


# --- the decision, on synthetic rounds -----------------------------------------------------

def rounds(median, n, seed, spread=0.03):
    """Round figures: each round lands in its own machine state, a few % apart."""
    return median * np.exp(np.random.default_rng(seed).normal(0.0, spread, n))


def test_clearly_faster():
    a, b = rounds(100.0, 5, 1), rounds(50.0, 5, 2)
    r = run_ratio(a, b, DRIFT_SD)
    assert r.high < 1.0 and r.low <= r.ratio <= r.high
    assert 0.45 < r.ratio < 0.55
    assert change(r) == Change.FASTER
    assert change(run_ratio(b, a, DRIFT_SD)) == Change.SLOWER


def verdicts(ratio, draws=2000, n=10, noise=0.05, drift=0.0):
    rng = np.random.default_rng(int(ratio * 1000) + n)
    return [change(run_ratio(100.0 * np.exp(rng.normal(0, noise, n)),
                             100.0 * ratio * np.exp(rng.normal(0, noise, n)), drift))
            for _ in range(draws)]


def test_a_1_15x_slowdown_is_called_and_a_a_is_not():
    """10 rounds a side at 5% round noise, no drift: a true 1.15x is called slower in >= 90% of
    2000 draws; A/A faster or slower in <= 1.7% of them."""
    assert verdicts(1.15).count(Change.SLOWER) >= 0.90 * 2000
    a_a = verdicts(1.0)
    assert a_a.count(Change.FASTER) + a_a.count(Change.SLOWER) <= 0.017 * 2000


def test_equivalent_needs_the_90_percent_interval_within_the_floor():
    steady = [100.0, 100.4, 99.7, 100.2, 99.8, 100.1]
    a, b = steady, [v * 1.03 for v in steady]  # 3% slower, very steady rounds
    r = run_ratio(a, b, drift_sd=0.0)
    assert r.low > 1.0 and r.eq_high < 1.05  # a shift, inside +-5%: equivalence comes first
    assert change(r, floor=FLOOR) == Change.EQUIVALENT
    assert "within the 5% floor" in note(r, FLOOR, Change.EQUIVALENT)
    assert change(r, floor=0.02) == Change.SLOWER  # the 90% interval reaches past 1.02
    wide = run_ratio(a, b, drift_sd=0.03)  # the same rounds with drift: not shown either way
    assert wide.eq_high > 1.05 and wide.low < 1.0
    assert change(wide, floor=FLOOR) == Change.INCONCLUSIVE
    said = note(wide, FLOOR, Change.INCONCLUSIVE)
    assert said.startswith(f"detectable: {wide.mde:.0%}; ") and "A/A control" in said


def test_a_drift_read_from_few_cases_widens_the_interval_by_students_t():
    """An A/A pair of this machine: the control read a 7.3% drift from 6 cases while the M512
    case moved 15% as a whole and its compile row 37% (B/A 0.729). With the drift taken as known
    the row is called faster; with its 6 degrees of freedom it is not, and a drift known from
    hundreds of rows (math.inf) keeps the normal's width."""
    a = [4602.0, 4580.0, 4630.0, 4611.0, 4595.0, 4620.0, 4607.0, 4590.0, 4615.0, 4600.0]
    b = [v * 0.729 for v in a]
    assert change(run_ratio(a, b, 0.073)) == Change.FASTER
    loose = run_ratio(a, b, 0.073, drift_dof=6)
    assert change(loose) == Change.INCONCLUSIVE and loose.dof < 8
    known = run_ratio(a, b, 0.073, drift_dof=math.inf)
    assert known.high == pytest.approx(run_ratio(a, b, 0.073).high)
    assert loose.high > known.high and loose.mde > known.mde


def test_the_spread_inside_a_round_does_not_decide():
    """Thousands of tight samples per round, but rounds 30% apart: a 10% shift is inconclusive,
    and the note asks for more rounds (the round noise, not the drift, limits it)."""
    a, b = [100.0, 130.0, 100.0, 130.0], [110.0, 143.0, 110.0, 143.0]
    r = run_ratio(a, b, drift_sd=0.01)
    assert change(r) == Change.INCONCLUSIVE
    assert "more rounds (timing.rounds) would tell" in note(r, FLOOR, Change.INCONCLUSIVE)


def test_clean_rounds_by_the_mean_where_there_is_one_else_the_median():
    key = {"suite": "s", "case_id": "c", "variant": "v"}
    table = pd.DataFrame([{**key, "round": r, "median_us": 10.0 * (r + 1), "mean_us": 11.0 * (r + 1),
                           "state": "contended" if r == 1 else "clean"} for r in range(3)])
    clean = clean_rounds(table, "run")
    assert list(round_figures(clean, "mean_us")[("s", "c", "v")]) == [11.0, 33.0]
    assert list(round_figures(clean, "median_us")[("s", "c", "v")]) == [10.0, 30.0]
    older = clean_rounds(table.drop(columns="mean_us"), "run")
    assert round_figures(older, "mean_us") == {}  # an older folder: no mean to read
    assert clean_rounds(None, "run").empty  # no rounds.csv: nothing to judge by


# --- two run folders written by hand ---------------------------------------------------------

def write_run(folder: Path, rows, commit="abc1234", seed=0, n_rounds=5, spread=0.03,
              preset="quick", device="cpu", threads=2, mean=False):
    """rows: (case_id, variant, status, reason, median_us); rounds.csv's clean rounds for ok rows
    (with `mean_us` when `mean`: 2% above the median, as a skewed call distribution puts it)."""
    folder.mkdir(parents=True)
    records, round_rows, sample_rows = [], [], []
    for i, (case_id, variant, status, reason, median) in enumerate(rows):
        records.append(dict(suite="matmul_add", op="matmul_add", case_id=case_id, variant=variant,
                            dtype="float32", status=status, reason=reason,
                            median_us=median if status == "ok" else np.nan))
        if status == "ok":
            for r, level in enumerate(rounds(median, n_rounds, seed * 1000 + i, spread)):
                round_rows.append(dict(suite="matmul_add", case_id=case_id, variant=variant,
                                       round=r, position=0, n_samples=12, median_us=level,
                                       **({"mean_us": level * 1.02} if mean else {}),
                                       state="clean", reason=""))
                sample_rows += [dict(suite="matmul_add", case_id=case_id, variant=variant,
                                     round=r, sample=s, time_us=level) for s in range(3)]
    pd.DataFrame(records).to_csv(folder / "measurements.csv", index=False)
    pd.DataFrame(round_rows).to_csv(folder / "rounds.csv", index=False)
    pd.DataFrame(sample_rows, columns=["suite", "case_id", "variant", "round", "sample",
                                       "time_us"]).to_csv(folder / "samples.csv", index=False)
    env = {"created": "2026-01-01T10:00:00", "fusebench_commit": commit, "torch": "2.13.0+cpu",
           "device": device, "cpu": "Test CPU", "threads": threads, "suite": "matmul_add",
           "timing": {"preset": preset}}
    (folder / "env.json").write_text(json.dumps(env))
    config = {"suite": {"name": "matmul_add"}, "device": "auto",
              "timing": {"preset": preset, "rounds": n_rounds, "threads": "auto"}}
    (folder / "run.json").write_text(json.dumps({"state": "complete", "config": config}))
    return folder


@pytest.fixture
def two_runs(tmp_path):
    a = write_run(tmp_path / "a", [("M64", "eager", "ok", "", 100.0),
                                   ("M64", "addmm", "ok", "", 80.0),
                                   ("M128", "eager", "ok", "", 200.0),
                                   ("M128", "addmm", "ok", "", 150.0),
                                   ("M16", "eager", "ok", "", 10.0)], commit="aaaaaaa", seed=1,
                  spread=0.005)
    b = write_run(tmp_path / "b", [("M64", "eager", "ok", "", 50.0),
                                   ("M64", "addmm", "ok", "", 120.0),
                                   ("M128", "eager", "ok", "", 200.0),
                                   ("M128", "addmm", "skipped", "needs a CUDA GPU", 0.0),
                                   ("M256", "eager", "ok", "", 400.0)], commit="bbbbbbb", seed=2,
                  spread=0.005)
    return a, b


def test_every_row_is_listed_with_its_verdict(two_runs, tmp_path, capsys):
    """Steady rounds (0.5% apart) and a drift of 1% given: 2x faster, 1.5x slower and the same
    time are each told; every row of either side is listed."""
    a, b = two_runs
    out = tmp_path / "out"
    assert main([str(a), str(b), "--out", str(out), "--drift-sd", "0.01"]) == 0
    frame = pd.read_csv(out / "compare.csv", keep_default_na=False, na_values=[""])
    got = {(r.case_id, r.variant): r for r in frame.itertuples()}
    assert len(frame) == 6
    assert got[("M64", "eager")].verdict == "faster"
    assert got[("M64", "eager")].ci_high < 1.0
    assert got[("M64", "addmm")].verdict == "slower"
    assert got[("M128", "eager")].verdict == "equivalent"
    equivalent = got[("M128", "eager")]
    assert 1 / 1.05 <= equivalent.eq_low <= equivalent.eq_high <= 1.05
    assert equivalent.ci_low <= equivalent.eq_low and 0 < equivalent.mde < 0.1
    assert equivalent.drift_sd == 0.01
    skipped = got[("M128", "addmm")]
    assert skipped.verdict == "not comparable" and skipped.status_b == "skipped"
    assert "needs a CUDA GPU" in skipped.note
    assert got[("M16", "eager")].verdict == "only in A"
    assert got[("M256", "eager")].verdict == "only in B"
    assert list(frame.columns) == ["suite", "case_id", "variant", "dtype", "a_us",
                                   "b_us", "ratio", "ci_low", "ci_high", "eq_low",
                                   "eq_high", "verdict", "held", "mde", "drift_sd", "floor",
                                   "n_a", "n_b", "status_a", "status_b", "note"]
    assert (frame["floor"] == FLOOR).all() and frame["held"].isna().all()
    for name in OUTPUTS:
        assert (out / name).is_file(), name
    assert (out / "compare.png").stat().st_size > 15_000  # a real plot, not an empty canvas
    md = (out / "compare.md").read_text()
    assert "aaaaaaa" in md and "bbbbbbb" in md
    assert "6 rows: 1 faster, 1 slower, 1 equivalent, 1 not comparable, 1 only in A, 1 only " \
        "in B" in md
    assert "| 99% CI | 90% CI | verdict | mde |" in md
    html = (out / "compare.html").read_text()
    assert "data:image/png;base64," in html and "bbbbbbb" in html and "equivalent" in html
    stdout = capsys.readouterr().out
    assert "| M16 | eager |" in stdout
    assert stdout.strip().splitlines()[-2] == f"compare folder: {out}"
    assert "floor: 5% (equivalent: the 90% interval" in stdout
    assert "round figure: median_us of rounds.csv" in stdout
    assert "drift: given: 1.0%" in stdout
    assert "warning" not in stdout  # the two runs share their settings


def test_the_default_drift_leaves_a_moderate_change_inconclusive(two_runs, tmp_path, capsys):
    """No A/A control: the default drift of this shared machine; 1.5x is then within what two
    runs drift apart, so inconclusive, and the note says what would tell."""
    a, b = two_runs
    assert main([str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    got = pd.read_csv(tmp_path / "out" / "compare.csv").set_index(["case_id", "variant"])
    assert got.loc[("M64", "eager"), "verdict"] == "faster"  # 2x is seen all the same
    row = got.loc[("M64", "addmm")]
    assert row["verdict"] == "inconclusive" and row["drift_sd"] == DRIFT_SD
    assert row["note"] == (f"detectable: {row['mde']:.0%}; the default drift limits it: an A/A "
                           "control (timing.aa_control=true) in both runs would tell, more "
                           "rounds alone would not")
    stdout = capsys.readouterr().out
    assert f"drift: default {DRIFT_SD:.0%}: no A/A control (aa_control) in A or B" in stdout
    assert "inconclusive: neither a change" in stdout


def test_a_variant_in_two_states_is_never_called_faster_or_slower(tmp_path):
    """Eager LayerNorm at T8192 ran mostly in its slow state in one run (75-104k us a round)
    and in both in the next (19-28k us in 6 rounds, 63-75k in 4): 2.2x "faster" by the drift
    model, which is the machine's. A row whose rounds show two states of the variant's own on
    either side is inconclusive, and the note says why."""
    a = write_run(tmp_path / "a", [("T8192", "eager", "ok", "", 90_000.0)], seed=1,
                  n_rounds=10, mean=True)
    b = write_run(tmp_path / "b", [("T8192", "eager", "ok", "", 30_000.0)], seed=2,
                  n_rounds=10, mean=True)
    assert main([str(a), str(b), "--out", str(tmp_path / "plain")]) == 0
    assert pd.read_csv(tmp_path / "plain" / "compare.csv").iloc[0]["verdict"] == "faster"
    rounds_b = pd.read_csv(b / "rounds.csv")
    figures = [27575, 74894, 18803, 25729, 64055, 19265, 27889, 63582, 65058, 28500]
    rounds_b.assign(mean_us=figures, median_us=figures).to_csv(b / "rounds.csv", index=False)
    assert main([str(a), str(b), "--out", str(tmp_path / "states")]) == 0
    row = pd.read_csv(tmp_path / "states" / "compare.csv").iloc[0]
    assert row["verdict"] == "inconclusive" and row["held"] == "two_states"
    assert row["note"].startswith("would read faster, but the variant runs in two states of its "
                                  "own (B: 4 of 10 rounds 2.72x slower)"), row["note"]


AA_ROWS = [(f"M{m}", v, "ok", "", t * m / 64) for m in (64, 128, 256, 512)
           for v, t in (("eager", 100.0), ("addmm", 90.0), ("aa_control", 100.0))]
CASES = ["M64", "M128", "M256", "M512"]


def _with_offsets(rows, offsets):
    """The aa_control copies moved by a known offset per case (the drift of a copy)."""
    return [(c, v, s, r, t * (offsets[CASES.index(c)] if v == "aa_control" else 1.0))
            for c, v, s, r, t in rows]


def test_drift_from_the_a_a_control_of_both_runs(tmp_path, capsys):
    """Both runs carry an A/A control: its copies land 2-4% off the baseline, within each run
    and between the runs, so the drift is estimated from them (not the 12% default), and a 1.5x
    change becomes visible (the default hides it; read from 4 cases, the drift's estimate
    is loose, and Student's t with 4 degrees of freedom would hide a 1.3x one)."""
    a_rows = _with_offsets(AA_ROWS, [1.04, 1 / 1.03, 1.02, 1 / 1.04])
    # B slows addmm at M64 down 1.5x; the baseline and its copy are the same code in both runs.
    b_rows = _with_offsets([(c, v, s, r, t * (1.5 if (c, v) == ("M64", "addmm") else 1.0))
                            for c, v, s, r, t in AA_ROWS], [1 / 1.02, 1.03, 1 / 1.04, 1.02])
    a = write_run(tmp_path / "a", a_rows, seed=1, spread=0.005)
    b = write_run(tmp_path / "b", b_rows, seed=2, spread=0.005)
    assert main([str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    got = pd.read_csv(tmp_path / "out" / "compare.csv").set_index(["case_id", "variant"])
    cases, tables = [], []
    for folder in (a, b):
        table = pd.read_csv(folder / "rounds.csv").set_index(["case_id", "round", "variant"])
        logs = np.log(table["median_us"].xs("aa_control", level=2)
                      / table["median_us"].xs("eager", level=2))
        cases += [group.to_numpy() for _, group in logs.groupby(level=0)]
        tables.append(table["median_us"].xs("aa_control", level=2))
    between = [(tables[0].xs(c, level=0).to_numpy(), tables[1].xs(c, level=0).to_numpy())
               for c in CASES]
    within, shift = aa_drift_sd(cases), aa_shift_sd(between)
    assert 0.015 < within < 0.04 and 0.015 < shift < 0.06
    expected = max(within, shift)
    assert got["drift_sd"].iloc[0] == pytest.approx(expected)
    assert got.loc[("M64", "addmm"), "verdict"] == "slower"
    assert (got.drop(index=("M64", "addmm"))["verdict"] != "slower").all()
    stdout = capsys.readouterr().out
    assert f"drift: from the A/A control, 8 cases: {expected:.1%}" in stdout
    assert "read from 4 cases, so intervals use Student's t with 4 degrees of freedom" in stdout

    plain = write_run(tmp_path / "plain", [r for r in b_rows if r[1] != "aa_control"], seed=3)
    assert main([str(a), str(plain), "--out", str(tmp_path / "out2")]) == 0
    assert f"drift: default {DRIFT_SD:.0%}: no A/A control (aa_control) in B" in \
        capsys.readouterr().out
    hidden = pd.read_csv(tmp_path / "out2" / "compare.csv").set_index(["case_id", "variant"])
    assert hidden.loc[("M64", "addmm"), "verdict"] == "inconclusive"  # the 12% default hides it


def test_a_whole_run_moved_is_drift_the_control_shows_between_the_runs(tmp_path, capsys):
    """Two A/A runs 18% apart on every row (a machine state of the whole run), each run's two
    copies within 1% of each other: the copies of one run cannot see it, the control between
    the runs does, so no row is called faster."""
    a = write_run(tmp_path / "a", AA_ROWS, seed=1, spread=0.005)
    b = write_run(tmp_path / "b", [(c, v, s, r, t / 1.18) for c, v, s, r, t in AA_ROWS], seed=2,
                  spread=0.005)
    assert main([str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    got = pd.read_csv(tmp_path / "out" / "compare.csv")
    assert set(got["verdict"]) == {"inconclusive"}
    assert got["drift_sd"].iloc[0] > 0.1


def test_settings_the_runs_do_not_share_are_warned_of_first(tmp_path, capsys):
    rows = [("M64", "eager", "ok", "", 100.0)]
    a = write_run(tmp_path / "a", rows, preset="quick", threads=1)
    b = write_run(tmp_path / "b", rows, preset="default", threads=2, seed=1)
    assert main([str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    stdout = capsys.readouterr().out.splitlines()
    assert stdout[:2] == ["warning: A and B differ in threads: A 1, B 2",
                          "warning: A and B differ in timing preset: A quick, B default"]
    for name in ("compare.md", "compare.html"):
        text = (tmp_path / "out" / name).read_text()
        assert "timing preset: A quick, B default" in text and "threads: A 1, B 2" in text

    c = write_run(tmp_path / "c", rows, n_rounds=10, seed=2)  # one preset, a timing override
    assert main([str(a), str(c), "--out", str(tmp_path / "out2")]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == [
        "warning: A and B differ in threads: A 1, B 2",
        "warning: A and B differ in timing.rounds: A 5, B 10"]


def test_a_run_beside_other_work_is_named_in_the_warnings_and_the_banner(tmp_path, capsys):
    """Two A/A runs of suite=linear here came 2x apart on a 20 us call: one ran while another
    process kept the core the timing leaves free busy (1.0 core on average), within what the
    rounds allow. compare names it, and so does the run's banner."""
    from suites.reports.kit.banner import banner_lines

    rows = [("M64", "eager", "ok", "", 100.0)]
    a = write_run(tmp_path / "a", rows)
    b = write_run(tmp_path / "b", rows, seed=1)
    for folder, others in ((a, 0.07), (b, 0.99)):
        env = json.loads((folder / "env.json").read_text())
        env["rounds"] = {"shares": 5, "states": {"clean": 5}, "others_cores_mean": others}
        (folder / "env.json").write_text(json.dumps(env))
    assert main([str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    assert ("warning: A and B differ in other work during the rounds: A quiet, B 1.0 cores busy "
            "on average") in capsys.readouterr().out
    quiet, busy = (json.loads((f / "env.json").read_text()) for f in (a, b))
    frame = pd.DataFrame({"status": ["ok"], "reason": [""]})
    assert banner_lines([quiet], frame) == []
    said = banner_lines([busy], frame)
    assert len(said) == 1 and said[0].startswith("other processes kept 1.0 cores busy on average")


def test_runs_on_different_kinds_of_device_are_refused(tmp_path, capsys):
    rows = [("M64", "eager", "ok", "", 100.0)]
    a = write_run(tmp_path / "a", rows, device="cpu")
    b = write_run(tmp_path / "b", rows, device="cuda", seed=1)
    assert main([str(a), str(b), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "device: A cpu, B cuda" in err
    assert not (tmp_path / "out").exists()


def test_the_mean_is_the_round_figure_where_both_sides_have_it(tmp_path, capsys):
    rows = [("M64", "eager", "ok", "", 100.0)]
    a = write_run(tmp_path / "a", rows, mean=True)
    b = write_run(tmp_path / "b", rows, mean=True, seed=1)
    assert main([str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    assert "round figure: mean_us of rounds.csv, both sides\n" in capsys.readouterr().out
    old = write_run(tmp_path / "old", rows, seed=2)  # written before the mean: the median
    assert main([str(a), str(old), "--out", str(tmp_path / "out2")]) == 0
    assert "round figure: median_us of rounds.csv, both sides (the mean over calls is missing" \
        in capsys.readouterr().out


def test_an_old_folder_is_read_by_its_round_medians(tmp_path, capsys):
    """tests/fixtures/run_folders/schema_v0: a real folder from before the mean; its rows are
    judged on rounds.csv's median_us."""
    v0 = ROOT / "tests" / "fixtures" / "run_folders" / "schema_v0"
    again = tmp_path / "again"
    shutil.copytree(v0, again)
    assert main([str(v0), str(again), "--out", str(tmp_path / "out")]) == 0
    stdout = capsys.readouterr().out
    assert "round figure: median_us of rounds.csv" in stdout
    frame = pd.read_csv(tmp_path / "out" / "compare.csv")
    clean = pd.read_csv(v0 / "rounds.csv").query("state == 'clean'")
    counts = clean.groupby(["case_id", "variant"]).size()
    assert list(frame["n_a"]) == [counts[(c, v)] for c, v in zip(frame["case_id"],
                                                                  frame["variant"])]
    assert (frame["ratio"] == 1).all() and not frame["verdict"].isin(["faster", "slower"]).any()


def test_too_few_rounds_or_a_noisy_row_is_not_comparable(tmp_path, capsys):
    a = write_run(tmp_path / "a", [("M64", "eager", "ok", "", 100.0),
                                   ("M128", "eager", "ok", "", 100.0)], n_rounds=2)
    b = write_run(tmp_path / "b", [("M64", "eager", "ok", "", 100.0),
                                   ("M128", "eager", "noisy", "1 of 5 rounds clean", 0.0)])
    assert main([str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    got = pd.read_csv(tmp_path / "out" / "compare.csv").set_index("case_id")
    assert got.loc["M64", "verdict"] == "not comparable"
    assert "too few rounds (A 2, B 5" in got.loc["M64", "note"]
    assert got.loc["M128", "verdict"] == "not comparable"
    assert "B noisy: 1 of 5 rounds clean" in got.loc["M128", "note"]
    assert pd.isna(got.loc["M128", "b_us"])  # a noisy row's median is not a result
    with pytest.raises(ValueError):
        Rule(min_rounds=1)


def test_default_output_folder_is_under_results_compare(two_runs, tmp_path, monkeypatch, capsys):
    a, b = two_runs
    monkeypatch.chdir(tmp_path)
    assert main([str(a), str(b)]) == 0
    (made,) = (tmp_path / "results" / "compare").iterdir()
    assert {p.name for p in made.iterdir()} == set(OUTPUTS)
    folder_line = capsys.readouterr().out.strip().splitlines()[-2]
    assert folder_line.endswith(str(Path("results") / "compare" / made.name))


def test_a_row_in_two_runs_of_one_side_is_an_error(two_runs, tmp_path, capsys):
    a, b = two_runs
    both = tmp_path / "both"
    both.mkdir()
    a.rename(both / "a")
    write_run(both / "again", [("M64", "eager", "ok", "", 100.0)])
    assert main([str(both), str(b), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "matmul_add/M64/eager is in 2 run folders" in err


@pytest.mark.parametrize("args", [["{tmp}/missing", "{b}"], ["{tmp}/empty", "{b}"],
                                  ["{b}", "{b}/measurements.csv/x"], ["{b}"],
                                  ["{b}", "{b}", "--floor", "10"],
                                  ["{b}", "{b}", "--noise-floor", "0"],
                                  ["{tmp}/a", "{b}", "--drift-sd", "-0.1"]])
def test_bad_input_is_one_line_and_exit_code_2(two_runs, tmp_path, capsys, args):
    (tmp_path / "empty").mkdir()
    argv = [x.format(tmp=tmp_path, b=two_runs[1]) for x in args]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("fusebench: error: ") and captured.err.count("\n") == 1
    assert "Traceback" not in captured.err


# --- real runs of run_suite.py ---------------------------------------------------------------

def run(*args):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("TRITON_INTERPRET", None)
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def test_real_runs_and_a_multirun_folder(tiny_sweep, tmp_path, capsys):
    # Run a is the config of the sweep's job 0 (conftest.py): the job is a second real run to
    # compare it with, and the sweep a multirun folder.
    sweep, _ = tiny_sweep
    done = run("run_suite.py", *TINY_CASE, "suite.dtypes=[float32]",
               f"hydra.run.dir={tmp_path / 'a'}")
    assert_finished(done, tmp_path / "a")

    assert main([str(tmp_path / "a"), str(sweep / "0_matmul_add"), "--out",
                 str(tmp_path / "ab")]) == 0
    frame = pd.read_csv(tmp_path / "ab" / "compare.csv")
    assert len(frame) == 2
    # Real timings on a shared machine: any decided verdict is fine, a hole is not; a row the
    # machine's load made noisy is the one allowed exception, and says so.
    decided = frame[frame["verdict"].isin(list(Change))]  # any of the four
    rest = frame.drop(decided.index)
    assert (rest["status_a"].eq("noisy") | rest["status_b"].eq("noisy")).all(), rest.to_string()
    assert decided["ci_low"].le(decided["ci_high"]).all() and (decided["n_a"] >= 3).all()
    assert f"compare folder: {tmp_path / 'ab'}" in capsys.readouterr().out

    assert main([str(tmp_path / "a"), str(sweep), "--out", str(tmp_path / "am")]) == 0
    frame = pd.read_csv(tmp_path / "am" / "compare.csv")
    verdicts = frame.set_index("case_id")["verdict"]
    assert len(frame) == 4 and (verdicts["M16-N16-K16-bf16"] == "only in B").all()
    assert "2 run folders" not in capsys.readouterr().err  # the sweep's jobs hold different rows


def test_a_case_whose_every_variant_moved_together_is_said_so(tmp_path, capsys):
    """A/A runs in which one case ran 1.8x faster in B, every variant and its baseline alike (a
    busy machine during that case in A): its rows are called, and the page says the whole case
    moved; a case whose variants moved apart is not named."""
    rows = [("M64", "eager", "ok", "", 100.0), ("M64", "addmm", "ok", "", 90.0),
            ("M128", "eager", "ok", "", 200.0), ("M128", "addmm", "ok", "", 180.0)]
    a = write_run(tmp_path / "a", rows, seed=1, spread=0.005)
    b = write_run(tmp_path / "b", [(c, v, s, r, t / 1.8 if c == "M128" else t)
                                   for c, v, s, r, t in rows], seed=2, spread=0.005)
    assert main([str(a), str(b), "--out", str(tmp_path / "out"), "--drift-sd", "0.01"]) == 0
    out = capsys.readouterr().out
    said = next(line for line in out.splitlines() if "moved together" in line)
    assert said.startswith("M128 (matmul_add): every variant moved together, B/A 0.55"), said
    assert "(eager, addmm): the whole case ran at another speed in one run" in said
    assert said in (tmp_path / "out" / "compare.md").read_text()
    assert "M64 (matmul_add)" not in out


# --- loose ends: the summary once, runs that share no row, folders that lack a file ----------

def test_the_summary_is_printed_once_and_the_audit_of_the_outputs_last(two_runs, tmp_path,
                                                                       capsys):
    from suites.reports.compare.audit import audit
    a, b = two_runs
    out = tmp_path / "out"
    assert main([str(a), str(b), "--out", str(out), "--drift-sd", "0.01"]) == 0
    stdout = capsys.readouterr().out.splitlines()
    md = (out / "compare.md").read_text().splitlines()
    summary = [line[2:] for line in md if line.startswith("- ") and not line.startswith("- **")]
    assert len(summary) >= 4 and all(stdout.count(line) == 1 for line in summary)
    checked = audit(out)
    assert checked.found == () and checked.tested > 0
    assert stdout[-1] == checked.lines()[0]


def test_runs_that_share_no_row_are_refused_in_one_line(tmp_path, capsys):
    a = write_run(tmp_path / "a", [("M64", "eager", "ok", "", 100.0)])
    b = write_run(tmp_path / "b", [("M128", "eager", "ok", "", 100.0)], seed=1)
    assert main([str(a), str(b), "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("fusebench: error: ") and captured.err.count("\n") == 1
    assert str(a) in captured.err and str(b) in captured.err
    assert not (tmp_path / "out").exists()


V0 = ROOT / "tests" / "fixtures" / "run_folders" / "schema_v0"
GAPS = {"no_samples": (lambda f: (f / "samples.csv").unlink(), {"median_us", "p10_us", "p90_us"}),
        "env_not_json": (lambda f: (f / "env.json").write_text('{"device": "cp'),
                         {"peaks", "machine", "threads"}),
        "env_not_object": (lambda f: (f / "env.json").write_text("[1, 2]"),
                           {"peaks", "machine", "threads"})}


@pytest.mark.parametrize("code", list(GAPS))
def test_a_folder_lacking_samples_or_with_a_corrupt_env_is_said_by_compare_and_the_report(
        tmp_path, capsys, code):
    """What the folder lacks is the reader's (a code, and the keys it leaves unknown); compare's
    console, compare.md and compare.html and the run report each say its line."""
    import html
    from suites.reports.run.build import write_report
    from suites.results.reader import RunFolder
    assert RunFolder(V0).gaps == ()
    damage, unknown = GAPS[code]
    folder = shutil.copytree(V0, tmp_path / "run")
    damage(folder)
    (gap,) = RunFolder(folder).gaps
    assert gap.code == code and unknown <= set(gap.unknown)
    assert main([str(V0), str(folder), "--out", str(tmp_path / "out")]) == 0
    said = capsys.readouterr().out.splitlines()
    assert f"B: {gap.line}" in said
    assert not [line for line in said if line.startswith("warning:")]  # unknown, not different
    assert gap.line in (tmp_path / "out" / "compare.md").read_text()
    assert html.escape(gap.line) in (tmp_path / "out" / "compare.html").read_text()
    assert html.escape(gap.line) in write_report(folder).read_text()
