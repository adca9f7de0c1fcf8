"""Kernel time beside latency: the kernel pass, throughput against kernel time on a GPU, the
kernel speedup and the finding when it and the speedup disagree. The CUDA event code itself
runs only on a GPU (tests/test_gpu.py); here its samples are stood in for."""
import math
import os

import pytest

from kernels import registry
from kernels.base import Case
from suites.traces.findings.measured import row_findings
from suites.harness import kernel_time, timing
from suites.harness.case_clock import CaseClock
from suites.harness.case_run import CaseOutcome, _speedups, measure
from suites.harness.derived import derive, new_row
from suites.harness.variant_passes import Prepared
from suites.harness.rounds import Contender
from suites.results.row import TimingStats
from specs import QUICK, run_spec

CASE = Case.make("matmul_add", {"M": 64, "N": 64, "K": 64}, "bfloat16", "cuda")


def _prepared(variant: str, call=lambda: None, median_us=10.0) -> Prepared:
    op = registry.get_op("matmul_add")
    row = new_row("matmul_add", CASE, registry.get_variant("matmul_add", variant), op, 1)
    contender = Contender(variant, call, last_median_us=median_us)
    return Prepared(row, registry.get_variant("matmul_add", variant), contender)


def test_the_kernel_pass_sets_the_median_of_back_to_back_samples(tmp_path, monkeypatch):
    queued = []

    def fake_samples(call, n, flush):
        queued.append(n)
        return [30.0, 10.0, 20.0]

    monkeypatch.setattr(timing, "kernel_samples", fake_samples)
    monkeypatch.setattr(timing, "l2_flusher", lambda spec, device: None)
    calls = []
    prepared = [_prepared("eager", lambda: calls.append(1), median_us=50.0),
                _prepared("addmm")]
    prepared[1].contender.failed = "boom"  # a variant that failed its rounds gets no kernel time
    notes = kernel_time.kernel_times(prepared, "cuda", run_spec(tmp_path, CASE))
    assert notes == {}
    assert prepared[0].row.kernel_us == 20.0 and math.isnan(prepared[1].row.kernel_us)
    assert calls == [1]  # one untimed call first: the caches held the previous variant
    budget = QUICK.per_round()  # as many calls as a round's share holds, within its bounds
    assert queued == [timing.sample_count(budget, 50.0)]
    assert budget.min_samples <= queued[0] <= budget.max_samples


def test_a_kernel_pass_that_raises_keeps_the_timing_and_says_why(tmp_path, monkeypatch):
    def broken(call, n, flush):
        raise RuntimeError("CUDA error: an illegal memory access")

    monkeypatch.setattr(timing, "kernel_samples", broken)
    monkeypatch.setattr(timing, "l2_flusher", lambda spec, device: None)
    prepared = [_prepared("eager")]
    notes = kernel_time.kernel_times(prepared, "cuda", run_spec(tmp_path, CASE), str)
    assert notes == {"eager": "kernel time failed: CUDA error: an illegal memory access"}
    over = CaseClock(1e-9)  # past the case's time limit: no kernel pass, and it says so
    notes = kernel_time.kernel_times([_prepared("eager")], "cuda", run_spec(tmp_path, CASE),
                                     str, over)
    assert "no kernel time" in notes["eager"]


def test_no_kernel_time_on_a_cpu(tmp_path):
    case = Case.make("matmul_add", {"M": 32, "N": 32, "K": 32}, "float32", "cpu")
    row = measure(registry.get_op("matmul_add"), registry.get_variant("matmul_add", "addmm"),
                  case, run_spec(tmp_path, case, ["addmm"])).row
    assert row.status in ("ok", "noisy")  # a busy machine may leave too few clean rounds
    assert math.isnan(row.kernel_us) and math.isnan(row.kernel_speedup)
    derive(row, None)
    assert row.roofline.tflops == pytest.approx(row.roofline.flops / row.timing.mean_us / 1e6)


def test_throughput_on_a_gpu_is_against_kernel_time_not_latency():
    row = _prepared("addmm").row
    row.timing = TimingStats(10, 60.0, 55.0, 70.0, 50.0, 0.1, 60.0, 58.0, 62.0)
    row.kernel_us = 20.0  # the other 40 us of a call are its host path
    derive(row, None)
    assert row.roofline.tflops == pytest.approx(row.roofline.flops / 20e-6 / 1e12)
    assert row.roofline.gbps == pytest.approx(row.roofline.bytes / 20e-6 / 1e9)
    row.kernel_us = float("nan")  # no kernel time: no throughput, never the latency's
    row.roofline.tflops = float("nan")
    derive(row, None)
    assert math.isnan(row.roofline.tflops)


def test_kernel_speedup_and_the_finding_when_the_host_path_decides():
    base, triton = _prepared("eager").row, _prepared("triton").row
    for row, kernel in ((base, 100.0), (triton, 80.0)):
        row.timing = TimingStats(10, 130.0, 120.0, 140.0, 110.0, 0.1, 130.0, 125.0, 135.0)
        row.kernel_us = kernel
    outcome = CaseOutcome(CASE, [base, triton])
    _speedups(outcome, "eager")
    assert triton.kernel_speedup == pytest.approx(1.25) and base.kernel_speedup == 1.0
    triton.speedup = 0.9  # the call is slower, its kernel faster: the wrapper's host path
    records = lambda: [base.record(), triton.record()]  # noqa: E731  (the findings read these)
    codes = {f["code"]: f for f in row_findings(records(), "matmul_add", "eager")}
    assert set(codes) == {"kernel_speedup_differs"}
    assert "the kernels alone give 1.25x but a call's latency 0.9x" in \
        codes["kernel_speedup_differs"]["statement"]
    triton.speedup = 1.2  # within 1.25x of the kernel speedup: nothing to say
    assert row_findings(records(), "matmul_add", "eager") == []


def test_a_replay_profile_that_missed_the_graphs_kernels_is_emptied_and_said():
    from suites.harness.cuda_graphs import missed_graph_kernels
    from suites.results.row import ProfileStats

    compiled, replay = _prepared("eager").row, _prepared("addmm").row
    compiled.profile = ProfileStats(host_us=50.0, device_us=40.0, n_kernels=3)
    replay.profile = ProfileStats(host_us=12.0, device_us=0.0, n_kernels=0)
    notes = missed_graph_kernels([compiled, replay], {"addmm": "eager"})
    assert notes == {"addmm": "the profile missed the CUDA graph's kernels (0 per call, eager "
                              "ran 3): its device columns are left empty"}
    assert math.isnan(replay.profile.device_us) and replay.profile.host_us == 12.0
    replay.profile = ProfileStats(host_us=12.0, device_us=41.0, n_kernels=4)  # + a copy: fine
    assert missed_graph_kernels([compiled, replay], {"addmm": "eager"}) == {}
    assert registry.get_variant("block", "compile_reduce_overhead").replays == "compile"


def test_a_cuda_run_keeps_cupti_between_profiler_sessions(monkeypatch):
    from suites.harness.cuda_graphs import keep_cupti_between_sessions

    monkeypatch.delenv("TEARDOWN_CUPTI", raising=False)
    keep_cupti_between_sessions("cpu")
    assert "TEARDOWN_CUPTI" not in os.environ
    keep_cupti_between_sessions("cuda")
    assert os.environ["TEARDOWN_CUPTI"] == "0"
    monkeypatch.setenv("TEARDOWN_CUPTI", "1")  # a user's own setting wins
    keep_cupti_between_sessions("cuda")
    assert os.environ["TEARDOWN_CUPTI"] == "1"
