"""python -m suites.compare: the round-level decision, the join of two run folders, the
outputs, and one comparison of real runs of run_suite.py."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from suites.reports.compare.command import main
from suites.reports.compare.loading import round_medians
from suites.reports.compare.joined import Rule
from suites.reports.compare.decision import NOISE_FLOOR, change
from suites.reports.kit.change import Change
from suites.results.intervals import ratio_ci
from test_end_to_end import assert_finished

ROOT = Path(__file__).resolve().parents[1]
OUTPUTS = ["compare.csv", "compare.md", "compare.html", "compare.png"]


# --- the decision, on synthetic rounds -----------------------------------------------------

def noisy(median, n, seed, spread=0.05):
    """Skewed like real per-call times: a floor plus a lognormal tail."""
    rng = np.random.default_rng(seed)
    return median * (1 - spread) + median * spread * rng.lognormal(0.0, 0.5, n)


def rounds(median, n, seed, spread=0.03):
    """Round medians: each round lands in its own machine state, a few % apart."""
    return median * np.exp(np.random.default_rng(seed).normal(0.0, spread, n))


def test_clearly_faster():
    a, b = rounds(100.0, 5, 1), rounds(50.0, 5, 2)
    ci = ratio_ci(a, b)
    assert ci.high < 1.0 and ci.low <= ci.ratio <= ci.high
    assert 0.45 < ci.ratio < 0.55
    assert change(ci) == Change.FASTER
    assert change(ratio_ci(b, a)) == Change.SLOWER


def test_a_change_of_1_3x_is_called_and_a_a_is_not():
    called = sum(change(ratio_ci(rounds(100.0, 5, s), rounds(130.0, 5, 100 + s)))
                 == Change.SLOWER for s in range(50))
    a_a = [change(ratio_ci(rounds(100.0, 5, s), rounds(100.0, 5, 100 + s))) for s in range(50)]
    # A/A is never called a change; a few of its intervals reach across the floor: unclear.
    assert called >= 45 and a_a.count(Change.SAME) >= 45
    assert Change.FASTER not in a_a and Change.SLOWER not in a_a


def test_a_shift_below_the_noise_floor_is_the_same():
    # 3% slower in very steady rounds: the interval excludes 1, yet below the floor.
    a, b = rounds(100.0, 8, 5, spread=0.002), rounds(103.0, 8, 6, spread=0.002)
    ci = ratio_ci(a, b)
    assert ci.low > 1.0
    assert change(ci, floor=NOISE_FLOOR) == Change.SAME
    assert change(ci, floor=0.0) == Change.SLOWER


def test_the_spread_inside_a_round_does_not_decide():
    """Thousands of tight samples per round, but rounds 30% apart: a 10% shift is unclear, its
    interval reaching across the noise floor (neither called a change nor the same)."""
    a, b = [100.0, 130.0, 100.0, 130.0], [110.0, 143.0, 110.0, 143.0]
    assert change(ratio_ci(a, b)) == Change.UNCLEAR


def test_round_medians_leave_out_rounds_that_were_not_clean():
    key = {"suite": "s", "case_id": "c", "variant": "v"}
    samples = pd.DataFrame([{**key, "round": r, "sample": i, "time_us": 10.0 * (r + 1) + i}
                            for r in range(3) for i in range(3)])
    states = pd.DataFrame([{**key, "round": r, "state": "contended" if r == 1 else "clean"}
                           for r in range(3)])
    got = round_medians(samples, states)[("s", "c", "v")]
    assert list(got) == [11.0, 31.0]
    assert list(round_medians(samples, None)[("s", "c", "v")]) == [11.0, 21.0, 31.0]
    assert round_medians(samples.drop(columns="round"), None) == {}  # an old run: no rounds


# --- two run folders written by hand ---------------------------------------------------------

def write_run(folder: Path, rows, commit="abc1234", n=12, seed=0, n_rounds=5):
    """rows: (case_id, variant, status, reason, median_us); samples, in rounds, for ok rows."""
    folder.mkdir(parents=True)
    records, samples = [], []
    for i, (case_id, variant, status, reason, median) in enumerate(rows):
        records.append(dict(suite="matmul_add", op="matmul_add", case_id=case_id, variant=variant,
                            dtype="float32", status=status, reason=reason,
                            median_us=median if status == "ok" else np.nan))
        if status == "ok":
            for r, level in enumerate(rounds(median, n_rounds, seed * 1000 + i)):
                samples += [dict(suite="matmul_add", case_id=case_id, variant=variant, round=r,
                                 sample=s, time_us=t)
                            for s, t in enumerate(noisy(level, n, seed * 1000 + i + r))]
    pd.DataFrame(records).to_csv(folder / "measurements.csv", index=False)
    pd.DataFrame(samples).to_csv(folder / "samples.csv", index=False)
    env = {"created": "2026-01-01T10:00:00", "fusebench_commit": commit, "torch": "2.13.0+cpu",
           "device": "cpu", "cpu": "Test CPU", "threads": 2, "suite": "matmul_add",
           "timing": {"preset": "quick"}}
    (folder / "env.json").write_text(json.dumps(env))
    return folder


@pytest.fixture
def two_runs(tmp_path):
    a = write_run(tmp_path / "a", [("M64", "eager", "ok", "", 100.0),
                                   ("M64", "addmm", "ok", "", 80.0),
                                   ("M128", "eager", "ok", "", 200.0),
                                   ("M128", "addmm", "ok", "", 150.0),
                                   ("M16", "eager", "ok", "", 10.0)], commit="aaaaaaa", seed=1)
    b = write_run(tmp_path / "b", [("M64", "eager", "ok", "", 50.0),
                                   ("M64", "addmm", "ok", "", 120.0),
                                   ("M128", "eager", "ok", "", 200.0),
                                   ("M128", "addmm", "skipped", "needs a CUDA GPU", 0.0),
                                   ("M256", "eager", "ok", "", 400.0)], commit="bbbbbbb", seed=2)
    return a, b


def test_every_row_is_listed_with_its_verdict(two_runs, tmp_path, capsys):
    a, b = two_runs
    out = tmp_path / "out"
    assert main([str(a), str(b), "--out", str(out)]) == 0
    frame = pd.read_csv(out / "compare.csv", keep_default_na=False, na_values=[""])
    got = {(r.case_id, r.variant): r for r in frame.itertuples()}
    assert len(frame) == 6
    assert got[("M64", "eager")].verdict == "faster"
    assert got[("M64", "eager")].ci_high < 1.0
    assert got[("M64", "addmm")].verdict == "slower"
    assert got[("M128", "eager")].verdict == "same"
    skipped = got[("M128", "addmm")]
    assert skipped.verdict == "not comparable" and skipped.status_b == "skipped"
    assert "needs a CUDA GPU" in skipped.note
    assert got[("M16", "eager")].verdict == "only in A"
    assert got[("M256", "eager")].verdict == "only in B"
    assert list(frame.columns) == ["suite", "case_id", "variant", "dtype", "median_a_us",
                                   "median_b_us", "ratio", "ci_low", "ci_high", "verdict", "n_a",
                                   "n_b", "status_a", "status_b", "note"]
    for name in OUTPUTS:
        assert (out / name).is_file(), name
    assert (out / "compare.png").stat().st_size > 15_000  # a real plot, not an empty canvas
    md = (out / "compare.md").read_text()
    assert "aaaaaaa" in md and "bbbbbbb" in md and "1 faster" in md
    html = (out / "compare.html").read_text()
    assert "data:image/png;base64," in html and "bbbbbbb" in html
    stdout = capsys.readouterr().out
    assert "| M16 | eager |" in stdout
    assert stdout.strip().endswith(f"compare folder: {out}")
    assert "noise floor: 10%" in stdout


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
    assert pd.isna(got.loc["M128", "median_b_us"])  # a noisy row's median is not a result
    with pytest.raises(ValueError):
        Rule(min_rounds=1)


def test_default_output_folder_is_under_results_compare(two_runs, tmp_path, monkeypatch, capsys):
    a, b = two_runs
    monkeypatch.chdir(tmp_path)
    assert main([str(a), str(b)]) == 0
    (made,) = (tmp_path / "results" / "compare").iterdir()
    assert {p.name for p in made.iterdir()} == set(OUTPUTS)
    assert capsys.readouterr().out.strip().endswith(str(Path("results") / "compare" / made.name))


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
                                  ["{b}", "{b}", "--noise-floor", "10"]])
def test_bad_input_is_one_line_and_exit_code_2(two_runs, tmp_path, capsys, args):
    (tmp_path / "empty").mkdir()
    argv = [x.format(tmp=tmp_path, b=two_runs[1]) for x in args]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("fusebench: error: ") and captured.err.count("\n") == 1
    assert "Traceback" not in captured.err


# --- real runs of run_suite.py ---------------------------------------------------------------

TINY = ["suite.sizes=[16]", "suite.dtypes=[float32]", "suite.variants=[eager,addmm]", "device=cpu",
        "timing=quick", "calibrate=false", "profile=off"]


def run(*args):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("TRITON_INTERPRET", None)
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def test_real_runs_and_a_multirun_folder(tmp_path):
    for name in ("a", "b"):
        done = run("run_suite.py", *TINY, f"hydra.run.dir={tmp_path / name}")
        assert_finished(done, tmp_path / name)
    done = run("run_suite.py", "-m", *TINY[1:], "suite.sizes=[16],[24]",
               f"hydra.sweep.dir={tmp_path / 'multi'}")
    assert_finished(done, *sorted((tmp_path / "multi").glob("[0-9]*")))

    done = run("-m", "suites.compare", str(tmp_path / "a"), str(tmp_path / "b"),
               "--out", str(tmp_path / "ab"))
    assert done.returncode == 0, done.stderr[-2000:]
    frame = pd.read_csv(tmp_path / "ab" / "compare.csv")
    assert len(frame) == 2
    # Real timings on a shared machine: any decided verdict is fine, a hole is not; a row the
    # machine's load made noisy is the one allowed exception, and says so.
    decided = frame[frame["verdict"].isin(list(Change))]
    rest = frame.drop(decided.index)
    assert (rest["status_a"].eq("noisy") | rest["status_b"].eq("noisy")).all(), rest.to_string()
    assert decided["ci_low"].le(decided["ci_high"]).all() and (decided["n_a"] >= 3).all()
    assert f"compare folder: {tmp_path / 'ab'}" in done.stdout

    done = run("-m", "suites.compare", str(tmp_path / "a"), str(tmp_path / "multi"),
               "--out", str(tmp_path / "am"))
    assert done.returncode == 0, done.stderr[-2000:]
    frame = pd.read_csv(tmp_path / "am" / "compare.csv")
    verdicts = frame.set_index("case_id")["verdict"]
    assert len(frame) == 4 and (verdicts["M24-N24-K24-fp32"] == "only in B").all()
    assert "2 run folders" not in done.stderr  # the sweep's two jobs hold different rows
