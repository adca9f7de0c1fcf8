"""The profiler's own marks in a trace (suites/traces/profiler_artifacts.py, findings in
suites/traces/findings/artifacts.py): its end-of-window flush, left out of the program's
blocking time and its bound, and the device's idle stretches during its Activity Buffer
Requests, left out of the idle gaps; and the many-steps profile (profile=many) that tells them
from the program's.

Real traces (tests/fixtures, README there): the flush, told by the profiler's stop_trace frame,
follows the last step of h100_qwen1.5_0.5b (2.17 ms cudaDeviceSynchronize), mi300_qwen1.5_0.5b
(4.08 ms hipDeviceSynchronize) and both bert_small traces (6 us, 33 us: too short to name); told
by its place it ends mi210_gpu_only (1.33 ms, a trace without steps), a100_triton_pointwise
(16.8 us, in a step whose end the profiler wrote late) and a100_alexnet_fp32 (18 us). Only
b200_eager has an Activity Buffer Request (1.53 ms, before the first activity). No fixture has
many steps: the many-step statements are tested on built events."""
from pathlib import Path

import pytest

from suites.config.group_choices import check_group_choices
from suites.traces.findings import FindingContext, run_detectors
from suites.traces.findings.standouts import _longest_gap
from suites.traces.findings.codes import Code
from suites.traces.findings.step_bound import step_bound
from suites.traces.call_profile import CallProfile
from suites.traces.profiler_artifacts import BY_FRAME, BY_PLACE
from suites.traces.steps import analyze
from suites.traces.events import read_trace
from suites.config.run_spec import build_run_spec
from trace_builders import event, write

FIXTURES = Path(__file__).parent / "fixtures"
REAL = FIXTURES / "real_traces"
GPU = FIXTURES / "gpu_traces"
from suites.config.compose import CONF_DIR as CONF, compose


def real(path: Path) -> CallProfile:
    return CallProfile(analyze(read_trace(path)))


def built(events, tmp_path, name="t.json") -> CallProfile:
    return CallProfile(analyze(read_trace(write({"traceEvents": events}, tmp_path / name))))


def findings(prof: CallProfile) -> dict:
    return {f.code: f for f in run_detectors(FindingContext(profile=prof))}


# --- the flush, on real traces ------------------------------------------------------------

@pytest.mark.parametrize("name, sync, us", [
    ("h100_qwen1.5_0.5b", "cudaDeviceSynchronize", 2167.279),
    ("mi300_qwen1.5_0.5b", "hipDeviceSynchronize", 4084.024),
])
def test_the_flush_after_the_last_step_is_named_by_the_profilers_frame(name, sync, us):
    prof = real(REAL / f"{name}.json.gz")
    flush = prof.analysis.flush
    assert (flush.call.name, flush.how) == (sync, BY_FRAME)
    assert flush.us == pytest.approx(us)
    [step] = prof.steps
    assert step.flush is None  # after ProfilerStep#6: it never was in its figures
    found = findings(prof)[Code.PROFILER_FLUSH]
    assert "the profiler's flush, not your cost" in found.statement
    # its stop_trace frame says what it is: nothing to confirm; in no step: information
    assert "after the last step" in found.statement and "profile=many" not in found.statement
    assert found.severity == "info"
    assert found.evidence["flush_us"] == pytest.approx(us)
    assert found.evidence["told_by"] == "frame"


def test_a_short_flush_after_the_last_step_is_not_named():
    for name, us in (("h100_bert_small", 5.94), ("mi300_bert_small", 33.088)):
        prof = real(REAL / f"{name}.json.gz")
        assert prof.analysis.flush.us == pytest.approx(us)
        assert Code.PROFILER_FLUSH not in findings(prof)


def test_the_flush_ending_a_trace_without_steps_leaves_its_blocking_time():
    """mi210_gpu_only: the trace's only sync, 1.33 ms at its end, was the whole trace's
    blocking time; it is the profiler's, and the step blocks for 0 us of its own."""
    prof = real(REAL / "mi210_gpu_only.json.gz")
    flush = prof.analysis.flush
    assert (flush.call.name, flush.how) == ("hipDeviceSynchronize", BY_PLACE)
    [step] = prof.steps
    assert step.flush is flush.call and step.flush_us == pytest.approx(1332.208)
    assert step.blocking_us == 0.0
    bound = step_bound(step, prof.analysis.mode)
    assert bound.code == Code.COMPUTE_BOUND  # as before: the device was busy throughout
    found = findings(prof)[Code.PROFILER_FLUSH]
    assert "left out of the step's blocking time" in found.statement
    assert "the trace (it has no steps)" in found.statement


def test_the_flush_in_a_step_whose_end_was_written_late():
    """a100_triton_pointwise: ProfilerStep#1's annotation runs 13 s past the trace (clipped);
    the 16.8 us cudaDeviceSynchronize after the last op is the profiler's, not the step's."""
    prof = real(GPU / "a100_triton_pointwise.json.gz")
    [step] = prof.steps
    assert step.flush_us == pytest.approx(16.846) and step.blocking_us == 0.0
    # left out of the step's figures, but 1% of its 1.5 ms: too little to be a finding
    assert Code.PROFILER_FLUSH not in findings(prof)
    alexnet = real(GPU / "a100_alexnet_fp32.json.gz")
    [whole] = alexnet.steps
    assert whole.flush_us == pytest.approx(18.0)
    assert whole.blocking_us == pytest.approx(695.0)  # 16 stream syncs and 4 device syncs


def test_traces_with_no_device_sync_have_no_flush():
    """sglang's 463 ms hipMemcpyWithStream is the program's own wait, behind its stream's wait
    for an event: device waiting, never the profiler's flush."""
    for name in ("sglang_qwen3_8b_decode", "vllm_decode_cuda_graphs", "b200_eager"):
        prof = real(REAL / f"{name}.json.gz")
        assert prof.analysis.flush is None
    found = findings(real(REAL / "sglang_qwen3_8b_decode.json.gz"))
    assert Code.DEVICE_WAIT in found and Code.PROFILER_FLUSH not in found


# --- the flush, on built events -----------------------------------------------------------

def queued_then_synced(after_sync=(), steps=False):
    """A kernel launched at 10 us that starts at 5000 us (behind work the trace does not show),
    then a cudaDeviceSynchronize from 20 us until it is done: a host blocked half its window
    on a sync, with the device's time queued idle."""
    events = [event("aten::op", "cpu_op", 5, 10),
              event("cudaLaunchKernel", "cuda_runtime", 10, 3, correlation=1),
              event("gemm", "kernel", 5000, 100, tid=7, correlation=1),
              event("cudaDeviceSynchronize", "cuda_runtime", 20, 5080, correlation=2)]
    if steps:
        events.append(event("ProfilerStep#1", "user_annotation", 0, 5200))
    return events + list(after_sync)


def test_a_trailing_sync_no_step_holds_is_the_flush_not_sync_bound(tmp_path):
    prof = built(queued_then_synced(), tmp_path)
    [step] = prof.steps
    assert step.flush_us == pytest.approx(5080) and step.blocking_us == 0
    bound = step_bound(step, prof.analysis.mode)
    # Not sync_bound: the program never synced. The kernel is the trace's first device
    # activity: the 4.99 ms it sat queued may be work the trace does not hold, so the step is
    # judged in the rest of its window, and that stretch is stated, as the flush is.
    assert bound.code == Code.COMPUTE_BOUND
    assert bound.parts["unrecorded"] == pytest.approx(4987)
    assert bound.parts["profiler flush"] == pytest.approx(5080)  # the excluded time, stated
    found = findings(prof)
    assert Code.SYNC_BOUND not in found
    assert found[Code.PROFILER_FLUSH].evidence["flush_us"] == pytest.approx(5080)


def test_a_sync_the_program_went_on_after_or_a_closed_step_holds_is_its_own(tmp_path):
    later = [event("aten::add", "cpu_op", 5200, 10)]
    for i, events in enumerate((queued_then_synced(later), queued_then_synced(steps=True))):
        prof = built(events, tmp_path, f"own{i}.json")
        assert prof.analysis.flush is None
        [step] = prof.steps
        assert step.blocking_us == pytest.approx(5080)
        assert Code.SYNC_BOUND in findings(prof)


def test_the_profilers_frame_names_the_flush_wherever_it_is(tmp_path):
    """with_stack traces: the sync inside torch/profiler/profiler.py's stop_trace is the
    flush; a record_function's __exit__ (same file name as the autograd profiler's) is not
    the profiler's stop, and is not kept."""
    events = queued_then_synced(steps=True, after_sync=[
        event("torch/profiler/profiler.py(388): stop_trace", "python_function", 5300, 900),
        event("cudaDeviceSynchronize", "cuda_runtime", 5400, 700, correlation=3),
        event("torch/autograd/profiler.py(789): __exit__", "python_function", 30, 10),
        event("aten::add", "cpu_op", 6300, 10)])  # the program went on: place would say no
    prof = built(events, tmp_path)
    assert [f.name for f in prof.analysis.trace.profiler_frames] == [
        "torch/profiler/profiler.py(388): stop_trace"]
    flush = prof.analysis.flush
    assert flush.how == BY_FRAME and flush.us == 700
    assert prof.steps[0].blocking_us == pytest.approx(5080)  # the step's own sync stays


def test_many_steps_say_the_flush_comes_once(tmp_path):
    events = []
    for i in range(12):
        t0 = i * 100.0
        events += [event(f"ProfilerStep#{i}", "user_annotation", t0, 90),
                   event("aten::op", "cpu_op", t0 + 1, 10),
                   event("cudaLaunchKernel", "cuda_runtime", t0 + 2, 3, correlation=i + 1),
                   event("gemm", "kernel", t0 + 6, 20, tid=7, correlation=i + 1),
                   event("cudaDeviceSynchronize", "cuda_runtime", t0 + 30, 2)]
    events.append(event("cudaDeviceSynchronize", "cuda_runtime", 1200, 400))
    prof = built(events, tmp_path)
    found = findings(prof)[Code.PROFILER_FLUSH]
    assert "Over 12 profiled steps it comes once" in found.statement
    assert found.evidence["steps_syncing_as_long"] == 0
    assert all(s.blocking_us == 2 for s in prof.steps)


# --- buffer requests ----------------------------------------------------------------------

def test_the_b200_buffer_request_is_the_idle_before_the_first_activity():
    prof = real(REAL / "b200_eager.json.gz")
    [request] = prof.analysis.buffer_requests
    assert request.dur == pytest.approx(1526.826)
    [step] = prof.steps
    assert (step.buffer_gaps, step.buffer_idle_us) == (1, pytest.approx(1526.826))
    found = findings(prof)[Code.PROFILER_BUFFER_GAPS]
    assert found.evidence["gaps"] == 1 and found.evidence["requests"] == 1
    assert "profile=many" in found.statement
    assert Code.OVERHEAD_BOUND in findings(prof)  # the bound stands: 72 ms more host wait


def gapped(steps: int, requests_in: set):
    """Device-bound steps of 100 us: a 35 us and a 33 us kernel with 28.5 us of idle between
    them (host wait: the second launch comes late); an Activity Buffer Request over that gap
    in the steps of `requests_in`."""
    events = []
    for i in range(steps):
        t0 = i * 100.0
        events += [event(f"ProfilerStep#{i}", "user_annotation", t0, 100),
                   event("aten::op", "cpu_op", t0 + 0.2, 3),
                   event("cudaLaunchKernel", "cuda_runtime", t0 + 0.5, 2, correlation=2 * i + 1),
                   event("gemm", "kernel", t0 + 2.5, 35, tid=7, correlation=2 * i + 1),
                   event("aten::op", "cpu_op", t0 + 64.5, 3),
                   event("cudaLaunchKernel", "cuda_runtime", t0 + 65, 1, correlation=2 * i + 2),
                   event("gemm", "kernel", t0 + 66, 33, tid=7, correlation=2 * i + 2)]
        if i in requests_in:
            events.append({**event("Activity Buffer Request", "overhead", t0 + 38, 27),
                           "pid": -1, "tid": 0})
    return events


def test_idle_overlapping_a_buffer_request_is_the_profilers(tmp_path):
    plain = built(gapped(3, set()), tmp_path, "plain.json")
    assert Code.IDLE_GAPS in findings(plain)  # 32% idle in a device-bound step
    prof = built(gapped(3, {0, 1, 2}), tmp_path)
    assert all((s.buffer_gaps, s.buffer_idle_us) == (1, pytest.approx(27)) for s in prof.steps)
    found = findings(prof)
    assert Code.COMPUTE_BOUND in found
    assert Code.IDLE_GAPS not in found  # 5 us of idle left: under the 20% worth a note
    artifact = found[Code.PROFILER_BUFFER_GAPS]
    assert artifact.evidence["gaps"] == 3 and artifact.evidence["idle_us"] == pytest.approx(81)
    assert "left out of the idle gaps" in artifact.statement
    assert "profile=many" in artifact.statement  # 3 steps: too few to tell


def test_many_steps_say_whether_the_buffer_gap_recurs(tmp_path):
    once = findings(built(gapped(12, {1}), tmp_path, "once.json"))
    assert "Only 1 of the 12 profiled steps has one (ProfilerStep#1)" in (
        once[Code.PROFILER_BUFFER_GAPS].statement)
    every = findings(built(gapped(12, set(range(12))), tmp_path, "every.json"))
    assert "All 12 steps have one" in every[Code.PROFILER_BUFFER_GAPS].statement


def test_the_longest_gap_skips_stretches_of_buffer_requests():
    class A:
        def __init__(self, ts, end):
            self.ts, self.end = ts, end
    kernels = [A(0, 10), A(40, 50), A(60, 70)]
    assert _longest_gap(kernels, 0, 70) == (30, 10)
    assert _longest_gap(kernels, 0, 70, skip=[(15, 20)]) == (10, 50)


def test_the_reader_keeps_the_profilers_own_events(tmp_path):
    events = [event("Activity Buffer Request", "overhead", 0, 5),
              event("Lazy Function Loading", "overhead", 10, 1),
              event("some/module.py(1): f", "python_function", 0, 3)]
    trace = read_trace(write({"traceEvents": events}, tmp_path / "t.json"))
    assert [e.name for e in trace.overhead] == ["Activity Buffer Request",
                                                "Lazy Function Loading"]
    assert trace.profiler_frames == [] and trace.other_categories == {"python_function": 1}


# --- the many-steps profile ---------------------------------------------------------------

def spec_of(*overrides):
    # Hydra here, not with the module: the GPU machine collects this module and has no Hydra.
    pytest.importorskip("hydra")
    from omegaconf import OmegaConf

    cfg = compose(list(overrides))
    return build_run_spec(OmegaConf.to_container(cfg, resolve=True), Path("/tmp/unused"))


def test_profile_many_composes_into_twenty_active_steps():
    spec = spec_of("profile=many", "device=cpu")
    assert (spec.profile.active, spec.profile.wait, spec.profile.warmup) == (20, 1, 1)
    assert spec.profile.enabled and spec.profile.row_limit == 25
    assert spec_of("profile.active=20", "device=cpu").profile.active == 20
    check_group_choices(["profile=many"], CONF)  # an accepted choice on the command line
