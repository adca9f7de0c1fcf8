"""The harness on its own: the pass rule, timing summaries, and that every outcome is a row."""
import math
from pathlib import Path

import pytest
import torch

from kernels import registry
from kernels.base import Case, Variant
from suites.harness import timing
from suites.harness.correctness import compare
from suites.harness.measure import measure
from suites.spec import ProfileSpec, RunSpec, SuiteSpec, TimingSpec

QUICK = TimingSpec("test", budget_s=0.01, min_samples=3, max_samples=50, warmup_calls=1,
                   compile_warmup_calls=1, l2_flush=False, threads=1)
CASE = Case.make("matmul_add", {"M": 8, "N": 8, "K": 8}, "float32", "cpu")


def spec_for(tmp_path: Path, profile: bool = False) -> RunSpec:
    suite = SuiteSpec("matmul_add", "matmul_add", "M", ((("M", 8), ("N", 8), ("K", 8)),),
                      ("float32",), ("eager",), "eager")
    return RunSpec(suite, "cpu", QUICK, ProfileSpec(profile, 0, 1, 2, False, 10), 0, False,
                   False, tmp_path)


def fake(prepare, supports=lambda case: None) -> Variant:
    return Variant("matmul_add", "fake", "eager", prepare, supports)


def test_compare_pass_rule_uses_twice_the_baseline_error_plus_a_floor():
    ref = torch.ones(4, dtype=torch.float64)
    assert compare(ref.float(), ref, "float32", None).passed
    off = (ref * (1 + 3e-3)).to(torch.bfloat16)  # rounds to the nearest bf16 value
    assert compare(off, ref, "bfloat16", baseline_err=1e-3).passed  # 2e-3 + 8e-3 floor
    assert not compare(ref.float() * 1.1, ref, "float32", baseline_err=1e-6).passed


def test_compare_rejects_nan_and_wrong_shapes():
    ref = torch.ones(4, dtype=torch.float64)
    nan = torch.tensor([1.0, float("nan"), 1.0, 1.0])
    assert compare(nan, ref, "float32", None).reason == "output has NaN or Inf"
    assert "shape" in compare(torch.ones(3), ref, "float32", None).reason


def test_summarize_quantiles():
    s = timing.summarize([float(v) for v in range(1, 101)])
    assert s["median_us"] == pytest.approx(50.5) and s["min_us"] == 1.0
    assert s["p10_us"] == pytest.approx(10.9) and s["p90_us"] == pytest.approx(90.1)
    assert s["n_samples"] == 100


def test_cpu_timing_meets_minimum_samples_and_budget():
    samples = timing.sample_calls(lambda: None, "cpu", QUICK, warmup_calls=1)
    assert QUICK.min_samples <= len(samples) <= QUICK.max_samples
    assert all(s >= 0 for s in samples)


def test_skip_reason_becomes_a_skipped_row(tmp_path):
    op = registry.get_op("matmul_add")
    out = measure(op, fake(None, supports=lambda c: "needs a unicorn"), CASE, spec_for(tmp_path), None)
    assert out.row == {"status": "skipped", "reason": "needs a unicorn"}


def test_a_crash_becomes_a_failed_row_with_its_reason(tmp_path):
    def prepare(case, inputs):
        def call():
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB")
        return call
    out = measure(registry.get_op("matmul_add"), fake(prepare), CASE, spec_for(tmp_path), None)
    assert out.row["status"] == "failed"
    assert out.row["reason"].startswith("OutOfMemoryError: CUDA out of memory")


def test_a_wrong_answer_is_incorrect_and_not_timed(tmp_path):
    def prepare(case, inputs):
        return lambda: inputs["x"] @ inputs["w"]  # forgot the bias
    out = measure(registry.get_op("matmul_add"), fake(prepare), CASE, spec_for(tmp_path), 1e-7)
    assert out.row["status"] == "incorrect" and "exceeds tolerance" in out.row["reason"]
    assert out.samples_us == [] and "median_us" not in out.row


def test_a_result_remembered_from_the_first_call_is_caught(tmp_path):
    def prepare(case, inputs):
        first = torch.addmm(inputs["b"], inputs["x"], inputs["w"])
        return lambda: first  # the fresh draw of the correctness pass exposes it
    out = measure(registry.get_op("matmul_add"), fake(prepare), CASE, spec_for(tmp_path), 1e-7)
    assert out.row["status"] == "incorrect"


def test_ok_row_has_timing_and_profile_columns(tmp_path):
    variant = registry.get_variant("matmul_add", "eager")
    out = measure(registry.get_op("matmul_add"), variant, CASE, spec_for(tmp_path, profile=True), None)
    row = out.row
    assert row["status"] == "ok" and row["reason"] == ""
    assert row["n_samples"] == len(out.samples_us) >= QUICK.min_samples
    assert row["p10_us"] <= row["median_us"] <= row["p90_us"]
    assert row["n_kernels"] == 2  # aten::mm and aten::add
    assert row["host_us"] > 0 and not math.isnan(row["device_us"])
    assert (tmp_path / row["trace"]).is_file() and (tmp_path / row["table"]).is_file()
    assert "aten::mm" in (tmp_path / row["table"]).read_text()


def test_busy_machine_warning(monkeypatch):
    from suites.harness import environment

    monkeypatch.setattr(environment.os, "cpu_count", lambda: 2)
    warning = environment.busy_machine_warning(2, "cpu", others=0.9)
    assert "other processes keep 0.9 of this machine's 2 cores busy" in warning
    assert environment.busy_machine_warning(2, "cuda", others=0.9) is None
    assert environment.busy_machine_warning(2, "cpu", others=0.1) is None
    assert environment.busy_machine_warning(1, "cpu", others=0.9) is None
    others = environment.cores_used_by_others(0.05)
    assert others is None or 0.0 <= others <= 2.0 + 1e-9


def test_an_error_confined_to_small_rows_is_caught():
    # Row 0 is large, row 1 small (as late query rows of causal attention are): a wrong small
    # row is 100% off in its own scale, though only 1% of the largest value overall.
    ref = torch.tensor([[100.0, 90.0], [1.0, 1.0]], dtype=torch.float64)
    out = torch.tensor([[100.0, 90.0], [2.0, 2.0]])
    check = compare(out, ref, "bfloat16", baseline_err=1e-3)
    assert not check.passed and check.scaled_err == pytest.approx(1.0)


def test_runner_sets_the_roofline_before_the_findings_read_it(tmp_path):
    """A long, thin linear layer: 0.4 FLOP per byte, far under any machine's ridge point, and
    the compute fills the call, so the finding must say memory-bound."""
    from suites.harness.runner import run

    suite = SuiteSpec("linear", "linear", "T", ((("T", 262144), ("IN", 1), ("OUT", 1)),),
                      ("float32",), ("eager",), "eager")
    spec = RunSpec(suite, "cpu", QUICK, ProfileSpec(True, 1, 1, 3, False, 10), 0, True, False,
                   tmp_path)
    result = run(spec)
    row = result.frame.iloc[0]
    assert row["roofline_bound"] == "memory"
    codes = {f["code"] for f in result.findings}
    assert "memory_bound" in codes or "overhead_bound" in codes
    assert "compute_bound" not in codes
