"""Kernel time beside latency: the kernel pass, throughput against kernel time on a GPU, the
kernel speedup and the finding when it and the speedup disagree. The CUDA event code itself
runs only on a GPU (tests/test_gpu.py); here its samples are stood in for."""
import contextlib
import math
import os
import time
from dataclasses import replace

import pytest

from kernels import registry
from kernels.base import Case
from suites.traces.findings.measured import row_findings
from suites.harness import timing
from suites.harness.contention import RoundLoad
from suites.harness.case_run import CaseOutcome, measure
from suites.harness.derived import derive, new_row
from suites.harness.variant_passes import Prepared
from suites.harness.rounds import Contender
from suites.results.row import TimingStats
from specs import run_spec

CASE = Case.make("matmul_add", {"M": 64, "N": 64, "K": 64}, "bfloat16", "cuda")


def _prepared(variant: str, call=lambda: None, median_us=10.0) -> Prepared:
    op = registry.get_op("matmul_add")
    row = new_row("matmul_add", CASE, registry.get_variant("matmul_add", variant), op, 1)
    contender = Contender(variant, call, last_median_us=median_us)
    return Prepared(row, registry.get_variant("matmul_add", variant), contender)


def _fake_cuda(monkeypatch, latency: dict, kernel: dict, seen: list):
    """Shares on a stand-in GPU: each variant's latency and kernel figure per round, drawn from
    `latency` and `kernel` (variant -> per-round figures, by call count), as blocks of 4 calls
    on a 0.5 us clock."""
    def share(table, call, budget):
        name = call.__name__
        seen.append((name, budget))
        figure = table[name][len([s for s in seen if s[0] == name]) // 2 % len(table[name])]
        return timing.Samples([figure, figure], 4, 0.5)

    monkeypatch.setattr(timing, "sample_calls", lambda call, device, spec, warmup, budget, flush:
                        share(latency, call, budget))
    monkeypatch.setattr(timing, "kernel_share", lambda call, budget, flush:
                        share(kernel, call, budget))
    monkeypatch.setattr(timing, "l2_flusher", lambda spec, device: None)


class _Quiet:
    """A load meter that sees an idle machine."""

    def start(self):
        pass

    def stop(self):
        return RoundLoad(0.1, 0.0, 0.0)


def _named(name):
    def call():
        return None
    call.__name__ = name
    return call


def test_kernel_time_is_measured_in_the_rounds_paired_and_with_an_interval(tmp_path,
                                                                          monkeypatch):
    from suites.harness.case_run import finish
    from suites.harness.rounds import time_rounds

    seen = []
    # Kernel figures that repeat exactly from round to round: the interval still has width.
    _fake_cuda(monkeypatch, latency={"eager": [130.0, 131.0, 129.0], "addmm": [120.0, 121.0]},
               kernel={"eager": [100.0], "addmm": [80.0]}, seen=seen)

    spec = run_spec(tmp_path, CASE)
    spec = replace(spec, timing=replace(spec.timing, rounds=4))
    prepared = [_prepared("eager", _named("eager")), _prepared("addmm", _named("addmm"))]
    slots = time_rounds([p.contender for p in prepared], spec.timing, "cuda", _Quiet())
    assert len(slots) == 2 * spec.timing.rounds
    budget = spec.timing.per_round()  # the share is split: half latency, half kernel time
    assert {b.seconds for _, b in seen} == {budget.seconds / 2}
    assert all(s.kernel_samples_us and s.calls_per_sample == 4 for s in slots)
    outcome = CaseOutcome(CASE, [p.row for p in prepared], slots)
    finish(outcome, spec, None)
    eager, addmm = outcome.rows
    assert eager.kernel_us == 100.0 and addmm.kernel_us == 80.0
    assert addmm.kernel_low_us < 80.0 < addmm.kernel_high_us  # the clock's step: no zero width
    assert addmm.kernel_speedup == pytest.approx(1.25)
    assert addmm.kernel_speedup_low < 1.25 < addmm.kernel_speedup_high
    # Identical rounds: the width is the clock's, a step over sqrt(calls) on each side (32).
    half = 0.5 / math.sqrt(32) * (1 / 80 + 1 / 100)
    assert addmm.kernel_speedup_high / addmm.kernel_speedup_low == pytest.approx(math.exp(2 * half))
    assert eager.kernel_speedup == eager.kernel_speedup_low == eager.kernel_speedup_high == 1.0
    assert addmm.timing.calls_per_sample == 4 and addmm.speedup > 1


def test_a_kernel_share_that_raises_keeps_the_latency_and_says_why(tmp_path, monkeypatch):
    from suites.harness.case_run import _kernel_notes
    from suites.harness.rounds import time_rounds

    kernel_calls = []

    def broken(call, budget, flush):
        kernel_calls.append(1)
        raise RuntimeError("CUDA error: an illegal memory access")

    monkeypatch.setattr(timing, "sample_calls", lambda *a: timing.Samples([5.0]))
    monkeypatch.setattr(timing, "kernel_share", broken)
    monkeypatch.setattr(timing, "l2_flusher", lambda spec, device: None)

    spec = run_spec(tmp_path, CASE)
    spec = replace(spec, timing=replace(spec.timing, rounds=3))
    prepared = _prepared("eager")
    slots = time_rounds([prepared.contender], spec.timing, "cuda", _Quiet(), on_error=str)
    assert len(slots) == 3 and all(s.kernel_mean_us is None for s in slots)
    assert kernel_calls == [1]  # tried once, not again in the later rounds
    assert not prepared.contender.failed
    assert _kernel_notes([prepared]) == {
        "eager": "kernel time failed: CUDA error: an illegal memory access"}


def test_a_cuda_sample_spans_enough_clock_steps(monkeypatch):
    """Each sample is a block of calls spanning SPAN_STEPS steps of the event clock, each call
    in its own event pair; the sample's resolution is the step over its calls."""
    from suites.harness import event_clock

    batches = []

    def fake_batch(call, n, flush, drain=True):
        batches.append((n, drain))
        return [6.0 if i % 5 else 6.5 for i in range(n)]  # on a 0.5 us grid

    monkeypatch.setattr(timing, "_cuda_batch", fake_batch)
    monkeypatch.setattr(timing, "event_resolution_us", lambda index: 0.5)
    monkeypatch.setattr(timing.torch.cuda, "current_device", lambda: 0)
    budget = timing.Budget(0.01, 2, 1000)
    samples = timing._cuda_samples(lambda: None, budget, None)
    calls = event_clock.calls_per_sample(6.0, 0.5)
    assert calls == 17 and samples.calls == calls  # 17 x 6 us >= 200 x 0.5 us
    assert samples.resolution_us == 0.5  # the step each call was read with
    assert batches[1] == (len(samples.times_us) * calls, True)
    # As many calls as the budget holds (counted in calls, not samples), in blocks.
    assert len(samples.times_us) == timing.sample_count(budget, 6.0) // calls
    assert len(set(samples.times_us)) > 1  # blocks average the grid: not one grid value
    assert all(6.0 < t < 6.5 for t in samples.times_us)
    kernel = timing.kernel_share(lambda: None, budget, None)
    assert batches[-1][1] is False and kernel.calls == calls  # queued: no drain


def test_the_clock_step_is_the_smallest_gap_between_readings():
    from suites.harness.event_clock import calls_per_sample, smallest_step

    assert smallest_step([0.0, 0.512, 1.024, 0.512, 2.048]) == pytest.approx(0.512)
    assert smallest_step([1.0, 1.0]) is None
    # A gap under 1 ns is float noise, not a step.
    assert smallest_step([0.0, 0.0004, 0.5120002, 0.512]) == pytest.approx(0.512)
    assert calls_per_sample(200.0, 0.5) == 1 and calls_per_sample(99.0, 0.5) == 2
    assert calls_per_sample(float("nan"), 0.5) == 1 and calls_per_sample(5.0, 0.0) == 1
    assert timing.blocks([1.0, 2.0, 3.0, 4.0, 5.0], 2) == [1.5, 3.5]  # a partial block dropped
    assert timing.blocks([1.0, 2.0], 4) == [1.5]  # unless it is the only one


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
    base.kernel_speedup, triton.kernel_speedup = 1.0, 1.25  # paired in rounds: tested above
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
    """Only a CUDA run with a variant that replays a CUDA graph keeps CUPTI attached: in any
    other its callbacks would only add to every launch timed after the first profile."""
    from suites.harness.cuda_graphs import keep_cupti_between_sessions

    monkeypatch.delenv("TEARDOWN_CUPTI", raising=False)
    keep_cupti_between_sessions("cpu")
    assert "TEARDOWN_CUPTI" not in os.environ
    keep_cupti_between_sessions("cuda", replaying=False)
    assert "TEARDOWN_CUPTI" not in os.environ
    keep_cupti_between_sessions("cuda")
    assert os.environ["TEARDOWN_CUPTI"] == "0"
    monkeypatch.setenv("TEARDOWN_CUPTI", "1")  # a user's own setting wins
    keep_cupti_between_sessions("cuda")
    assert os.environ["TEARDOWN_CUPTI"] == "1"


class _GridEvent:
    """A stand-in CUDA event on a CPU: records perf_counter on a 0.5 us grid (as CUDA's event
    clock reads), elapsed_time in milliseconds as torch's does."""
    STEP_S = 0.5e-6

    def __init__(self, enable_timing=False):
        self.t = None

    def record(self):
        self.t = math.floor(time.perf_counter() / self.STEP_S) * self.STEP_S

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


def _spin(us: float):
    deadline = time.perf_counter() + us / 1e6
    while time.perf_counter() < deadline:
        pass


def test_the_cuda_path_end_to_end_on_a_grid_clock(monkeypatch):
    """The CUDA sampling code itself (event clock step, blocks of calls, kernel share), run on a
    CPU with events that read a 0.5 us grid: the step is found, a 6 us call is read in blocks
    spanning 200 steps, and its figure is not stuck on the grid."""
    from suites.harness import event_clock

    cuda = timing.torch.cuda
    monkeypatch.setattr(cuda, "Event", _GridEvent)
    monkeypatch.setattr(cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(cuda, "_sleep", lambda cycles: _spin(cycles / 1e3))  # 1 GHz
    monkeypatch.setattr(cuda, "current_device", lambda: 0)
    monkeypatch.setattr(cuda, "device", lambda index: contextlib.nullcontext())
    event_clock.event_resolution_us.cache_clear()
    try:
        assert event_clock.event_resolution_us(0) == pytest.approx(0.5)
        budget = timing.Budget(0.01, 2, 400)
        latency = timing._cuda_samples(lambda: _spin(6.0), budget, None)
        kernel = timing.kernel_share(lambda: _spin(6.0), budget, None)
    finally:
        event_clock.event_resolution_us.cache_clear()
    for share in (latency, kernel):
        assert share.resolution_us == pytest.approx(0.5)
        # ~17 calls a sample; sized from a 3-call probe on a machine that may be busy, so a
        # sample is asked to span at least half the target, not exactly it.
        assert share.calls * 6.0 >= 0.5 * event_clock.SPAN_STEPS * 0.5
        assert share.calls * len(share.times_us) <= 400 + share.calls  # sized in calls
        figure = sorted(share.times_us)[len(share.times_us) // 2]  # a busy machine's blocks aside
        assert 5.5 < figure < 12.0  # the spin, plus a little loop overhead
        assert any(t % 0.5 > 1e-9 for t in share.times_us)  # averaged off the grid
