"""`python -m suites.history` end to end, on real runs: the ten runs of one config in
tests/fixtures/history_rounds (their real drift and round noise), copied into a temporary
folder with a kernels.csv and run.json each, and changes injected into the copies: one
variant made 30% slower from run k on with its kernel renamed and n_kernels 2 -> 3, the torch
version changed under a whole case that slowed, a counter alone, a regression at the newest
run. Each must be found at its run, explained by what was injected, and exit as the command
promises (1: the newest run regressed; 0; 2 with one line on bad input). Runs of two machines
are kept apart, the order by commit falls back to time when the commits are unknown, the
thresholds come from the config and the flags, and reading stays fast per folder."""
from __future__ import annotations

import datetime as dt
import json
import math
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest

from suites.reports.history import audit, command, loading, series, thresholds

FIXTURE = Path(__file__).parent / "fixtures" / "history_rounds"
CASE = "M256-N256-K256-fp32"
KERNELS = {"eager": ["aten::mm", "aten::add"], "addmm": ["aten::addmm", "aten::copy_"],
           "compile": ["aten::addmm", "aten::copy_"], "aa_control": ["aten::mm", "aten::add"]}


def _runs_in_order() -> list[Path]:
    folders = [p for p in FIXTURE.iterdir() if (p / "env.json").is_file()]
    return sorted(folders, key=lambda p: json.loads((p / "env.json").read_text())["created"])


def make_history(root: Path, history: dict | None = None, n: int = 10,
                 shift: dt.timedelta = dt.timedelta(0)) -> list[Path]:
    """`n` runs run_00 .. under root, in time order: the fixture's ten, again a day later when
    `n` > 10, `shift` later still; each with a kernels.csv (two ops per ok row) and a
    complete run.json whose config may carry a suite `history` block."""
    out, sources = [], _runs_in_order()
    for i in range(n):
        src = sources[i % len(sources)]
        dst = root / f"run_{i:02d}"
        shutil.copytree(src, dst)
        created = dt.datetime.fromisoformat(json.loads((src / "env.json").read_text())["created"])
        set_env(dst, created=(created + dt.timedelta(days=i // len(sources)) + shift)
                .isoformat(timespec="seconds"))
        rows = pd.read_csv(dst / "measurements.csv")
        kernels = [{"suite": r.suite, "case_id": r.case_id, "variant": r.variant,
                    "dtype": r.dtype, "kernel": name, "kind": "cpu_op", "calls_per_call": 1.0,
                    "total_us_per_call": r.median_us / 2, "mean_us": r.median_us / 2}
                   for r in rows.itertuples() if r.status == "ok"
                   for name in KERNELS[r.variant]]
        pd.DataFrame(kernels).to_csv(dst / "kernels.csv", index=False)
        suite = {"name": "matmul_add", **({"history": history} if history else {})}
        (dst / "run.json").write_text(json.dumps({
            "schema_version": 5, "state": "complete", "planned": len(rows), "done": len(rows),
            "config": {"suite": suite, "timing": {"preset": "default"}, "device": "auto"}}))
        out.append(dst)
    return out


def _edit_csv(path: Path, pick, **changes) -> None:
    frame = pd.read_csv(path)
    rows = pick(frame)
    for column, change in changes.items():
        if column in frame:
            frame.loc[rows, column] = change(frame.loc[rows, column])
    frame.to_csv(path, index=False)


def slow_down(run: Path, factor: float, variant: str | None = None, case: str = CASE) -> None:
    """Every figure of `case` (one variant, or all) in rounds.csv and measurements.csv x
    factor."""
    def pick(frame):
        mine = frame["case_id"] == case
        return mine & (frame["variant"] == variant) if variant else mine
    scale = {c: (lambda s: s * factor) for c in ("mean_us", "median_us", "p10_us", "p90_us",
                                                 "min_us", "mean_low_us", "mean_high_us")}
    _edit_csv(run / "rounds.csv", pick, **scale)
    _edit_csv(run / "measurements.csv", pick, **scale)


def rename_kernel(run: Path, variant: str, old: str, new: str, case: str = CASE) -> None:
    def pick(frame):
        return ((frame["case_id"] == case) & (frame["variant"] == variant)
                & (frame["kernel"] == old))
    _edit_csv(run / "kernels.csv", pick, kernel=lambda s: s.map(lambda _: new))


def set_counter(run: Path, variant: str, column: str, value, case: str = CASE) -> None:
    _edit_csv(run / "measurements.csv",
              lambda f: (f["case_id"] == case) & (f["variant"] == variant),
              **{column: lambda s: s.map(lambda _: value)})


def set_env(run: Path, **values) -> None:
    env = json.loads((run / "env.json").read_text())
    env.update(values)
    (run / "env.json").write_text(json.dumps(env))


def history_of(root: Path, *flags, capsys=None) -> tuple[int, dict, Path]:
    """The command on `root`, its regressions.json, its folder; and what it wrote audited:
    every history a test makes has no contradiction (suites/reports/history/audit.py)."""
    out = root / "history"
    code = command.main([str(root), "--out", str(out), *flags])
    report = json.loads((out / "regressions.json").read_text()) if code != 2 else {}
    if code != 2:
        found = audit.audit(out).found
        assert not found, [c.line() for c in found]
    return code, report, out


def changes_of(report: dict, variant: str, case: str = CASE) -> list[dict]:
    return [c for c in report["changes"] if c["case_id"] == case and c["variant"] == variant]


# --- changes found at their run, and explained --------------------------------------------------

def test_a_stable_history_exits_0_and_judges_every_series(tmp_path):
    make_history(tmp_path)
    code, report, out = history_of(tmp_path)
    assert code == 0 and report["exit_code"] == 0 and not report["regressed"]
    assert report["runs"] == 10 and report["series"] == 36
    frame = pd.read_csv(out / "series.csv")
    assert set(frame["state"]) <= {"stable", "changed", "too_noisy", "too_short"}
    assert not any("kernels" in str(c) or "n_kernels" in str(c) for c in frame["counters"])
    # Triton rows never run on a CPU: said, not judged.
    triton = frame[frame["variant"] == "triton"]
    assert (triton["state"] == "too_short").all()
    assert triton["why"].str.startswith("never timed ok: skipped in 10 of 10").all()
    page = (out / "history.html").read_text()
    assert "36 series over 10 runs" in page and "data-sortable" in page
    assert (out / "history.md").read_text().startswith("# fusebench history")


def test_a_slower_variant_with_a_new_kernel_is_found_at_its_run_and_explained(tmp_path):
    runs = make_history(tmp_path)
    k = 5
    for run in runs[k:]:
        slow_down(run, 1.3, "addmm")
        rename_kernel(run, "addmm", "aten::addmm", "mkl_sgemm_avx2")
        set_counter(run, "addmm", "n_kernels", 3.0)
    code, report, out = history_of(tmp_path)
    found = changes_of(report, "addmm")
    at_k = [c for c in found if c["run_index"] == k + 1]
    assert at_k, found
    change = at_k[0]
    assert "relative" in change["steps"] and change["steps"]["relative"]["ratio"] > 1.15
    first = change["explanation"]
    assert "now launches `mkl_sgemm_avx2` instead of `aten::addmm`" in first, first
    assert {c["name"] for c in change["counters"]} >= {"n_kernels", "kernels"}
    # The other variants of the case did not move: the variant alone did.
    md = (out / "history.md").read_text()
    assert "addmm alone moved" in md
    page = (out / "history.html").read_text()  # its plot and explanation on the page
    assert "data:image/png;base64" in page and "mkl_sgemm_avx2" in page
    # Nothing else in the case changed there.
    assert not [c for v in ("eager", "compile") for c in changes_of(report, v)
                if c["run_index"] == k + 1]


def test_a_torch_upgrade_under_a_whole_case_that_slowed_is_named_first(tmp_path):
    """A whole case moves in the time view only (the relative views cancel it), where this
    machine's drift needs more runs and a larger step: 20 runs, 1.5x from run 11."""
    runs = make_history(tmp_path, n=20)
    k = 10
    for run in runs[k:]:
        set_env(run, torch="2.14.0+cpu")
        slow_down(run, 1.5, case="M1024-N1024-K1024-fp32")
    code, report, out = history_of(tmp_path)
    found = [c for c in report["changes"] if c["case_id"] == "M1024-N1024-K1024-fp32"
             and c["run_index"] == k + 1]
    assert found, report["changes"]
    for change in found:
        assert change["explanation"].startswith("torch 2.13.0+cpu -> 2.14.0+cpu"), change
    eager = [c for c in found if c["variant"] == "eager"]
    assert eager and "time" in eager[0]["steps"]
    assert "the whole case moved alike" in eager[0]["explanation"]


def test_a_counter_alone_is_a_change_of_its_own_kind(tmp_path):
    runs = make_history(tmp_path)
    for run in runs[4:]:
        set_counter(run, "compile", "compile_graphs", 2.0)
    code, report, out = history_of(tmp_path)
    found = changes_of(report, "compile")
    assert [c["run_index"] for c in found] == [5]
    assert found[0]["steps"] == {} and found[0]["counters"][0]["name"] == "compile_graphs"
    assert "compile_graphs" in found[0]["explanation"] and "-> 2" in found[0]["explanation"]
    frame = pd.read_csv(out / "series.csv")
    row = frame[(frame["case_id"] == CASE) & (frame["variant"] == "compile")].iloc[0]
    assert row["state"] == "changed" and "compile_graphs" in row["counters"]


def test_a_regression_at_the_newest_run_exits_1_with_regressions_json(tmp_path):
    runs = make_history(tmp_path)
    slow_down(runs[-1], 1.4, "addmm")
    code, report, out = history_of(tmp_path)
    assert code == 1 and report["exit_code"] == 1
    regressed = [r for r in report["regressed"] if r["variant"] == "addmm"]
    assert regressed and regressed[0]["case_id"] == CASE
    entry = regressed[0]
    assert entry["ratio"] > 1.2 and entry["z"] > 3.5
    assert entry["thresholds"] == {"window": 20, "z": 3.5, "min_change": 0.05, "max_cv": 0.15}
    assert entry["run"].endswith("run_09") and entry["explanation"]
    assert "REGRESSED" in (out / "history.html").read_text()


def test_thresholds_from_the_config_and_the_flags(tmp_path):
    runs = make_history(tmp_path, history={"z": 1000, "min_change": 0.05})
    slow_down(runs[-1], 1.4, "addmm")
    code, report, _ = history_of(tmp_path)
    assert code == 0, report["regressed"]  # z 1000: nothing is that far out
    code, report, _ = history_of(tmp_path, "--z", "3.5")
    assert code == 1 and report["regressed"][0]["thresholds"]["z"] == 3.5
    limits = thresholds.from_config({"suite": {"history": {"window": 8}}}, "x")
    assert limits.window == 8 and limits.z == 3.5
    with pytest.raises(ValueError, match="history.window 2: a whole number of runs"):
        thresholds.from_config({"suite": {"history": {"window": 2}}}, "x")


# --- machines, order, bad input, speed ----------------------------------------------------------

def test_runs_of_two_machines_are_never_one_series(tmp_path):
    """Ten runs of a second machine, interleaved in time with the first's and 2x slower on a
    case: two series each, and no change where the machines alternate."""
    make_history(tmp_path / "a")
    for run in make_history(tmp_path / "b", shift=dt.timedelta(seconds=30)):
        set_env(run, cpu="Intel Xeon")
        slow_down(run, 2.0)
    code, report, out = history_of(tmp_path)
    frame = pd.read_csv(out / "series.csv")
    assert set(frame["machine"]) == {"cpu (AMD EPYC, 2 cores)", "cpu (Intel Xeon, 2 cores)"}
    assert len(frame) == 72 and report["runs"] == 20
    eager = frame[frame["variant"] == "eager"]
    assert (eager["runs"] == 10).all() and len(eager) == 12
    assert not [c for c in report["changes"] if c["case_id"] == CASE and c["steps"]]
    assert len(report["newest"]) == 2  # each machine's newest run is gated on its own


def test_order_by_commit_and_its_fallback_to_time(tmp_path):
    a, b = (loading.read_one(p) for p in make_history(tmp_path)[:2])
    a.env["fusebench_commit"], b.env["fusebench_commit"] = "bbbbbbb", "aaaaaaa"
    ordered, line = loading.order_by_commit([a, b], ["aaaaaaa1", "bbbbbbb2"])
    assert ordered == [b, a] and line.startswith("order: by commit")
    ordered, line = loading.order_by_commit([a, b], ["ccccccc3"])
    assert ordered == [a, b] and "not by commit: 2 run(s)" in line
    ordered, line = loading.order_by_commit([a, b], None)
    assert ordered == [a, b] and "no" in line and "repository" in line


@pytest.mark.parametrize("setup, message", [
    ("missing", "no such file or folder"),
    ("empty", "no run folder under it"),
    ("no_runs", "no run folder under it"),
    ("bad_status", "unknown status value(s)"),
    ("bad_flag", "history.z -1.0"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, setup, message):
    path, flags = tmp_path / "runs", []
    if setup == "empty":
        path.mkdir()
    elif setup == "no_runs":
        path.mkdir()
        (path / "notes.txt").write_text("no runs here")
    elif setup in ("bad_status", "bad_flag"):
        runs = make_history(path)
        if setup == "bad_status":
            _edit_csv(runs[3] / "measurements.csv", lambda f: f.index == 0,
                      status=lambda s: s.map(lambda _: "great"))
        else:
            flags = ["--z", "-1"]
    code = command.main([str(path), "--out", str(tmp_path / "out"), *flags])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("fusebench: error: ") and err.count("\n") == 1 and message in err, err


def test_reading_and_judging_stay_fast_per_folder(tmp_path):
    """The issue's target: 200 run folders read and judged in under 10 s here. Measured on 40
    copies (with perturbed times): the per-folder cost, after the imports, must leave room."""
    runs = make_history(tmp_path / "src")
    for i in range(40):
        src = runs[i % len(runs)]
        dst = tmp_path / "many" / f"run_{i:03d}"
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("history"))
        set_env(dst, created=f"2026-12-03T{i // 60:02d}:{i % 60:02d}:00")
    start = time.perf_counter()
    history = loading.load([tmp_path / "many"])
    judged = series.judge(history, command.suite_thresholds(history, {}))
    per_folder = (time.perf_counter() - start) / 40
    assert len(history.runs) == 40 and len(judged.series) == 36
    assert per_folder < 0.03, f"{per_folder * 1000:.1f} ms a folder"  # 200: < 6 s


def test_a_point_is_the_statistics_module_s_point():
    """series.point (plain Python, for speed) is changepoints.Point.from_figures."""
    from suites.reports.history.changepoints import Point
    for figures in ([12.5], [10.0, 11.0], [100.0, 97.5, 103.2, 99.9, 101.4]):
        mine, theirs = series.point(figures), Point.from_figures(figures)
        assert mine.n == theirs.n and mine.log_mean == pytest.approx(theirs.log_mean)
        assert (math.isnan(mine.se) and math.isnan(theirs.se)) or \
            mine.se == pytest.approx(theirs.se)


def test_triton_counters_are_tracked_exactly_where_runs_write_them(tmp_path):
    """triton_counters.csv (per run, where Triton ran): a kernel's spills changing from run 5
    on is a counter change of its row; runs without the file are skipped, not changes."""
    runs = make_history(tmp_path)
    for i, run in enumerate(runs[2:], start=2):
        pd.DataFrame([{"suite": "matmul_add", "case_id": CASE, "variant": "compile",
                       "kernel": "triton_mm_0", "config": "BLOCK_M=64", "arch": "sm_90",
                       "registers": 128, "spills": 4 if i >= 5 else 0,
                       "shared_bytes": 49152}]).to_csv(run / "triton_counters.csv", index=False)
    code, report, _ = history_of(tmp_path)
    found = [c for c in changes_of(report, "compile") if c["counters"]]
    assert [c["run_index"] for c in found] == [6]
    names = [c["name"] for c in found[0]["counters"]]
    # The build's own counter, and its kernel's worst config on the target (which a retuned
    # config, a new build, would carry where the build's own name starts afresh).
    assert names == ["spills (triton_mm_0 BLOCK_M=64, sm_90)",
                     "spills (triton_mm_0, sm_90, worst config)"]
    assert "spills (triton_mm_0 BLOCK_M=64, sm_90) 0 -> 4" in found[0]["explanation"]


def test_a_retuned_config_that_spills_is_a_change_though_its_build_is_new(tmp_path):
    """A commit retunes one config (a new build: its own counters start afresh, which is no
    change) and that build spills: the row's set of builds and its kernel's worst config
    carry the change across, named per target."""
    runs = make_history(tmp_path)
    for i, run in enumerate(runs):
        config, spills = ("128 128 32 2 4", 94428) if i >= 5 else ("128 128 32 4 4", 0)
        pd.DataFrame([{"suite": "matmul_add", "case_id": CASE, "variant": "compile",
                       "kernel": "gemm", "specialisation": "EVEN_K=True", "config": c,
                       "arch": "sm_90", "registers": r, "spill_bytes": s, "shared_bytes": 98304}
                      for c, r, s in (("64 64 32 4 4", 112, 0), (config, 32 if spills else 206,
                                                                   spills))]
                     ).to_csv(run / "triton_counters.csv", index=False)
    code, report, _ = history_of(tmp_path)
    found = [c for c in changes_of(report, "compile") if c["counters"]]
    assert [c["run_index"] for c in found] == [6]
    counters = {c["name"]: c for c in found[0]["counters"]}
    assert counters["spill_bytes (gemm, sm_90, worst config)"]["after"] == 94428
    assert counters["triton builds (sm_90)"]["before"] == "gemm [128 128 32 4 4]; gemm [64 64 32 4 4]"
    assert "spill_bytes (gemm, sm_90, worst config) 0 -> 94428" in found[0]["explanation"] \
        or "triton builds (sm_90): +gemm [128 128 32 2 4], -gemm [128 128 32 4 4]" in \
        found[0]["explanation"]
    from suites.reports.history.counters import CounterEvent
    event = CounterEvent("triton builds (sm_90)", 6, 5, counters["triton builds (sm_90)"]["before"],
                         counters["triton builds (sm_90)"]["after"])
    assert event.text() == "triton builds (sm_90): +gemm [128 128 32 2 4], -gemm [128 128 32 4 4]"
