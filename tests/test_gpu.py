"""Checks that need a CUDA GPU (skipped elsewhere): the CUDA timing path, kernels per call read
from real CUPTI traces, and the Triton variants against cuBLAS on the device. Each test applies
the run's CUPTI setting first, as the harness does before a run's first profiler session."""
import os
import re
from collections import Counter

import pytest
import torch

from kernels import registry
from kernels.base import Case
from suites.harness.case_run import measure
from suites.harness.cuda_graphs import keep_cupti_between_sessions
from suites.harness.timing import TimingSpec
from suites.harness.profile_pass import ProfileSpec
from specs import run_spec

pytestmark = pytest.mark.gpu

TIMING = TimingSpec("gpu-test", 0.05, 10, 200, 3, 3, True, torch.get_num_threads(), rounds=4)
CUPTI_SETTING = "TEARDOWN_CUPTI"  # what keep_cupti_between_sessions sets (a user's own stands)


def runs(op_name: str, *variants: str):
    """The variants a test measures, as a run's suite would list them: its CUPTI setting
    (cupti_as_in_a_run) follows from them. A test without it replays no CUDA graph."""
    def mark(test):
        test.run_variants = (op_name, variants)
        return test
    return mark


@pytest.fixture(autouse=True)
def cupti_as_in_a_run(request):
    """The CUPTI setting a run of the test's variants gets, by the function the harness calls
    (runner._start): kept set up between profiler sessions when one of them replays a CUDA
    graph, else torn down as Kineto does. Applied before the test's first session, as a run
    applies it before its own: a graph captured after a session tore CUPTI down replays with
    none of its kernels in the next profile. Undone after the test, so the next starts as a
    fresh run would (a user's own setting stands throughout)."""
    op_name, names = getattr(request.function, "run_variants", ("matmul_add", ()))
    before = os.environ.get(CUPTI_SETTING)
    keep_cupti_between_sessions("cuda", any(registry.get_variant(op_name, n).replays
                                            for n in names))
    yield
    if before is None:
        os.environ.pop(CUPTI_SETTING, None)
    else:
        os.environ[CUPTI_SETTING] = before


def _measured(tmp_path, op_name, variant, params, dtype="bfloat16"):
    case = Case.make(op_name, params, dtype, "cuda")
    spec = run_spec(tmp_path, case, [variant], TIMING, ProfileSpec(True, 1, 1, 3, False, 10))
    out = measure(registry.get_op(op_name), registry.get_variant(op_name, variant), case, spec, None)
    assert out.row.ok, out.row
    return out


def _row(tmp_path, op_name, variant, params, dtype="bfloat16"):
    return _measured(tmp_path, op_name, variant, params, dtype).row


# cuBLAS(Lt) chooses its kernels per shape and version: a split-K GEMM adds a reduction kernel,
# a workspace a memset. The tests count what the series counts (GEMMs, and the elementwise
# kernels around them) and let the library add its own.
GEMM = re.compile(r"gemm|cutlass|xmma|nvjet|cublas|splitk|matmul", re.I)


def _launches(measured) -> Counter:
    """Launches per call by class: gemm (the GEMM and its library helpers), copy (memcpy),
    memset, elementwise (everything else)."""
    out = Counter()
    for k in measured.profile.kernel_rows():
        kind = ("gemm" if GEMM.search(k["kernel"]) else "elementwise") if k["kind"] == "kernel" \
            else {"memcpy": "copy"}.get(k["kind"], k["kind"])
        out[kind] += k["calls_per_call"]
    return out


def test_eager_matmul_add_is_a_gemm_and_an_add_and_addmm_a_gemm(tmp_path):
    square = {"M": 1024, "N": 1024, "K": 1024}
    eager = _measured(tmp_path, "matmul_add", "eager", square)
    addmm = _measured(tmp_path, "matmul_add", "addmm", square)
    assert _launches(eager)["gemm"] >= 1 and _launches(eager)["elementwise"] == 1  # the add
    assert _launches(addmm)["gemm"] >= 1 and _launches(addmm)["elementwise"] == 0  # in the epilogue
    row = eager.row
    assert row.timing.cache == "cold" and row.profile.launch_api_us > 0
    assert row.profile.device_us > 0 and row.timing.median_us > 0
    assert 0 < row.kernel_us <= row.timing.median_us * 1.05  # the host path hides when queued


def test_compile_of_matmul_add_is_one_gemm_and_at_most_a_copy(tmp_path):
    launches = _launches(_measured(tmp_path, "matmul_add", "compile", {"M": 512, "N": 512, "K": 512}))
    assert launches["gemm"] >= 1  # addmm, maybe the bias copy the series saw
    assert launches["elementwise"] + launches["copy"] <= 1


@runs("block", "compile", "compile_reduce_overhead")
def test_reduce_overhead_profile_shows_the_compiled_graphs_kernels(tmp_path):
    shape = {"B": 1, "S": 128, "D": 256, "H": 4, "I": 512}
    compiled = _row(tmp_path / "c", "block", "compile", shape)
    replay = _row(tmp_path / "r", "block", "compile_reduce_overhead", shape)
    assert replay.profile.n_kernels >= compiled.profile.n_kernels, replay.reason


def test_triton_gemm_close_to_cublas_at_4096_bf16(tmp_path):
    shape = {"M": 4096, "N": 4096, "K": 4096}
    triton_row = _row(tmp_path, "matmul_add", "triton", shape)
    addmm_row = _row(tmp_path, "matmul_add", "addmm", shape)
    # Kernel time, not latency: the wrapper's host path is not the kernel's. The target is
    # 0.9x (gpu_check reports it); the test only guards against a gross regression.
    assert addmm_row.kernel_us / triton_row.kernel_us > 0.5


def test_cuda_timing_includes_host_time_of_small_calls():
    """A call that spends 300 us on the host before a tiny kernel must time at 300 us or more:
    the timing is the latency of a call on an idle GPU, not only its kernels' time."""
    import time

    from suites.harness.timing import sample_calls

    x = torch.ones(16, device="cuda")

    def host_heavy():
        deadline = time.perf_counter() + 300e-6
        while time.perf_counter() < deadline:
            pass
        return x + 1

    samples = sample_calls(host_heavy, "cuda", TIMING, warmup_calls=2).times_us
    assert sorted(samples)[len(samples) // 2] >= 300


def test_the_event_clock_step_is_measured_and_no_interval_has_zero_width(tmp_path):
    """A tiny call (a few us) is timed in samples of several calls spanning 200 clock steps;
    its us/call, kernel us and their intervals have width."""
    from suites.harness.event_clock import SPAN_STEPS, event_resolution_us

    step = event_resolution_us(0)
    assert 0 < step < 5
    row = _row(tmp_path, "matmul_add", "addmm", {"M": 64, "N": 64, "K": 64})
    assert row.timing.calls_per_sample * row.timing.median_us >= 0.8 * SPAN_STEPS * step
    assert row.timing.mean_low_us < row.timing.mean_us < row.timing.mean_high_us
    assert row.kernel_low_us < row.kernel_us < row.kernel_high_us
