"""python -m suites.collect: the ladder across blocks, on synthetic run folders with known answers
and on small real runs made by run_suite.py."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from suites.reports.ladder.command import main
from suites.reports.kit.breakeven import NEVER, breakeven_table, sentences
from suites.reports.ladder.fits import crossover, fit_overhead
from suites.reports.ladder.table import choose_shape
from test_end_to_end import assert_finished

ROOT = Path(__file__).resolve().parents[1]
OUTPUTS = ["ladder.html", "ladder.md", "ladder.csv", "fits.csv", "breakeven.csv"]


def _row(suite, shape, variant, family, median_us, dtype="float32", status="ok", **extra):
    case_id = "-".join(f"{p}{v}" for p, v in shape.items()) + "-fp32"
    flops = extra.pop("flops") if "flops" in extra else float(np.prod(list(shape.values()))) * 2
    median_us = median_us if status == "ok" else math.nan  # a row that did not run has no times
    row = {"suite": suite, "op": suite, "case_id": case_id, "variant": variant, "family": family,
           "dtype": dtype, "device": "cpu", **shape, "status": status, "reason": "",
           "median_us": median_us, "mean_us": median_us,
           "host_us": median_us, "device_us": median_us / 2, "n_kernels": 2.0, "flops": flops,
           "bytes": flops / 10, "intensity": 10.0, "tflops": flops / median_us / 1e6,
           "speedup": math.nan, "first_call_ms": math.nan, "compile_ms": math.nan}
    row.update(extra)
    return row


def _write_run(folder: Path, suite: str, rows, reference=None, created="2026-01-01T10:00:00",
               gpu=None, peak=1.0):
    folder.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(folder / "measurements.csv", index=False)
    env = {"created": created, "device": "cuda" if gpu else "cpu", "cpu": "test cpu",
           "gpu": gpu, "suite": suite, "reference": reference or {},
           "peaks": {"matmul_tflops": {"float32": peak}, "copy_gbps": 100.0}}
    (folder / "env.json").write_text(json.dumps(env))
    return folder


def _collect(folder, out, capsys):
    assert main([str(folder), "--out", str(out)]) == 0
    return capsys.readouterr().out


# --- the numbers, checked exactly ---------------------------------------------------------------

def test_the_fit_recovers_a_known_overhead_and_throughput():
    flops = np.array([1e6, 1e7, 1e8, 1e9, 1e10])
    fit = fit_overhead(flops, 20 + flops / 1e12 * 1e6)  # 20 us + work at 1 TFLOP/s
    assert fit.overhead_us == pytest.approx(20, rel=1e-9)
    assert fit.tflops == pytest.approx(1.0, rel=1e-9)
    assert fit.max_rel_err < 1e-9 and fit.note == ""


def test_a_negative_overhead_is_clamped_and_said():
    # The line through (1e6, 1 us) and (1e8, 200 us) crosses 0 us at a positive FLOP count.
    fit = fit_overhead([1e6, 1e8], [1.0, 200.0])
    assert fit.overhead_us == 0.0 and "clamped" in fit.note
    # With a = 0: b = sum(f/t) / sum((f/t)^2) over f/t = 1e6, 5e5.
    assert fit.tflops == pytest.approx(1e-6 / (1.5e6 / 1.25e12))
    assert fit_overhead([1e6, 1e6], [3.0, 4.0]) is None  # one work size: not identifiable


def test_the_crossover_is_interpolated_in_log_space():
    # log(device/host) goes from log 0.5 to log 2 between 1e6 and 1e8: zero halfway, at 1e7.
    x, where = crossover([1e5, 1e6, 1e8, 1e9], [1, 5, 20, 8], [10, 10, 10, 10], list("abcd"))
    assert x == pytest.approx(1e7)
    assert where == "at 1e+07 FLOPs (between b and c)"
    assert crossover([1e6, 1e8], [1, 2], [10, 10])[1] == "never within the grid"
    x, where = crossover([1e6, 1e8], [12, 20], [10, 10], ["s", "l"])
    assert math.isnan(x) and where == "from the smallest shape (s)"


def _paired(speedup, low, high):
    return {"speedup": speedup, "speedup_low": low, "speedup_high": high}


def test_break_even_counts_calls_and_says_never():
    rows = pd.DataFrame([
        _row("mlp", {"T": 8}, "eager", "eager", 100.0),
        _row("mlp", {"T": 8}, "compile", "compile", 120.0, compile_ms=5.0,
             **_paired(0.83, 0.8, 0.86)),
        _row("mlp", {"T": 64}, "eager", "eager", 100.0),
        _row("mlp", {"T": 64}, "compile", "compile", 60.0, compile_ms=2.0,
             **_paired(1.67, 1.6, 1.7)),
        _row("mlp", {"T": 128}, "eager", "eager", 100.0),
        _row("mlp", {"T": 128}, "compile", "compile", 1.0, status="skipped"),
    ]).assign(choice="")  # as loaded: the mlp has no categorical parameter
    table = breakeven_table(rows, "mlp", "eager").set_index("case_id")
    assert table.loc["T64-fp32", "saved_us"] == 40.0
    assert table.loc["T64-fp32", "calls"] == pytest.approx(2.0 * 1000 / 40)  # 50 calls
    assert table.loc["T64-fp32", "verdict"] == "after 50 calls"
    assert math.isnan(table.loc["T8-fp32", "calls"]) and table.loc["T8-fp32", "verdict"] == NEVER
    assert table.loc["T128-fp32", "verdict"] == "compile skipped"
    [sentence] = sentences(table.reset_index())
    assert sentence == ("compile (fp32) pays for itself after 50 calls at T64-fp32; never at the smallest "
                        "shape (T8-fp32, slower per call); it pays off at 1 of 2 shapes; not "
                        "measured at 1 shape(s) (compile skipped)")


def test_break_even_is_the_reports_rule_a_saving_inside_the_interval_repays_nothing():
    """Issue 36: collect said "pays for itself after 19 calls at M2048 ... it pays off at 2 of
    6 shapes" beside its own row "inconclusive, 1.04x (0.796-1.35)", while the run report on the
    same folder said "repays it at 0 of 6 cases". One rule: faster by the interval, or no count."""
    from suites.reports.run import answer

    rows = pd.DataFrame([
        _row("matmul_add", {"M": 2048}, "eager", "eager", 100.0),
        _row("matmul_add", {"M": 2048}, "compile", "compile", 96.0, compile_ms=1.0,
             **_paired(1.04, 0.796, 1.35)),
    ]).assign(choice="")
    table = breakeven_table(rows, "matmul_add", "eager")
    assert table["calls"].isna().all() and table["change"].tolist() == ["inconclusive"]
    assert "it pays off at 0 of 1 shapes" not in sentences(table)[0]  # one shape: said alone
    assert "does not pay for itself at M2048-fp32" in sentences(table)[0]
    name = answer.case_namer(rows, "M", ["M"])
    line = answer._breakeven(rows[rows["variant"] == "compile"], rows, "eager", name)
    assert line.endswith("it repays it at 0 of 1 cases")


def test_the_closest_shape_is_the_smallest_log_distance():
    ref = {"B": 8, "S": 1024, "D": 64}
    shapes = [{"B": 1, "S": 1024, "D": 64},   # distance log 8 = 2.08
              {"B": 4, "S": 512, "D": 64},    # log 2 + log 2 = 1.39
              {"B": 8, "S": 128, "D": 64}]    # log 8
    shape, note = choose_shape(shapes, ref)
    assert shape == {"B": 4, "S": 512, "D": 64}
    assert note == "reference shape B8-S1024-D64 not run; closest: B4-S512-D64"
    assert choose_shape(shapes + [dict(ref)], ref) == (ref, "reference shape")
    # A tie keeps the first shape offered (the caller offers the largest first).
    assert choose_shape([{"B": 16, "S": 1024, "D": 64}, {"B": 4, "S": 1024, "D": 64}], ref)[0]["B"] == 16


# --- whole collect runs on synthetic folders ----------------------------------------------------

def test_ladder_rows_families_and_the_closest_shape_note(tmp_path, capsys):
    ref = {"B": 8, "S": 1024}
    rows = []
    for s in (128, 512):
        shape = {"B": 1, "S": s}
        rows += [_row("attention", shape, "naive", "eager", 100.0 * s),
                 _row("attention", shape, "sdpa_math", "library", 80.0 * s),
                 _row("attention", shape, "sdpa_flash", "library", 30.0 * s),
                 _row("attention", shape, "triton_flash", "triton", None, status="skipped",
                      reason="needs a CUDA GPU")]
    _write_run(tmp_path / "runs" / "a", "attention", rows, ref)
    printed = _collect(tmp_path / "runs", tmp_path / "out", capsys)
    ladder = pd.read_csv(tmp_path / "out" / "ladder.csv")
    assert (ladder["shape"] == "B1-S512").all()
    assert (ladder["shape_note"] == "reference shape B8-S1024 not run; closest: B1-S512").all()
    library = ladder.set_index("family").loc["library"]
    assert library["variant"] == "sdpa_flash" and library["speedup"] == pytest.approx(100 / 30)
    assert "fastest of 2 ok" in library["note"]
    triton = ladder.set_index("family").loc["triton"]
    assert triton["status"] == "skipped" and "needs a CUDA GPU" in triton["note"]
    assert "B1-S512 (reference shape B8-S1024 not run; closest: B1-S512)" in printed


def test_a_duplicate_keeps_the_newest_and_is_listed(tmp_path, capsys):
    shape = {"M": 64, "N": 64, "K": 64}
    old = [_row("matmul_add", shape, "eager", "eager", 50.0),
           _row("matmul_add", shape, "compile", "compile", 40.0, compile_ms=1.0)]
    new = [_row("matmul_add", shape, "eager", "eager", 30.0)]
    _write_run(tmp_path / "runs" / "z_old", "matmul_add", old, created="2026-01-01T10:00:00")
    _write_run(tmp_path / "runs" / "a_new", "matmul_add", new, created="2026-02-01T10:00:00")
    printed = _collect(tmp_path / "runs", tmp_path / "out", capsys)
    ladder = pd.read_csv(tmp_path / "out" / "ladder.csv").set_index("family")
    assert ladder.loc["eager", "mean_us"] == 30.0
    # The kept compile row is compared with the kept (newer) baseline.
    assert ladder.loc["compile", "speedup"] == pytest.approx(30 / 40)
    assert "speedup unpaired: its baseline comes from another run" in ladder.loc["compile", "note"]
    assert "1 row(s) appeared in more than one run folder" in printed
    md = (tmp_path / "out" / "ladder.md").read_text()
    assert "## Duplicates dropped" in md
    dropped_line = next(line for line in md.splitlines()
                        if "| matmul_add | M64-N64-K64-fp32 |" in line)
    assert "z_old" in dropped_line and "a_new" in dropped_line


def test_runs_from_two_machines_are_two_ladders_side_by_side(tmp_path, capsys):
    """An A100 job and an H100 job of one sweep: neither is a rerun of the other."""
    shapes = [{"M": 64, "N": 64, "K": 64}, {"M": 1024, "N": 1024, "K": 1024}]
    a100, h100 = "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"
    for gpu, scale, peak in ((a100, 2.0, 300.0), (h100, 1.0, 700.0)):
        rows = [r for shape in shapes for r in (
            _row("matmul_add", shape, "eager", "eager", scale * 50.0, device="cuda"),
            _row("matmul_add", shape, "compile", "compile", scale * 40.0, device="cuda",
                 compile_ms=1.0))]
        _write_run(tmp_path / "runs" / gpu.split()[1], "matmul_add", rows, gpu=gpu, peak=peak)
    printed = _collect(tmp_path / "runs", tmp_path / "out", capsys)
    ladder = pd.read_csv(tmp_path / "out" / "ladder.csv")
    assert ladder["machine"].tolist() == [f"cuda ({a100})", f"cuda ({h100})"] * 2
    assert ladder["family"].tolist() == ["eager", "eager", "compile", "compile"]
    assert ladder["mean_us"].tolist() == [100.0, 50.0, 80.0, 40.0]
    assert ladder["speedup"].tolist() == pytest.approx([1.0, 1.0, 1.25, 1.25])  # own baseline
    assert "No (suite, case, variant) appears in more than one run folder" in printed
    html = (tmp_path / "out" / "ladder.html").read_text()
    assert "matmul_add on cuda (NVIDIA A100-SXM4-80GB)" in html and ">machine<" in html
    fits = pd.read_csv(tmp_path / "out" / "fits.csv")
    assert len(fits) == 2 * 2  # per machine: eager and compile
    assert sorted(p.name for p in (tmp_path / "out").glob("*_roofline.png")) == [
        "matmul_add_cuda__NVIDIA_A100_SXM4_80GB_roofline.png",
        "matmul_add_cuda__NVIDIA_H100_80GB_HBM3_roofline.png"]


def test_speedups_are_paired_within_a_run_and_never_from_a_noisy_baseline(tmp_path, capsys):
    """A run with rounds keeps its rows' paired speedups and intervals; a noisy baseline gives
    no speedup at all (not an unpaired one); the device-time ratio is its own column, and a
    disagreement of more than 1.5x with the speedup is said."""
    small, big = {"M": 64, "N": 64, "K": 64}, {"M": 128, "N": 128, "K": 128}
    rows = [_row("matmul_add", small, "eager", "eager", 10.0, speedup=1.0, rounds=5),
            _row("matmul_add", small, "compile", "compile", 40.0, speedup=0.26, rounds=5,
                 speedup_low=0.25, speedup_high=0.27, device_us=2.0),
            _row("matmul_add", big, "eager", "eager", 100.0, status="noisy", rounds=1,
                 reason="1 of 5 rounds clean"),
            _row("matmul_add", big, "compile", "compile", 90.0, rounds=5)]
    _write_run(tmp_path / "runs" / "a", "matmul_add", rows, {"M": 64, "N": 64, "K": 64})
    _collect(tmp_path / "runs", tmp_path / "out", capsys)
    ladder = pd.read_csv(tmp_path / "out" / "ladder.csv").set_index("family")
    compile_row = ladder.loc["compile"]
    assert (compile_row["speedup"], compile_row["speedup_low"]) == (0.26, 0.25)
    assert compile_row["device_ratio"] == pytest.approx(5.0 / 2.0)
    assert "passes disagree: timing 0.26x, profile device time 2.5x" in compile_row["note"]
    assert "unpaired" not in compile_row["note"]
    _write_run(tmp_path / "runs2" / "a", "matmul_add", rows, {"M": 128, "N": 128, "K": 128})
    _collect(tmp_path / "runs2", tmp_path / "out2", capsys)
    ladder = pd.read_csv(tmp_path / "out2" / "ladder.csv").set_index("family")
    assert ladder.loc["eager", "status"] == "noisy" and pd.isna(ladder.loc["eager", "mean_us"])
    assert pd.isna(ladder.loc["compile", "speedup"])
    assert "unpaired" not in str(ladder.loc["compile", "note"])


def test_default_output_folder_is_inside_the_input(tmp_path, capsys):
    _write_run(tmp_path / "runs" / "r", "linear", [_row("linear", {"T": 8}, "eager", "eager", 5.0)])
    assert main([str(tmp_path / "runs")]) == 0
    assert f"ladder folder: {tmp_path / 'runs' / 'ladder'}" in capsys.readouterr().out
    assert (tmp_path / "runs" / "ladder" / "ladder.html").is_file()


@pytest.mark.parametrize("make", ["missing", "empty", "file", "bad_csv", "out_is_a_file"])
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, capsys, make):
    target, extra = tmp_path / "in", []
    if make == "out_is_a_file":
        _write_run(target / "r", "linear", [_row("linear", {"T": 8}, "eager", "eager", 5.0)])
        (tmp_path / "taken").write_text("x")
        extra = ["--out", str(tmp_path / "taken")]
    elif make == "empty":
        target.mkdir()
    elif make == "file":
        target.write_text("x")
    elif make == "bad_csv":
        (target / "r").mkdir(parents=True)
        (target / "r" / "measurements.csv").write_text("just,one\n1,2\n")
    assert main([str(target), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fusebench: error: ") and err.count("\n") == 1


def test_a_categorical_parameter_splits_fits_and_break_even(tmp_path, capsys):
    """LayerNorm and RMSNorm are two computations: each gets its own fit line and verdict,
    never one line through both (here rms costs 10x layer at every size)."""
    rows = []
    for norm, scale in (("layer", 1.0), ("rms", 10.0)):
        for T in (64, 512, 4096):
            shape = {"T": T, "D": 8, "norm": norm}
            extra = {"case_id": f"T{T}-D8-{norm}-fp32", "flops": 7.0 * T * 8}
            rows.append(_row("norm", shape, "eager", "eager", scale * (5 + T / 100), **extra))
            speedup = (5 + T / 100) / (4 + T / 200)  # faster, by a tight paired interval
            rows.append(_row("norm", shape, "compile", "compile", scale * (4 + T / 200),
                             compile_ms=1.0, **_paired(speedup, speedup * 0.99, speedup * 1.01),
                             **extra))
    _write_run(tmp_path / "runs" / "r", "norm", rows)
    _collect(tmp_path / "runs", tmp_path / "out", capsys)
    fits = pd.read_csv(tmp_path / "out" / "fits.csv", keep_default_na=False)
    assert sorted(zip(fits["variant"], fits["choice"])) == [
        ("compile", "norm=layer"), ("compile", "norm=rms"), ("eager", "norm=layer"),
        ("eager", "norm=rms")]
    eager_rms = fits[(fits["variant"] == "eager") & (fits["choice"] == "norm=rms")].iloc[0]
    assert eager_rms["overhead_us"] == pytest.approx(50.0) and eager_rms["max_rel_err"] < 1e-9
    breakeven = pd.read_csv(tmp_path / "out" / "breakeven.csv")
    assert set(breakeven["choice"]) == {"norm=layer", "norm=rms"}
    md = (tmp_path / "out" / "ladder.md").read_text()
    assert "compile (norm=rms fp32) pays for itself" in md


# --- small real runs ----------------------------------------------------------------------------

TINY = {"matmul_add": ["suite.sizes=[16,32]"],
        "linear": ["suite.axes={T:[16,32],IN:[8],OUT:[8]}"]}


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("ladder_real")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("TRITON_INTERPRET", None)  # a user's run: Triton rows are skipped on a CPU
    # One after the other, in one timing round each: this test reads the ladder's outputs, not
    # the timing, and two runs at once, or rounds compared with each other on a busy machine,
    # would make rows noisy, which are not results a ladder can fit.
    for i, (suite, grid) in enumerate(TINY.items()):
        done = subprocess.run([sys.executable, str(ROOT / "run_suite.py"), f"suite={suite}", *grid,
                               "suite.dtypes=[float32]", "device=cpu", "timing=quick",
                               "timing.rounds=1", f"hydra.run.dir={root / f'{i}_{suite}'}"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert_finished(done, root / f"{i}_{suite}")
    return root


def test_real_runs_make_every_output(real_runs, tmp_path, capsys):
    out = tmp_path / "ladder"
    printed = _collect(real_runs, out, capsys)
    for name in OUTPUTS:
        assert (out / name).stat().st_size > 100, name
    rows = pd.concat([pd.read_csv(p / "measurements.csv") for p in real_runs.iterdir()])
    # A suite's fit and roofline are drawn from its rows that are results (the busy machine
    # can make a row noisy); the ladder states each row's status as the run measured it.
    plotted = [suite for suite in TINY if (rows[rows["suite"] == suite]["status"] == "ok").any()]
    for suite in plotted:
        for kind in ("fit", "roofline"):
            assert (out / f"{suite}_{kind}.png").stat().st_size > 10_000, (suite, kind)
    ladder = pd.read_csv(out / "ladder.csv")
    assert list(dict.fromkeys(ladder["suite"])) == ["matmul_add", "linear"]  # ladder order
    for row in ladder[ladder["family"] == "eager"].itertuples():
        measured = rows[(rows["suite"] == row.suite) & (rows["variant"] == row.variant)
                        & rows["case_id"].str.startswith(f"{row.shape}-")]
        assert [row.status] == list(measured["status"]), (row, measured)
    assert set(ladder.loc[ladder["suite"] == "matmul_add", "shape_note"]) == {
        "reference shape M4096-N4096-K4096 not run; closest: M32-N32-K32"}
    fits = pd.read_csv(out / "fits.csv")
    assert set(fits["suite"]) == set(TINY)
    # A row the machine's load made noisy is not a result, so its fit may have too few shapes:
    # then the fit says why instead of a number.
    said = fits["overhead_us"].notna() | fits["fit_note"].fillna("").str.len().gt(0)
    assert said.all(), fits.to_string()
    for (suite, variant), group in rows.groupby(["suite", "variant"]):
        if (group["status"] == "ok").all() and variant != "triton":
            fit = fits[(fits["suite"] == suite) & (fits["variant"] == variant)]
            # A fit, or "no fit" where the best line misses a point (a busy machine can time
            # the larger size faster than the smaller one): never a line 54% off its points.
            fitted = fit["overhead_us"].notna() & (fit["max_rel_err"] <= 0.25)
            missed = fit["fit_note"].fillna("").str.startswith("no fit: the best line misses")
            assert (fitted | missed).all(), (suite, variant, fit.to_string())
    breakeven = pd.read_csv(out / "breakeven.csv")
    assert set(breakeven["variant"]) == {"compile"} and len(breakeven) == 4
    page = (out / "ladder.html").read_text()
    # The fit and roofline plots of both suites, and the answer's; the one script sorts tables.
    # The answer's plot wherever a variant has a speedup against its block's baseline (eager).
    answered = ((ladder["status"] == "ok") & ladder["speedup"].notna()
                & (ladder["variant"] != "eager")).any()
    assert (out / "answer.png").is_file() == answered
    images = 2 * len(plotted) + answered
    assert page.count("data:image/png;base64,") == images and page.count("<script") == 1
    assert "## matmul_add" in (out / "ladder.md").read_text()
    assert f"ladder folder: {out}" in printed and "compile" in printed
