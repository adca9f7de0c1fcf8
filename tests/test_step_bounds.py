"""The decision tree (suites/traces/findings/step_bound.py): one bound per step with the numbers
that decided it, bounds that exclude each other never together, on synthetic traces of each
kind and on the real ones."""
import itertools
from pathlib import Path

import pytest

from suites.traces.findings import FindingContext, run_detectors
from suites.traces.findings.codes import BOUND_CODES, Code
from suites.traces.findings.step_bound import step_bound
from suites.traces.call_profile import CallProfile
from suites.traces.steps import analyze
from suites.traces.events import read_trace
from trace_builders import event, write

REAL = sorted((Path(__file__).parent / "fixtures").glob("*_traces/*.json.gz"))


def gpu_trace(steps=4, host_us=100.0, kernel_us=5.0, kernels=4, kernel_name="gemm",
              cat="kernel", extra=lambda step, t0: [], launch="cudaLaunchKernel"):
    """`steps` ProfilerSteps of `host_us`; each launches `kernels` activities of `kernel_us`
    spread over its first half; a kernel starts at its launch or after the previous one ends
    (so a device slower than the host runs behind it). `extra(step, t0)` adds events."""
    events, device_free, corr = [], 0.0, 1
    for step in range(steps):
        t0 = step * host_us
        events.append(event(f"ProfilerStep#{step}", "user_annotation", t0, host_us))
        for i in range(kernels):
            at = t0 + 1 + i * (host_us / 2 / kernels)
            events.append(event("aten::op", "cpu_op", at, 4))
            events.append(event(launch, "cuda_runtime", at + 1, 2, correlation=corr))
            start = max(at + 3, device_free)
            events.append(event(kernel_name, cat, start, kernel_us, tid=7, correlation=corr))
            device_free, corr = start + kernel_us, corr + 1
        events += extra(step, t0)
    return events


def profile(events, tmp_path, name="t.json"):
    return CallProfile(analyze(read_trace(write({"traceEvents": events}, tmp_path / name))))


def findings(prof):
    return {f.code: f for f in run_detectors(FindingContext(profile=prof))}


def primary_codes(found) -> list:
    return [c for c in found if c in BOUND_CODES or c == Code.NO_VERDICT]


def assert_consistent(found):
    """Exactly one primary bound; the queue findings never contradict it."""
    primary = primary_codes(found)
    assert len(primary) == 1, primary
    if Code.QUEUE_FULL in found:
        assert primary[0] in (Code.COMPUTE_BOUND, Code.MEMORY_BOUND, Code.COMM_BOUND,
                              Code.COPY_BOUND)


def test_a_device_behind_the_host_is_busy_in_its_window_not_half_idle(tmp_path):
    # Each step's kernels take 190 us of device time in a 100 us host step: the device runs
    # further and further behind. Measured from the host's step start the device looks ~50%
    # busy; in its own window it is busy throughout.
    prof = profile(gpu_trace(steps=6, kernel_us=47.5), tmp_path)
    later = prof.steps[2:]
    assert all(s.busy_frac == pytest.approx(1.0) for s in later)
    found = findings(prof)
    assert Code.COMPUTE_BOUND in found and Code.QUEUE_FULL in found
    assert_consistent(found)


def test_a_slow_host_is_overhead_bound_and_the_queue_empty(tmp_path):
    prof = profile(gpu_trace(kernel_us=2.0), tmp_path)
    window = prof.steps[1].window
    # 4 kernels of 2 us, each starting as its launch call returns: the rest of the 100 us the
    # device waited for the host.
    assert (window.busy_us, window.queued_idle_us) == pytest.approx((8, 0))
    assert window.host_wait_us == pytest.approx(92)
    found = findings(prof)
    assert Code.OVERHEAD_BOUND in found
    assert found[Code.OVERHEAD_BOUND].evidence["host_wait_us"] == pytest.approx(92)
    assert_consistent(found)
    # The empty queue is the verdict's evidence, said in it, not a second finding.
    assert "the queue runs empty" in found[Code.OVERHEAD_BOUND].statement
    # The verdict says what would cut it. 4 kernels a step: no fusion or CUDA-graph advice, the
    # host's own time is what to cut.
    said = found[Code.OVERHEAD_BOUND].statement
    assert "with 4 kernels a step there is little to fuse or capture" in said, said
    many = findings(profile(gpu_trace(kernel_us=0.5, kernels=12), tmp_path, "many.json"))
    said = many[Code.OVERHEAD_BOUND].statement
    assert ("fewer kernels (fusion: torch.compile) or cheaper launches (CUDA graphs" in said), said


def test_set_up_calls_far_beyond_their_steady_state_are_initialisation(tmp_path):
    def setup(step, t0):
        return [event("cuModuleLoadData", "cuda_runtime", t0 + 60, 30_000 if step == 0 else 1)]
    events = gpu_trace(steps=1, host_us=40_000, extra=setup)
    found = findings(profile(events, tmp_path))
    assert Code.INIT_BOUND in found and "30 ms" in found[Code.INIT_BOUND].statement
    # A cudaFree after the first launch is the allocator at work (empty_cache), not set-up:
    # context creation (cudaFree(0)) comes before any launch.
    def free(step, t0):
        return [event("cudaFree", "cuda_runtime", t0 + 60, 30_000)]
    found = findings(profile(gpu_trace(steps=1, host_us=40_000, extra=free), tmp_path, "f.json"))
    assert Code.INIT_BOUND not in found
    assert found[Code.OVERHEAD_BOUND].statement.startswith("overhead-bound (allocation)")
    # A steady-state call that is once far longer (a lazy module load) is set-up too.
    slow = gpu_trace(steps=4, host_us=100)
    slow[2]["dur"] = 5_000  # the first cudaLaunchKernel
    prof = profile(slow, tmp_path, "lazy.json")
    assert prof.steps[0].host.init_us == 5_000 and prof.steps[1].host.init_us == 0
    assert Code.ONE_TIME_SETUP in findings(prof) or Code.INIT_BOUND in findings(prof)


def test_data_loading_and_host_collectives_and_syncs(tmp_path):
    def loader(step, t0):
        return [event("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                      "user_annotation", t0 + 44, 55)]
    found = findings(profile(gpu_trace(kernel_us=1.0, extra=loader), tmp_path))
    assert Code.DATA_BOUND in found
    assert_consistent(found)

    def sync(step, t0):  # a blocking copy waits for work the trace does not show
        return [event("cudaMemcpy", "cuda_runtime", t0 + 45, 53, correlation=9000 + step),
                event("Memcpy DtoH (Device -> Pageable)", "gpu_memcpy", t0 + 96, 1, tid=7,
                      correlation=9000 + step)]
    found = findings(profile(gpu_trace(kernel_us=1.0, extra=sync), tmp_path, "s.json"))
    assert Code.SYNC_BOUND in found
    assert found[Code.SYNC_BOUND].evidence["queued_idle_us"] == pytest.approx(51)
    assert_consistent(found)


def test_a_gloo_all_reduce_on_a_cpu_is_communication(tmp_path):
    events = []
    for step in range(3):
        t0 = step * 1000
        events += [event(f"ProfilerStep#{step}", "user_annotation", t0, 1000),
                   event("aten::mm", "cpu_op", t0 + 10, 100),
                   event("gloo:all_reduce", "user_annotation", t0 + 120, 850),
                   event("c10d::allreduce_", "cpu_op", t0 + 115, 860)]
    prof = profile(events, tmp_path)
    assert prof.analysis.mode == "cpu"
    found = findings(prof)
    assert Code.COMM_BOUND in found and "86%" in found[Code.COMM_BOUND].statement
    assert "c10d::allreduce_" not in {k.name for s in prof.steps for k in s.kernels}


def test_nccl_kernels_and_pageable_copies_get_their_own_bounds(tmp_path):
    found = findings(profile(gpu_trace(kernel_us=20, kernel_name="ncclDevKernel_AllReduce_Sum"),
                             tmp_path))
    assert Code.COMM_BOUND in found
    copies = gpu_trace(kernel_us=20, kernel_name="Memcpy HtoD (Pageable -> Device)",
                       cat="gpu_memcpy", launch="cudaMemcpyAsync")
    found = findings(profile(copies, tmp_path, "c.json"))
    assert Code.COPY_BOUND in found
    assert "pageable" in found[Code.COPIES].statement and "aten::op" in found[Code.COPIES].statement


@pytest.mark.parametrize("category", ["cuda_profiler_range", "mtia_insight"])
def test_a_device_whose_activities_are_not_read_is_never_a_cpu(tmp_path, category, capsys):
    events = [event("ProfilerStep#1", "user_annotation", 0, 100),
              event("aten::mm", "cpu_op", 10, 80),
              event("range", category, 20, 50)]
    prof = profile(events, tmp_path)
    assert prof.analysis.mode == "host-only" and prof.steps[0].n_kernels == 0
    found = findings(prof)
    assert primary_codes(found) == [Code.NO_VERDICT]
    assert category in found[Code.NO_VERDICT].statement
    from suites.traces import command as cli
    assert cli.main([str(tmp_path / "t.json")]) == 0
    out = capsys.readouterr().out
    assert f"1 activities of category {category} not analysed" in out and "host only" in out


def test_bounds_that_exclude_each_other_never_fire_together(tmp_path):
    """Every combination of a slow or fast host, a device behind or idle, set-up, a blocking
    sync, data loading, communication and copies: one primary bound, and queue findings that
    agree with it."""
    seen = set()
    kinds = [("gemm", "kernel"), ("ncclDevKernel_AllReduce", "kernel"),
             ("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy")]
    for i, (kernel_us, (name, cat), setup, sync, data) in enumerate(itertools.product(
            [0.5, 10.0, 47.5], kinds, [False, True], [False, True], [False, True])):
        def extra(step, t0, setup=setup, sync=sync, data=data):
            out = []
            if setup and step == 0:
                out.append(event("cudaDeviceGetStreamPriorityRange", "cuda_runtime", t0 + 55, 30))
            if sync:
                out.append(event("cudaDeviceSynchronize", "cuda_runtime", t0 + 60, 35))
            if data:
                out.append(event("enumerate(DataLoader)#x", "user_annotation", t0 + 52, 45))
            return out
        prof = profile(gpu_trace(kernel_us=kernel_us, kernel_name=name, cat=cat, extra=extra),
                       tmp_path, f"t{i}.json")
        for step in prof.steps:
            bound = step_bound(step, prof.analysis.mode)
            assert bound is not None and bound.code in BOUND_CODES
        found = findings(prof)
        assert_consistent(found)
        seen.update(primary_codes(found))
    assert len(seen) >= 5, seen  # the grid reaches most bounds


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_traces_get_one_consistent_bound(path):
    prof = CallProfile(analyze(read_trace(path)))
    assert_consistent(findings(prof))


def _comm(us: float, at: float = 60.0):
    """An NCCL kernel of `us`, launched `at` us into each step (exposed communication)."""
    def extra(step, t0):
        corr = 7000 + step
        return [event("cudaLaunchKernel", "cuda_runtime", t0 + at - 1, 1, correlation=corr),
                event("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "kernel", t0 + at, us, tid=8,
                      correlation=corr)]
    return extra


def test_host_wait_is_weighed_against_each_device_part_not_only_past_half(tmp_path):
    # 4 x 9 us of computation (36%), 21 us of exposed communication: the device waited for the
    # host 43% of each 100 us step, more than it computed: host-bound, computation next.
    prof = profile(gpu_trace(kernel_us=9.0, extra=_comm(21.0)), tmp_path)
    w = prof.steps[1].window
    assert (w.computation_us, w.exposed_comm_us, w.host_wait_us) == pytest.approx((36, 21, 43))
    found = findings(prof)
    assert_consistent(found)
    said = found[Code.OVERHEAD_BOUND]
    assert said.evidence["runner_up"] == "computation" and not said.evidence["close_call"]
    assert "next: computation 36%" in said.statement, said.statement


def test_a_close_call_says_so_with_both_numbers(tmp_path):
    # Computation 40%, host wait 39%, communication 21%: within 5 points of the window.
    prof = profile(gpu_trace(kernel_us=10.0, extra=_comm(21.0)), tmp_path)
    found = findings(prof)
    said = found[Code.COMPUTE_BOUND]
    assert said.evidence["close_call"] and said.evidence["runner_up"] == "host wait (Python, dispatch, launch)"
    assert "a close call: host wait (Python, dispatch, launch) is 39.0% of the step against 40.0%" in \
        said.statement, said.statement


def test_the_next_part_can_be_another_host_cause(tmp_path):
    # Step 0 (10 ms) holds a 6.15 ms set-up call after its launches: set-up is the largest part
    # of the device's wait, the launch gaps before it the next (~38%), far more than the 0.02%
    # of computation: an expert's "initialisation-bound, next: launch", not "next: computation".
    def setup(step, t0):
        return ([event("cudaDeviceGetStreamPriorityRange", "cuda_runtime", t0 + 3800, 6150)]
                if step == 0 else [])
    prof = profile(gpu_trace(host_us=10000.0, kernel_us=0.5, extra=setup), tmp_path)
    step = prof.steps[0]
    bound = step_bound(step, prof.analysis.mode)
    assert bound.code == Code.INIT_BOUND and bound.runner_up == "host wait (Python, dispatch, launch)"
    assert bound.runner_up_us == pytest.approx(step.host_wait_parts["launch"])
    assert bound.runner_up_us > 20 * step.window.computation_us
    assert not bound.close  # 62% against 38%: more than 5 points apart


def test_a_trace_without_its_host_side_never_blames_the_host(tmp_path):
    # The device activities alone (no runtime calls, no ops): idle is the largest part of the
    # step (45%, computation 30%, communication 25%) but nothing says the host held it, so no
    # verdict, even under half; where computation leads, its runner-up is idle, not launch.
    def device_only(events):
        return [e for e in events if e["cat"] not in ("cuda_runtime", "cpu_op")]
    prof = profile(device_only(gpu_trace(kernel_us=7.5, extra=_comm(25.0))), tmp_path)
    assert all(step_bound(s, prof.analysis.mode) is None for s in prof.steps[:3])
    found = findings(prof)
    assert primary_codes(found) == [Code.NO_VERDICT]
    assert "no host side" in found[Code.NO_VERDICT].statement
    prof = profile(device_only(gpu_trace(kernel_us=15.0, extra=_comm(10.0))), tmp_path, "b.json")
    found = findings(prof)
    assert primary_codes(found) == [Code.COMPUTE_BOUND]
    assert "next: idle (no launches recorded) 34%" in found[Code.COMPUTE_BOUND].statement


def test_the_host_wait_goes_to_what_the_host_did_meanwhile(tmp_path):
    # The kernels compute 36% of each step; the device waits 64%, 40 us of it while the
    # DataLoader runs (the rest: launch gaps). The host's span is 40 us loader, 60 us the rest:
    # counted by span the launches would win; counted in the device's wait, the loader does.
    def loader(step, t0):
        return [event("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                      "user_annotation", t0 + 58, 40)]
    prof = profile(gpu_trace(kernel_us=9.0, extra=loader), tmp_path)
    parts = prof.steps[1].host_wait_parts
    assert parts["data loading"] == pytest.approx(40)
    assert parts["launch"] == pytest.approx(prof.steps[1].window.host_wait_us - 40)
    found = findings(prof)
    assert_consistent(found)
    assert Code.DATA_BOUND in found, found
    assert "while the device waited for the host" in found[Code.DATA_BOUND].statement


def test_the_programs_own_host_code_is_named_and_a_range_around_launches_is_not(tmp_path):
    def ranges(step, t0):
        return [event("preprocess_video", "user_annotation", t0 + 52, 46),
                event("forward", "user_annotation", t0 + 0.5, 50)]  # holds the launches
    prof = profile(gpu_trace(kernel_us=2.0, extra=ranges), tmp_path)
    found = findings(prof)
    assert_consistent(found)
    said = found[Code.HOST_CODE_BOUND]
    assert "preprocess_video" in said.statement and "forward" not in said.statement
    assert prof.steps[1].host_code_names == ["preprocess_video"]


def test_a_vendors_launch_latency_is_the_launch_path_not_device_waiting(tmp_path):
    # Every kernel starts 16 us after its launch call returned, on an idle device (hipLaunchKernel
    # on an MI300): the trace's own launch latency, so the device waited for the host, not on
    # a queue: overhead-bound, as HTA reads it, not "device waiting".
    events = gpu_trace(steps=6, kernel_us=2.0)
    for e in events:
        if e["cat"] == "kernel":
            e["ts"] += 16.0
    prof = profile(events, tmp_path)
    window = prof.steps[1].window
    assert window.queued_idle_us == pytest.approx(0)
    assert window.host_wait_us == pytest.approx(92)
    found = findings(prof)
    assert Code.OVERHEAD_BOUND in found and Code.DEVICE_WAIT not in found
    assert_consistent(found)


def test_kernel_variance_is_one_finding_and_only_for_kernels_a_step_can_feel(tmp_path):
    # Three kernels vary 10 us <-> 40 us from step to step (each >= 1% of a 1 ms step), and one
    # 6 us kernel varies 6 <-> 9 us (under 1%): one finding, the largest said, 2 more counted.
    def varying(step, t0):
        out = []
        for j, (name, lo, hi) in enumerate((("a", 10, 40), ("b", 10, 40), ("c", 10, 40),
                                            ("tiny", 6, 9))):
            corr = 50_000 + step * 10 + j
            us = lo if step % 2 else hi
            out += [event("cudaLaunchKernel", "cuda_runtime", t0 + 600 + j * 90, 2,
                          correlation=corr),
                    event(name, "kernel", t0 + 603 + j * 90, us, tid=7, correlation=corr)]
        return out
    found = [f for f in run_detectors(FindingContext(profile=profile(
        gpu_trace(steps=4, host_us=1000, extra=varying), tmp_path)))
        if f.code == Code.KERNEL_VARIANCE]
    assert len(found) == 1, [f.statement for f in found]
    assert found[0].evidence["kernels"] == 3 and "2 more kernel(s)" in found[0].statement


@pytest.mark.parametrize("meta", [
    {"deviceProperties": [{"id": 0, "name": "NVIDIA H100"}]},
    {"distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8}},
    {},  # no metadata: its ops say it ran on a GPU
])
def test_a_gpu_job_without_its_device_side_reads_the_same_whatever_metadata(tmp_path, meta):
    events = []
    for step in range(3):
        t0 = step * 1000
        events += [event(f"ProfilerStep#{step}", "user_annotation", t0, 1000),
                   event("aten::mm", "cpu_op", t0 + 10, 300),
                   event("aten::_efficient_attention_forward", "cpu_op", t0 + 400, 300)]
    doc = {"traceEvents": events, **meta}
    prof = CallProfile(analyze(read_trace(write(doc, tmp_path / "t.json"))))
    assert prof.analysis.mode == "host-only"
    found = findings(prof)
    assert primary_codes(found) == [Code.NO_VERDICT]
    assert "recorded without its device's activities" in found[Code.NO_VERDICT].statement


@pytest.mark.parametrize("backend", ["nccl", "mtia:hccl", "xccl"])
def test_an_accelerator_backend_alone_marks_a_gpu_job(tmp_path, backend):
    # Ops a CPU would run too; only the process group's backend says where the work ran.
    events = [event("ProfilerStep#0", "user_annotation", 0, 1000),
              event("aten::mm", "cpu_op", 10, 300)]
    doc = {"traceEvents": events, "distributedInfo": {"backend": backend, "rank": 0}}
    prof = CallProfile(analyze(read_trace(write(doc, tmp_path / "t.json"))))
    assert prof.analysis.mode == "host-only"
    doc["distributedInfo"]["backend"] = "gloo"
    prof = CallProfile(analyze(read_trace(write(doc, tmp_path / "g.json"))))
    assert prof.analysis.mode == "cpu"


def test_a_long_call_in_every_step_is_the_steady_state_not_set_up(tmp_path):
    # A launch that blocks 30 ms on a full queue in every step (its driver call nested under
    # it): the steady state, never "one-time set-up" longer than its step.
    def blocked(step, t0):
        return [event("cudaLaunchKernel", "cuda_runtime", t0 + 60, 30_000, correlation=8000),
                event("cuLaunchKernel", "cuda_driver", t0 + 61, 29_998)]
    events = gpu_trace(steps=4, host_us=40_000, extra=blocked)
    prof = profile(events, tmp_path)
    assert all(s.host.init_us == 0 for s in prof.steps)
    found = findings(prof)
    assert Code.ONE_TIME_SETUP not in found and Code.INIT_BOUND not in found
    # Once, in the first step only, it is set-up, counted once though two calls nest.
    once = gpu_trace(steps=4, host_us=40_000, extra=lambda step, t0: blocked(step, t0)
                     if step == 0 else [])
    first = profile(once, tmp_path, "once.json").steps[0]
    assert first.host.init_us == pytest.approx(30_000)


def test_windows_never_overlap_and_work_from_before_the_trace_stays_out(tmp_path):
    # The device runs behind the host (its kernels end after the next step starts), and an
    # activity with no launch in the trace starts in step 1 while step 0's work still runs; one
    # more ran before the trace's first launch call (launched before the profiler started).
    def unlinked(step, t0):
        return [event("other_stream_kernel", "kernel", t0 + 10, 5, tid=9)] if step == 1 else []
    events = gpu_trace(steps=4, kernel_us=30.0, extra=unlinked)
    events.append(event("before_the_trace", "kernel", -50, 60, tid=9))
    prof = profile(events, tmp_path)
    windows = [(s.window.start, s.window.end) for s in prof.steps]
    assert all(a[1] <= b[0] for a, b in zip(windows, windows[1:])), windows
    assert prof.analysis.pre_trace_device == 1
    assert "before_the_trace" not in {k.name for s in prof.steps for k in s.kernels}
    busy = sum(s.window.busy_us for s in prof.steps)
    assert busy <= sum(k["dur"] for k in events if k["cat"] == "kernel")


def test_a_fragment_says_its_verdict_rests_on_little(tmp_path):
    found = findings(profile(gpu_trace(steps=2, kernel_us=2.0), tmp_path))  # 30-odd events
    said = found[Code.OVERHEAD_BOUND].statement
    assert said.endswith("device activities), a fragment]") and "[low confidence: " in said
    big = findings(profile(gpu_trace(steps=40, kernel_us=2.0), tmp_path, "big.json"))
    assert "low confidence" not in big[Code.OVERHEAD_BOUND].statement


def test_python_frames_of_the_programs_own_work_are_host_code_by_their_names(tmp_path):
    # with_stack: a 7 ms preprocessing frame launches nothing while the device waits; the
    # model's frame holds the launches (launch and dispatch, not host code); short frames are
    # not kept.
    # Another thread (tqdm's monitor) waits through the same stretch: not this program's host
    # code, though it too launches nothing.
    def frames(step, t0):
        return [event("video.py(120): preprocess", "python_function", t0 + 5_000, 6_900),
                event("model.py(10): forward", "python_function", t0 + 0.5, 4_000),
                event("utils.py(3): tiny", "python_function", t0 + 11_950, 20),
                event("threading.py(359): wait", "python_function", t0 + 4_900, 7_000, tid=0)]
    prof = profile(gpu_trace(host_us=12_000, kernel_us=5.0, extra=frames), tmp_path)
    assert {e.name for e in prof.analysis.trace.python_ranges} == {
        "video.py(120): preprocess", "model.py(10): forward", "threading.py(359): wait"}
    found = findings(prof)
    said = found[Code.HOST_CODE_BOUND].statement
    assert "video.py(120): preprocess" in said and "forward" not in said, said
    assert "threading.py" not in said, said


@pytest.mark.parametrize("kernel_us, name, advice", [
    (47.5, "gemm", "the place to optimise first"),  # the device sets the step's time
    (2.0, "gemm", "a faster kernel would not shorten it"),  # the host does
    (47.5, "ncclDevKernel_AllReduce_Sum", "a collective"),  # nothing to tune in the kernel
])
def test_a_dominant_kernel_gets_advice_it_can_act_on(tmp_path, kernel_us, name, advice):
    def small(step, t0):
        return [event("cudaLaunchKernel", "cuda_runtime", t0 + 80, 2, correlation=9000 + step),
                event("tiny", "kernel", t0 + 83, 0.1, tid=7, correlation=9000 + step)]
    found = findings(profile(gpu_trace(kernel_us=kernel_us, kernel_name=name, extra=small),
                             tmp_path))
    said = found[Code.DOMINANT_KERNEL].statement
    assert name in said and advice in said, said
    assert_consistent(found)


def test_steps_that_differ_are_named_as_the_primary_verdict_names_its_bound(tmp_path):
    """Two steps computing 90% of their time, a third launching one 10 us kernel: the third is
    said with the bound's own name ("overhead-bound"), not a side and a part."""
    events = []
    for step, kernel_us in enumerate((900.0, 900.0, 10.0)):
        t0 = step * 1000.0
        events += [event(f"ProfilerStep#{step}", "user_annotation", t0, 1000.0),
                   event("aten::mm", "cpu_op", t0 + 10, 8),
                   event("cudaLaunchKernel", "cuda_runtime", t0 + 11, 4, correlation=step + 1),
                   event("gemm", "kernel", t0 + 20, kernel_us, tid=7, correlation=step + 1)]
    found = findings(profile(events, tmp_path))
    assert primary_codes(found) == [Code.COMPUTE_BOUND]
    said = found[Code.STEPS_DIFFER].statement
    assert said.startswith("other steps differ: overhead-bound in 1 (ProfilerStep#2; "), said
