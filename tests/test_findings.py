"""Findings on synthetic events (each detector's signal, and its absence) and on the real A100
fixtures where they carry the signal."""
from pathlib import Path

import pytest

from suites.traces.findings import FindingContext, find_all, run_detectors
from suites.traces.findings.codes import BOUND_CODES, Code
from suites.traces.call_profile import CallProfile
from suites.traces.command import step_rows
from suites.traces.steps import analyze
from suites.traces.events import read_trace
from trace_builders import ALEXNET_TRACE, TRITON_TRACE, event, gpu_step, load, write


def profile_of(events, tmp_path, label="call", name="t.json"):
    return CallProfile(analyze(read_trace(write({"traceEvents": events}, tmp_path / name)), label=label))


def codes(profile, **ctx):
    """Findings by code; `row` and `baseline_row` are given as the columns they set."""
    return {f.code: f for f in run_detectors(FindingContext(profile=profile, **ctx))}


def cpu_step(step, t0, ops, label="call", host=100.0):
    """ops: [(name, start offset, duration)] inside one step's record_function range."""
    events = [event(f"ProfilerStep#{step}", "user_annotation", t0, host + 10),
              event(label, "user_annotation", t0 + 1, host)]
    return events + [event(name, "cpu_op", t0 + 1 + at, dur) for name, at, dur in ops]


def test_overhead_vs_compute_bound_on_cpu(tmp_path):
    small = profile_of(cpu_step(0, 0, [("aten::mm", 60, 10)]), tmp_path, name="s.json")
    big = profile_of(cpu_step(0, 0, [("aten::mm", 2, 95)]), tmp_path, name="b.json")
    assert "overhead_bound" in codes(small)
    found = codes(big, row={"roofline_bound": "compute", "intensity": 300.0})
    assert "compute_bound" in found and "overhead_bound" not in found
    assert "memory_bound" in codes(big, row={"roofline_bound": "memory", "intensity": 2.0})


def test_cold_start_first_step_much_wider(tmp_path):
    events = cpu_step(0, 0, [("aten::mm", 2, 900)], host=1000)
    for i in range(1, 4):
        events += cpu_step(i, 2000 + i * 200, [("aten::mm", 2, 90)])
    found = codes(profile_of(events, tmp_path))
    assert "cold_start" in found and found["cold_start"].evidence["first_step_us"] >= 1000
    warm = sum((cpu_step(i, i * 200, [("aten::mm", 2, 90)]) for i in range(4)), [])
    assert "cold_start" not in codes(profile_of(warm, tmp_path, name="w.json"))


def test_late_first_op_after_a_long_gap(tmp_path):
    found = codes(profile_of(cpu_step(0, 0, [("aten::mm", 800, 50)], host=900), tmp_path))
    assert found["late_first_op"].evidence["gap_us"] == pytest.approx(800)
    assert "Python or compiling 800 us" in found["late_first_op"].statement


def test_a_sync_before_the_first_op_is_the_host_waiting_not_python(tmp_path):
    """torch.cuda.synchronize() at the top of a step (H100 and MI300 Qwen traces: 14 ms of a
    14.4 ms gap) is a wait for the device, named by its call, not Python or a compile."""
    events = [event("ProfilerStep#0", "user_annotation", 0, 1000),
              event("call", "user_annotation", 1, 900),
              event("cudaDeviceSynchronize", "cuda_runtime", 5, 700),
              event("tokenize", "user_annotation", 710, 80),
              event("aten::mm", "cpu_op", 800, 50),
              event("cudaLaunchKernel", "cuda_runtime", 801, 5, correlation=1),
              event("k", "kernel", 810, 30, tid=7, correlation=1, stream=7)]
    found = codes(profile_of(events, tmp_path))["late_first_op"]
    assert found.evidence["parts_us"] == pytest.approx({"sync": 700, "host code": 80,
                                                        "launch": 19})
    assert found.statement.startswith("799 us pass between the start of ProfilerStep#0's range")
    # The call's own range ("call", around the gap) is not host code in it; 19 us is under 5%.
    assert ("waiting for the device 700 us (cudaDeviceSynchronize); the program's own code 80 us "
            "(tokenize): the host waited for the device") in found.statement, found.statement


def test_a_sync_while_the_device_runs_earlier_work_costs_the_step_little(tmp_path):
    """The Qwen traces' first step opens with a 14 ms sync while the device runs 509 kernels
    launched before the trace (their correlation ids precede every launch call's): the wait
    overlaps device work (information, not a notice), and that work is kept out of the step's
    own, though the verdict says the device was busy with it."""
    events = [event("ProfilerStep#0", "user_annotation", 0, 1000),
              event("cudaDeviceSynchronize", "cuda_runtime", 5, 700),
              event("aten::mm", "cpu_op", 800, 50),
              event("cudaLaunchKernel", "cuda_runtime", 801, 5, correlation=100),
              event("k", "kernel", 810, 150, tid=7, correlation=100, stream=7),
              event("previous", "kernel", 6, 690, tid=7, correlation=50, stream=7)]
    prof = profile_of(events, tmp_path)
    [step] = prof.steps
    assert prof.analysis.pre_trace_device == 1 and prof.analysis.unattributed_device == 0
    assert [k.name for k in step.kernels] == ["k"] and step.pre_trace_us == pytest.approx(690)
    found = codes(prof)
    late = found["late_first_op"]
    assert late.severity == "info", late.statement
    assert ("the device was busy 690 us of the gap, running work launched before the trace: the "
            "wait overlapped device work and costs the step little") in late.statement
    said = found["compute_bound"].statement
    assert "690 us of it ran work launched before the trace" in said, said
    row = step_rows(prof)[0]  # busy_frac counts the earlier work, device_us does not: said
    assert row["earlier_work_us"] == pytest.approx(690) and row["device_us"] == 150
    # Without the earlier work, the same sync is a wait that keeps host and device apart.
    alone = codes(profile_of(events[:-1], tmp_path, name="alone.json"))["late_first_op"]
    assert alone.severity == "notice" and "keeps host and device from overlapping" in (
        alone.statement)


def test_queued_work_before_the_first_recorded_activity_is_not_called_waiting(tmp_path):
    """vLLM's decode trace: copies and a graph launched in the first 2 ms start only at 8.3 ms,
    the trace's first device activity; then the device is busy throughout. What ran before
    (work launched before the profiler started) cannot be seen: that stretch is left out of
    the contest and said, not read as "waiting" or as idle."""
    events = [event("aten::copy_", "cpu_op", 0, 900)]
    for i in range(4):
        events += [event("cudaLaunchKernel", "cuda_runtime", 10 + 200 * i, 5, correlation=i + 1),
                   event(f"k{i}", "kernel", 5000 + 1000 * i, 1000, tid=7, correlation=i + 1,
                         stream=7)]
    prof = profile_of(events, tmp_path)
    [step] = prof.steps
    assert step.unrecorded_us == pytest.approx(5000 - 15)
    found = codes(prof)
    said = found["compute_bound"].statement
    # The window runs from the op's start (0) to the last kernel's end (9000 us); 15 us of
    # host wait before the first launch returned; the 4.99 ms after it are left out.
    assert said.startswith("GPU-bound: kernels run 100% of the step (4 ms of a 4.01 ms window, "
                           "TraceLens's 'computation'"), said
    assert "judged in the window after its first 4.99 ms, in which work was queued" in said
    assert step_rows(prof)[0]["unrecorded_us"] == pytest.approx(5000 - 15)
    assert not {"idle_gaps", "device_wait"} & set(found)


def test_dispatcher_fusion_and_kernel_count_against_the_baseline(tmp_path):
    base = profile_of(cpu_step(0, 0, [("aten::mm", 2, 50), ("aten::add", 60, 10)]), tmp_path, name="a.json")
    fused = profile_of(cpu_step(0, 0, [("aten::addmm", 2, 55)]), tmp_path, name="b.json")
    found = codes(fused, row={"n_kernels": 1}, baseline_row={"n_kernels": 2}, baseline_profile=base)
    assert "aten::addmm replaced aten::mm + aten::add" in found["dispatcher_fusion"].statement
    assert found["kernels_fell"].evidence == {"baseline_kernels": 2, "kernels": 1}
    same = codes(base, row={"n_kernels": 2}, baseline_row={"n_kernels": 2}, baseline_profile=base)
    assert "no_dispatcher_fusion" in same and "kernels_fell" not in same


def test_inductor_fused_kernels_named_when_kernels_fall(tmp_path):
    base = profile_of(cpu_step(0, 0, [("aten::gelu", 2, 20), ("aten::mul", 30, 20)]), tmp_path, name="a.json")
    fused = profile_of(cpu_step(0, 0, [("graph_0_cpp_fused_gelu_mul_0", 2, 25)]), tmp_path, name="b.json")
    found = codes(fused, row={"n_kernels": 1}, baseline_row={"n_kernels": 2}, baseline_profile=base)
    assert "cpp_fused_gelu_mul_0" in found["kernels_fell"].statement


def test_hidden_copy_on_gpu_with_its_bytes(tmp_path):
    events = gpu_step(1, 0.0, kernels=(("k", 5.0),))
    events.append(event("cudaMemcpyAsync", "cuda_runtime", 30, 3, correlation=900))
    events.append(event("Memcpy DtoD (Device -> Device)", "gpu_memcpy", 40, 2, tid=7,
                        correlation=900, bytes=4096))
    profile = profile_of(events, tmp_path)
    base = profile_of(gpu_step(1, 0.0, kernels=(("k", 5.0),)), tmp_path, name="base.json")
    found = codes(profile, baseline_row={}, baseline_profile=base)
    assert found["hidden_copy"].evidence["bytes_per_call"] == 4096
    # No baseline (anyone's trace): not "hidden"; what the copies are and where from.
    found = codes(profile)
    assert "hidden_copy" not in found
    assert "DtoD" in found["copies"].statement and "no op" in found["copies"].statement


def test_hidden_copy_on_cpu_names_the_enclosing_op(tmp_path):
    copy = profile_of(cpu_step(0, 0, [("aten::addmm", 2, 50), ("aten::copy_", 4, 5)]), tmp_path,
                      name="c.json")
    base = profile_of(cpu_step(0, 0, [("aten::mm", 2, 50)]), tmp_path, name="b.json")
    found = codes(copy, baseline_row={}, baseline_profile=base)
    assert "inside aten::addmm" in found["hidden_copy"].statement


def test_compile_host_overhead_on_small_ops(tmp_path):
    compiled = profile_of(cpu_step(0, 0, [("Torch-Compiled Region: 0/0", 2, 60),
                                          ("aten::addmm", 40, 5)]), tmp_path)
    found = codes(compiled, row={"family": "compile", "host_us": 100.0},
                  baseline_row={"host_us": 30.0})
    assert found["compile_host_overhead"].evidence["host_us"] == 100.0
    assert "compile_host_overhead" not in codes(compiled, row={"family": "compile", "host_us": 31.0},
                                                baseline_row={"host_us": 30.0})


def test_recompile_when_the_region_index_changes(tmp_path):
    events = []
    for i, region in enumerate(["Torch-Compiled Region: 0/0", "Torch-Compiled Region: 0/0",
                                "Torch-Compiled Region: 0/1"]):
        events += cpu_step(i, i * 200, [(region, 2, 50), ("aten::mm", 5, 40)])
    assert "recompile" in codes(profile_of(events, tmp_path))
    steady = sum((cpu_step(i, i * 200, [("Torch-Compiled Region: 0/0", 2, 50)]) for i in range(3)), [])
    assert "recompile" not in codes(profile_of(steady, tmp_path, name="s.json"))


def test_kernel_time_variance_across_steps(tmp_path):
    events = []
    for i, dur in enumerate([10.0, 10.0, 80.0, 10.0]):
        events += gpu_step(i, i * 200.0, kernels=(("jittery", dur), ("steady", 10.0)), corr_base=10 * i)
    found = codes(profile_of(events, tmp_path))
    assert found["kernel_variance"].evidence["kernel"] == "jittery"


def test_metadata_only_ops(tmp_path):
    found = codes(profile_of(cpu_step(0, 0, [("aten::view", 2, 3), ("aten::t", 6, 2),
                                             ("aten::mm", 10, 50)]), tmp_path))
    assert found["metadata_ops"].evidence["ops_per_call"] == 2


def test_tensor_cores_unused_only_in_low_precision_runs():
    profile = CallProfile(analyze(read_trace(ALEXNET_TRACE)))  # fp32: ampere_sgemm kernels
    assert "tensor_cores_unused" in codes(profile, dtype="bfloat16")
    assert "tensor_cores_unused" not in codes(profile, dtype="float32")


def test_sdpa_backend(tmp_path):
    found = codes(profile_of(cpu_step(0, 0, [("aten::scaled_dot_product_attention", 2, 50),
                                             ("aten::_scaled_dot_product_flash_attention_for_cpu", 3, 45)]),
                             tmp_path))
    assert found["sdpa_backend"].evidence == {"backend": "flash"}


def test_gpu_queue_empty_and_full(tmp_path):
    events = gpu_step(1, 0.0, kernels=(("k", 2.0),), host_dur=400)  # starts as soon as launched
    for e in events:
        if e["cat"] == "kernel":
            e["ts"] = 2 + 1 + 5  # the launch returns at 8 us
    found = codes(profile_of(events, tmp_path, name="e.json"))
    # an empty queue is the overhead-bound verdict's evidence, said in it
    assert "its one kernel starts as soon as it is launched: the queue runs empty" in (
        found["overhead_bound"].statement)
    queued = gpu_step(1, 0.0, kernels=(("k", 300.0),), host_dur=40)
    for e in queued:
        if e["cat"] == "kernel":
            e["ts"] = 200.0  # waits behind earlier work, which the trace records
    queued.append(event("earlier", "kernel", 1, 199, tid=7, correlation=999, stream=7))
    assert "queue_full" in codes(profile_of(queued, tmp_path, name="f.json"))


def test_fixture_triton_trace_findings():
    found = codes(CallProfile(analyze(read_trace(TRITON_TRACE))))
    assert "triton_poi_fused_add_cos_sin_0" in found["inductor_kernels"].statement
    assert "overhead_bound" in found and "the queue runs empty" in found["overhead_bound"].statement


def test_fixture_alexnet_findings_per_measured_step():
    profile = CallProfile(analyze(read_trace(ALEXNET_TRACE), step_pattern=r"measure\|forward"))
    assert len(profile.steps) == 1 and profile.steps[0].n_kernels == 40  # nested: once
    found = codes(profile)
    # 1.44 ms of views in a 297 ms step spent allocating: too little to be a finding
    assert "overhead_bound" in found and "metadata_ops" not in found
    bert = codes(CallProfile(analyze(read_trace(
        ALEXNET_TRACE.parents[1] / "real_traces" / "h100_bert_small.json.gz"))))
    assert "metadata_ops" in bert  # 442 us of a 4.4 ms host-paced step


CPU_TRACES = Path(__file__).parent / "fixtures" / "cpu_traces"


@pytest.mark.parametrize("name", ["cpu_sdpa_flash_fp32", "cpu_sdpa_flash_bf16_train",
                                  "cpu_sdpa_math_fp32"])
def test_cpu_attention_gets_a_cpu_bound_and_no_fat_leaf(name):
    """A CPU's SDPA, any backend: one bound as any CPU trace gets, its kernels and device time;
    an op's self time there is its computation, never host work inside a library call."""
    profile = CallProfile(analyze(read_trace(CPU_TRACES / f"{name}.json.gz"), label="sdpa"))
    found = codes(profile)
    assert [c for c in found if c in BOUND_CODES] in ([Code.COMPUTE_BOUND],
                                                      [Code.OVERHEAD_BOUND])
    assert Code.NO_VERDICT not in found and Code.FAT_LEAF_OP not in found
    assert profile.metrics()["n_kernels"] > 0 and profile.metrics()["device_us"] > 0


def test_fat_leaf_never_reads_a_cpu_kernel_as_host_work(tmp_path):
    """In a trace that shows a device (a category of its this tool does not read), an op that
    names its CPU kernel still computes: its self time is not plan selection."""
    doc = load(CPU_TRACES / "cpu_sdpa_flash_fp32.json.gz")
    doc["traceEvents"].append(event("range", "cuda_profiler_range", 0, 1))
    profile = CallProfile(analyze(read_trace(write(doc, tmp_path / "t.json")), label="sdpa"))
    assert profile.analysis.mode == "host-only"
    assert Code.FAT_LEAF_OP not in codes(profile)


def test_find_all_reads_a_rows_column_values_as_a_csv_row_gives_them(tmp_path):
    """The engine takes column name -> value (ResultRow.record(), a measurements.csv row read by
    pandas, NaN in an empty text cell); the baseline's own row is judged without a baseline,
    a row that did not run ok not at all."""
    profile = profile_of(cpu_step(0, 0, [("aten::mm", 2, 90)]), tmp_path)
    key = {"suite": "matmul_add", "case_id": "M64-fp32", "dtype": "float32", "status": "ok"}
    base = {**key, "variant": "eager", "family": "eager", "host_us": 30.0}
    compiled = {**key, "variant": "compile", "family": "compile", "host_us": 100.0}
    found = {f["code"] for f in find_all(compiled, profile, base, profile)}
    assert "compile_host_overhead" in found
    unknown = {**compiled, "family": float("nan")}  # not said: the ops decide, and show none
    assert "compile_host_overhead" not in {f["code"] for f in find_all(unknown, profile, base,
                                                                          profile)}
    assert find_all(base, profile, dict(base), profile) == find_all(base, profile, None, None)
    assert find_all({**compiled, "status": "failed"}, profile, base, profile) == []
    with pytest.raises(KeyError, match="hosts_us"):
        FindingContext(profile, row=base).value("hosts_us")  # a typo is no missing value


def test_a_compute_bound_step_of_small_kernels_points_at_fusion_not_the_gemms():
    """The Qwen traces are compute-bound (92% busy), yet 63% of the H100's device time is in
    elementwise, copy and cat kernels: the GEMMs (28%) are not where the time is."""
    real = ALEXNET_TRACE.parents[1] / "real_traces"
    found = codes(CallProfile(analyze(read_trace(real / "h100_qwen1.5_0.5b.json.gz"))))
    mix = found["kernel_mix"]
    assert mix.severity == "notice" and mix.evidence["other_share"] == pytest.approx(0.63, abs=0.01)
    assert mix.statement.startswith("63% of the device's time is in kernels that are neither "
                                    "GEMMs nor attention"), mix.statement
    assert "the largest: elementwise_kernel<128, 4, gpu_kernel_impl_nocast<BinaryF" in (
        mix.statement)
    assert "GEMMs 28%, attention 9%: fusing those ops (torch.compile) is the larger lever" in (
        mix.statement)
    # Not on a step the host paces, nor where GEMMs take most of the device's time.
    for name in ("h100_bert_small", "vllm_decode_cuda_graphs"):
        assert "kernel_mix" not in codes(CallProfile(analyze(read_trace(
            real / f"{name}.json.gz"))))


def test_a_sync_behind_a_stream_wait_names_the_wait(tmp_path):
    """sglang's decode: a hipStreamWaitEvent, then kernels that start only 463 ms later, as the
    blocking copy behind them ends: the step is held by the event wait, not by the copy."""
    events = [event("ProfilerStep#0", "user_annotation", 0, 1100),
              event("cudaStreamWaitEvent", "cuda_runtime", 5, 2, correlation=1),
              event("cudaLaunchKernel", "cuda_runtime", 10, 3, correlation=2),
              event("cudaMemcpy", "cuda_runtime", 20, 1000, correlation=3),
              event("k", "kernel", 1000, 10, tid=7, correlation=2, stream=7),
              event("Memcpy DtoH (Device -> Pageable)", "gpu_memcpy", 1011, 5, tid=7,
                    correlation=3, stream=7, bytes=4)]
    found = codes(profile_of(events, tmp_path))
    said = found["device_wait"].statement
    assert ("behind a cudaStreamWaitEvent (5 us into the step: torch's wait_stream or "
            "wait_event) on an event no call of the step records") in said, said
    assert "The host blocked 1 ms behind that wait (the longest: cudaMemcpy, 1 ms)" in said
    assert "sync_bound" not in found and "idle_gaps" not in found
    # Without the stream's wait the queue's stall before the first recorded activity is unseen
    # work or a wait; the host blocked through it, so the sync still reads it.
    found = codes(profile_of(events[:1] + events[2:], tmp_path, name="nowait.json"))
    assert "sync_bound" in found and "cudaStreamWaitEvent" not in found["sync_bound"].statement


def test_a_step_spent_allocating_is_said_so_not_python_and_launch():
    """AlexNet's measured forward (its benchmark empties the allocator's cache before each
    one): 235 ms of its 297 ms in five cudaMalloc calls, not "Python, dispatch and launch"."""
    profile = CallProfile(analyze(read_trace(ALEXNET_TRACE), step_pattern=r"measure\|forward"))
    said = codes(profile)["overhead_bound"].statement
    assert said.startswith("overhead-bound (allocation): the GPU waited for the host 292 ms"), said
    # and the cudaFree of its clear_cache range (empty_cache, 9.12 ms) with them: the
    # allocator at work, not set-up (that is before the first launch, or far longer)
    assert ("memory allocation calls (cudaMalloc x5, 235 ms, cudaFree x1, 9.12 ms; 82% of the "
            "step)") in said, said
    assert "one_time_setup" not in codes(profile)
    assert "keep its cache warm" in said


def test_pinning_is_advised_for_copies_that_recur_not_for_a_one_time_upload():
    from types import SimpleNamespace as Step
    from suites.traces.findings.copies import PIN, _pinning
    copy = Step(name="Memcpy HtoD (Pageable -> Device)")
    # AlexNet's trace: its 16 copies (its weights and biases) all run before its first kernel:
    # a one-time upload, said as information, with nothing to tune.
    found = codes(CallProfile(analyze(read_trace(ALEXNET_TRACE))))["copies"]
    assert found.severity == "info" and found.statement.endswith(
        "all of it before the first kernel ran: the model moving to the device (model.to), "
        "one-time set-up, nothing to tune"), found.statement
    every = [Step(name=f"ProfilerStep#{i}", kernels=[copy]) for i in range(4)]
    assert _pinning(every) == PIN
    once = [Step(name=f"ProfilerStep#{i}", kernels=[copy] if i == 0 else []) for i in range(4)]
    assert _pinning(once).startswith("copies in 1 of 4 steps are not the steady state")


def test_a_trace_without_steps_points_at_its_repeating_ranges(tmp_path, capsys):
    from suites.traces.command import main
    # A benchmark's measured call, three times, each an outer and an inner range of one name.
    events = []
    for i in range(3):
        t0 = 1000.0 * i
        events += [event("measure|forward", "user_annotation", t0, 500),
                   event("measure|forward", "user_annotation", t0 + 10, 480),
                   event("aten::mm", "cpu_op", t0 + 20, 50),
                   event("cudaLaunchKernel", "cuda_runtime", t0 + 25, 5, correlation=i + 1),
                   event("gemm", "kernel", t0 + 40, 100, tid=7, correlation=i + 1, stream=7)]
    assert main([str(write({"traceEvents": events}, tmp_path / "b.json"))]) == 0
    assert ("note: no ProfilerStep ranges: the whole trace is one step, its set-up included; "
            "ranges of its own repeat (3 x measure|forward): --steps 'measure\\|forward' "
            "judges each as a step") in capsys.readouterr().out
    # AlexNet's trace: one warm-up and one measured forward (each two nested ranges of a name):
    # too few to stand for steps. A trace with ProfilerStep ranges needs none.
    for trace in (ALEXNET_TRACE, TRITON_TRACE):
        assert main([str(trace)]) == 0
        assert "no ProfilerStep ranges" not in capsys.readouterr().out


def test_a_host_bound_verdict_on_a_with_stack_trace_says_the_tracer_inflates_it():
    real = ALEXNET_TRACE.parents[1] / "real_traces"
    said = codes(CallProfile(analyze(read_trace(real / "h100_bert_small.json.gz"))))[
        "overhead_bound"].statement
    assert said.endswith("[recorded with_stack: 1,385 Python frames a step; tracing them adds to "
                         "the host's time, so its share reads high: a trace without with_stack "
                         "gives the host's own]"), said
    # a device-bound verdict is not inflated by it
    said = codes(CallProfile(analyze(read_trace(real / "h100_qwen1.5_0.5b.json.gz"))))[
        "compute_bound"].statement
    assert "with_stack" not in said


def test_layout_conversions_are_not_offered_to_fusion():
    """MI210's convolutions run NHWC kernels between batched_transpose layout conversions (15%
    of the device's time): channels_last removes those, no fusion does."""
    real = ALEXNET_TRACE.parents[1] / "real_traces"
    found = codes(CallProfile(analyze(read_trace(real / "mi210_gpu_only.json.gz"))))
    said = found["kernel_mix"].statement
    # MIOpen's own zero-fill and cast around its convolutions (SubTensorOp, 9%) are the
    # library's, out of fusion's reach too
    assert said.startswith("43% of the device's time is in kernels that are neither"), said
    assert "GEMMs 32%, library helpers 9%" in said, said
    assert said.endswith("Another 15% is layout conversions (batched_transpose...), which no "
                         "fusion removes: the channels_last memory format "
                         "(model.to(memory_format=torch.channels_last)) would remove them, the "
                         "library then running its NHWC kernels as they are (on ROCm, with "
                         "PYTORCH_MIOPEN_SUGGEST_NHWC=1, and PYTORCH_MIOPEN_SUGGEST_NHWC_BATCHNORM=1 "
                         "for batch norm)"), said
    # no ops in the trace: its host wait is late launches, not Python said from nothing
    assert ("next: host wait (late launches, the trace recording no ops to say why) 11%"
            in found["compute_bound"].statement)
