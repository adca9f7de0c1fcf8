"""What a reader is told about the numbers: the answer per variant with its intervals, the
machine-state banner, the row findings made after the sweep, the peaks, the thread rule."""
import math

import pandas as pd
import pytest
import torch

from kernels.base import Case
from kernels import registry
from suites.traces.findings.measured import row_findings
from suites.harness.calibration import best_peaks
from suites.harness.derived import new_row
from suites.reports.kit.banner import banner_lines, rounds_line
from suites.reports.kit.change import SAME_WITHIN, Change, classify
from suites.reports.run.by_size import lines_by_size
from suites.results.columns import Status
from suites.results.row import Roofline
from suites.config.run_spec import auto_threads, timing_spec

NAN = math.nan


@pytest.mark.parametrize("low, high, expected", [
    (1.4, 1.6, Change.FASTER), (0.45, 0.55, Change.SLOWER), (0.99, 1.01, Change.EQUIVALENT),
    (0.95, 1.1, Change.INCONCLUSIVE), (NAN, NAN, Change.INCONCLUSIVE)])
def test_classify(low, high, expected):
    assert classify(low, high, SAME_WITHIN) == expected


def _frame(rows):
    return pd.DataFrame([dict(suite="matmul_add", case_id=f"M{m}-N{m}-K{m}-fp32", variant=v,
                              family="compile" if v == "compile" else "eager", dtype="float32",
                              status=st, M=m, N=m, K=m, speedup=s, speedup_low=lo,
                              speedup_high=hi, pct_peak=pct)
                         for v, m, st, s, lo, hi, pct in rows])


def test_the_answer_groups_sizes_into_stretches_with_intervals():
    frame = _frame([("eager", 64, "ok", 1.0, 1.0, 1.0, 50),
                    ("compile", 64, "ok", 0.52, 0.49, 0.55, 20),
                    ("compile", 128, "ok", 0.6, 0.57, 0.63, 20),
                    ("compile", 256, "noisy", NAN, NAN, NAN, NAN),
                    ("compile", 512, "ok", 1.0, 0.99, 1.01, 20),
                    ("compile", 1024, "ok", 1.0, 0.995, 1.005, 20)])
    (line,) = lines_by_size(frame, "M", ["M", "N", "K"], "eager")
    # The noisy M256 breaks the stretch: no verdict covers a size that was not measured.
    assert line == ("compile (compile), fp32: slower at M64 to M128: 0.52x-0.6x; noisy at M256; "
                    "equivalent within 2% at M512 to M1024: 1x-1x")
    one = lines_by_size(frame[frame["M"] <= 64], "M", ["M", "N", "K"], "eager")
    assert one == ["compile (compile), fp32: slower at M64: 0.52x (0.49-0.55)"]


def test_the_banner_says_what_was_not_clean():
    env = {"warning": "warning: other processes keep 1.2 of this machine's 2 cores busy",
           "rounds": {"shares": 20, "states": {"clean": 16, "contended": 3, "stalled": 1},
                      "remeasured_cases": ["M64-N64-K64-fp32"], "noisy_rows": 1}}
    frame = _frame([("eager", 64, "ok", 1.0, 1.0, 1.0, 384.0),
                    ("compile", 64, "noisy", NAN, NAN, NAN, NAN)])
    lines = banner_lines([env], frame)
    assert lines[0].startswith("warning: other processes keep 1.2")
    assert lines[1].startswith("4 of 20 timing rounds (one variant's share each) were not clean "
                               "(3 contended, 1 stalled)")
    assert ("1 case(s) were re-measured later in the sweep, their first rounds too few clean "
            "(M64-N64-K64-fp32)") in lines[1]
    assert lines[2].startswith("1 row(s) are noisy")
    assert "above 100% of the measured roofline (up to 384.0%)" in lines[3]
    assert rounds_line({"states": {"clean": 9}, "remeasured_cases": []}) is None
    # Every round kept was clean, one case re-measured: said alone, never "0 of 36 ... ()".
    assert rounds_line({"states": {"clean": 36}, "remeasured_cases": ["T64-fp32-bwd"]}) == (
        "1 case(s) were re-measured later in the sweep, their first rounds too few clean "
        "(T64-fp32-bwd).")
    assert banner_lines([{}], _frame([("eager", 64, "ok", 1.0, 1.0, 1.0, 50)])) == []


def _row(variant="compile", **values):
    op = registry.get_op("matmul_add")
    case = Case.make("matmul_add", {"M": 64, "N": 64, "K": 64}, "float32", "cpu")
    row = new_row("matmul_add", case, registry.get_variant("matmul_add", variant), op, 1)
    for name, value in values.items():
        setattr(row, name, value)
    return row


def test_row_findings_above_peak_passes_disagree_rounds_dropped():
    from suites.results.row import TimingStats

    timing = TimingStats(25, 10.0, 9.0, 11.0, 9.0, 0.1, 10.0, 9.5, 10.5, rounds=3, rounds_dropped=2)
    above = _row(roofline=Roofline(1.0, 1.0, pct_peak=384.0), timing=timing,
                 speedup=1.54, device_ratio=0.54)
    codes = {f["code"]: f for f in row_findings([above.record()], "matmul_add", "eager")}
    assert set(codes) == {"above_peak", "passes_disagree", "rounds_dropped"}
    assert codes["above_peak"]["statement"].startswith("384% of the measured roofline")
    assert "1.54x speedup but the profile pass's device time gives 0.54x" in \
        codes["passes_disagree"]["statement"]
    assert "2 timing round(s) were not clean" in codes["rounds_dropped"]["statement"]
    fine = _row(roofline=Roofline(1.0, 1.0, pct_peak=80.0), speedup=1.2, device_ratio=1.1)
    assert row_findings([fine.record()], "matmul_add", "eager") == []
    noisy = _row(roofline=Roofline(1.0, 1.0, pct_peak=384.0), status=Status.NOISY)
    # A noisy row's figures are not results.
    assert row_findings([noisy.record()], "matmul_add", "eager") == []


def test_the_best_of_two_peak_probes_is_kept():
    start = {"matmul_tflops": {"float32": 0.05, "bfloat16": 0.2}, "copy_gbps": 10.0, "method": "m"}
    end = {"matmul_tflops": {"float32": 0.15, "bfloat16": 0.1}, "copy_gbps": 25.0, "method": "m"}
    best = best_peaks([start, end])
    assert best["matmul_tflops"] == {"float32": 0.15, "bfloat16": 0.2}
    assert best["copy_gbps"] == 25.0 and "best of 2 probes" in best["method"]


def test_auto_threads_leaves_one_core_free(monkeypatch):
    import os

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert auto_threads()[0] == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    threads, rule = auto_threads()
    assert threads == 1 and rule.startswith("auto: 1")
    spec = timing_spec({"budget_s": 0.1, "min_samples": 2, "max_samples": 5, "warmup_calls": 1,
                        "compile_warmup_calls": 1, "threads": 1, "rounds": 4})
    assert (spec.threads, spec.threads_rule, spec.rounds) == (1, "set: timing.threads", 4)
    per_round = spec.per_round()
    assert per_round.seconds == pytest.approx(0.025) and per_round.min_samples == 1


def test_a_failing_end_of_run_probe_keeps_the_first(tmp_path, monkeypatch):
    from suites.harness import runner
    from specs import run_spec

    probes = iter([{"matmul_tflops": {"float32": 0.1}, "copy_gbps": 10.0, "method": "m"}])

    def calibrate(device, dtypes):
        try:
            return next(probes)
        except StopIteration:
            raise torch.OutOfMemoryError("probe out of memory") from None

    monkeypatch.setattr(runner, "calibrate", calibrate)
    case = Case.make("matmul_add", {"M": 8, "N": 8, "K": 8}, "float32", "cpu")
    result = runner.run(run_spec(tmp_path, case, calibrate=True))
    assert result.env["peaks"]["copy_gbps"] == 10.0
    assert "probe out of memory" in result.env["peak_probe_error"]
    assert (tmp_path / "measurements.csv").is_file()


def test_page_faults_a_call_far_over_the_baseline_are_named():
    from suites.results.row import TimingStats

    def timed(faults):
        return TimingStats(25, 10.0, 9.0, 11.0, 9.0, 0.1, 10.0, 9.5, 10.5, rounds=3,
                           faults_per_call=faults)

    base = _row("eager", timing=timed(40.0))
    faulting, close = _row("compile", timing=timed(25_000.0)), _row("addmm", timing=timed(300.0))
    found = row_findings([r.record() for r in (base, faulting, close)], "matmul_add", "eager")
    faults = [f for f in found if f["code"] == "page_faults_differ"]
    assert [f["variant"] for f in faults] == ["compile"]  # 300 a call: under 500 more
    assert faults[0]["statement"].startswith("25,000 page faults a call against the baseline's 40")


def test_slow_calls_when_a_share_of_calls_pays_its_own_cost():
    from suites.results.row import TimingStats

    def timed(mean):
        return TimingStats(600, 10.0, 9.0, 11.0, 9.0, 0.1, mean, mean * 0.98, mean * 1.02,
                           rounds=10, slow_calls=1 / 12)

    every_12th = _row(timing=timed(10.0 + 2000.0 / 12))
    found = row_findings([every_12th.record()], "matmul_add", "eager")
    statement = next(f["statement"] for f in found if f["code"] == "slow_calls")
    assert statement.startswith("8.3% of its calls are slow (over twice the median call), "
                                "adding 166.7 us a call")
    near = _row(timing=timed(10.5))
    assert not [f for f in row_findings([near.record()], "matmul_add", "eager")
                if f["code"] == "slow_calls"]
