"""The GPU timeline against TraceLens's own numbers on real traces recorded by others (H100,
MI300X, MI210, vLLM and SGLang decode), and its rules on synthetic activities."""
import random
from pathlib import Path

import pandas as pd
import pytest

from suites.traces.command import main
from suites.traces.gpu_timeline import (Coverage, device_unions, named_collective, subtract,
                                       timeline, trace_timeline, union)
from suites.traces.call_profile import CallProfile
from suites.traces.events import Event, read_trace
from suites.traces.steps import analyze
from trace_builders import event, write

REAL = Path(__file__).parent / "fixtures" / "real_traces"
REFERENCE = sorted(REAL.glob("*.gpu_timeline.csv"))
FIELDS = {"computation_time": "computation_us", "exposed_comm_time": "exposed_comm_us",
          "exposed_memcpy_time": "exposed_memcpy_us", "busy_time": "busy_us",
          "idle_time": "idle_us", "total_time": "total_us"}
# Activities with no launch event in the trace (kernels launched before the profiler started),
# as the fixtures' README counts them.
UNLINKED = {"h100_qwen1.5_0.5b": 509, "mi300_qwen1.5_0.5b": 463}


@pytest.mark.parametrize("reference", REFERENCE, ids=lambda p: p.name.split(".gpu")[0])
def test_the_trace_timeline_matches_tracelens(reference):
    name = reference.name.removesuffix(".gpu_timeline.csv")
    got = trace_timeline(read_trace(REAL / f"{name}.json.gz"))
    ref = pd.read_csv(reference).set_index("type")
    for theirs, ours in FIELDS.items():
        assert got.percent(ours) == pytest.approx(ref.loc[theirs, "percent"], abs=0.5), theirs
        assert getattr(got, ours) / 1e3 == pytest.approx(ref.loc[theirs, "time ms"], rel=1e-3,
                                                          abs=1e-6), theirs
    assert got.unlinked == UNLINKED.get(name, 0)


def test_every_reference_trace_is_tested():
    assert len(REFERENCE) == 7


def _activity(cat, name, ts, dur, corr=1):
    return Event(name, cat, ts, dur, 1, 1, corr, None, None)


def test_the_kinds_and_what_is_exposed():
    acts = [_activity("kernel", "gemm", 0, 10),
            _activity("kernel", "ncclDevKernel_AllReduce", 5, 10),      # 5 us exposed
            _activity("gpu_memcpy", "Memcpy HtoD", 12, 6),              # 3 us exposed (18-15)
            _activity("gpu_memset", "Memset", 30, 2),                   # memset is computation
            _activity("kernel", "__amd_rocclr_copyBuffer", 40, 4)]      # a copy on old ROCm
    t = timeline(acts)
    assert t.computation_us == 12 and t.exposed_comm_us == 5 and t.exposed_memcpy_us == 3 + 4
    assert t.busy_us == 18 + 2 + 4 and t.total_us == 44 and t.idle_us == 44 - 24
    assert t.computation_us + t.exposed_comm_us + t.exposed_memcpy_us + t.idle_us == t.total_us
    assert (t.total_comm_us, t.total_memcpy_us) == (10, 10)


def test_collectives_by_name_stay_computation_in_the_timeline_and_are_said(tmp_path, capsys):
    """TraceLens counts NCCL/RCCL kernels as communication; a symmetric-memory or vLLM custom
    all-reduce is computation by its rule: the timeline keeps its numbers, and says so."""
    named = [_activity("kernel", "void multimem_all_reduce_kernel<c10::BFloat16, 16>()", 0, 10),
             _activity("kernel", "void vllm::cross_device_reduce_1stage<float, 8>()", 20, 10)]
    plain = [_activity("kernel", "void at::native::reduce_kernel<512, 1>()", 40, 10),
             _activity("kernel", "ncclDevKernel_AllReduce_Sum", 60, 10)]
    assert [named_collective(a) for a in named + plain] == [True, True, False, False]
    assert timeline(named + plain).exposed_comm_us == 10  # the NCCL kernel's only
    events = [event("ProfilerStep#0", "user_annotation", 0, 100)]
    for corr, name in enumerate(["multimem_all_reduce_kernel", "gemm"], start=1):
        events += [event("cudaLaunchKernel", "cuda_runtime", 2 + corr, 1, correlation=corr),
                   event(name, "kernel", 10 * corr, 8, tid=7, correlation=corr, stream=7)]
    assert main([str(write({"traceEvents": events}, tmp_path / "m.json"))]) == 0
    out = capsys.readouterr().out
    assert ("1 kernels are collectives by their name (multimem_all_reduce_kernel): TraceLens's "
            "definitions, which name NCCL and RCCL kernels only, count their 0.008 ms as "
            "computation above") in out
    assert "comm_share: communication kernels run 8 us against 16 us" in out
    # The verdict weighs it as communication (the timeline above keeps TraceLens's numbers).
    [step] = CallProfile(analyze(read_trace(tmp_path / "m.json"))).steps
    assert (step.window.computation_us, step.window.exposed_comm_us) == (8, 8)
    assert "(8 us of it in kernels that are collectives by their name" in out


def test_union_and_subtract():
    assert union([(5, 7), (0, 2), (1, 3), (3, 4)]) == [(0, 4), (5, 7)]
    assert subtract([(0, 10)], [(2, 3), (5, 12)]) == [(0, 2), (3, 5)]
    assert subtract([(0, 1), (4, 6)], []) == [(0, 1), (4, 6)]
    assert subtract([], [(0, 1)]) == []


def test_old_capitalised_categories_are_read_as_todays(tmp_path):
    events = [event("cudaLaunchKernel", "Runtime", 0, 5, correlation=1),
              event("cudaMemcpyAsync", "Runtime", 6, 5, correlation=2),
              event("gemm", "Kernel", 10, 20, tid=7, correlation=1),
              event("Memcpy DtoH", "Memcpy", 40, 10, tid=7, correlation=2)]
    trace = read_trace(write({"traceEvents": events}, tmp_path / "old.json"))
    assert {e.cat for e in trace.device} == {"kernel", "gpu_memcpy"}
    t = trace_timeline(trace)
    assert (t.computation_us, t.exposed_memcpy_us, t.idle_us, t.counted) == (20, 10, 10, 2)


def test_analyze_prints_and_writes_the_timeline(tmp_path, capsys):
    trace = REAL / "h100_qwen1.5_0.5b.json.gz"
    assert main([str(trace), "--csv", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert ("GPU timeline over 1198 device activities (TraceLens's definitions; busy 91.4% of the "
            "34.89 ms from the first to the last") in out
    assert "509 device activities have no launch event" in out
    rows = pd.read_csv(tmp_path / "timeline.csv").set_index("scope")
    assert list(rows.index) == ["trace", "ProfilerStep#6", "stream 7"]
    assert rows.loc["trace", "unlinked_activities"] == 509
    assert (rows["busy_us"] + rows["idle_us"]).to_numpy() == pytest.approx(rows["total_us"])


def test_a_timeline_per_step_and_per_stream(tmp_path, capsys):
    """Two steps, two streams: each step's window runs from its first activity to its last,
    wherever the host was; each stream's over its own activities."""
    events = []
    for step, t0 in ((1, 0.0), (2, 100.0)):
        events.append(event(f"ProfilerStep#{step}", "user_annotation", t0, 50))
        for i, (stream, start, dur) in enumerate(((7, 10, 20), (8, 40, 10))):
            corr = step * 10 + i
            events.append(event("cudaLaunchKernel", "cuda_runtime", t0 + 1 + i, 1,
                                correlation=corr))
            events.append(event(f"k{i}", "kernel", t0 + start, dur, tid=stream,
                                correlation=corr))
    path = write({"traceEvents": events}, tmp_path / "two.json")
    assert main([str(path), "--csv", str(tmp_path)]) == 0
    rows = pd.read_csv(tmp_path / "timeline.csv").set_index("scope")
    assert list(rows.index) == ["trace", "ProfilerStep#1", "ProfilerStep#2", "stream 7", "stream 8"]
    assert rows.loc["ProfilerStep#1", ["busy_us", "idle_us", "total_us"]].tolist() == [30, 10, 40]
    assert rows.loc["trace", ["busy_us", "total_us"]].tolist() == [60, 140]
    assert rows.loc["stream 7", ["busy_us", "total_us", "activities"]].tolist() == [40, 120, 2]


@pytest.mark.parametrize("name", ["mi300_bert_small", "h100_bert_small", "mi300_qwen1.5_0.5b"])
def test_steps_are_host_steps_and_rocm_launches_count(name):
    """Newer traces copy each ProfilerStep onto the GPU's timeline (gpu_user_annotation): not a
    step of its own. HIP's launch calls (hipLaunchKernel, hipExtModuleLaunchKernel...) are launch
    calls like CUDA's."""
    from suites.traces.steps import analyze

    analysis = analyze(read_trace(REAL / f"{name}.json.gz"))
    assert [s.name for s in analysis.steps] == ["ProfilerStep#6"]
    step = analysis.steps[0]
    assert step.launch_api_us > 0 and step.n_kernels > 0


def _covered(intervals, t) -> bool:
    return any(start < t < end for start, end in intervals)


def test_unions_subtraction_and_windows_agree_with_counting_instants():
    """union, subtract and Coverage.within against brute force: on integer ends, each unit
    [i, i+1] is in an interval iff its midpoint is. Zero-length intervals and touching ones
    included; a step's activities given in start order (merged as they come) or not."""
    rng = random.Random(4)
    for _ in range(400):
        def intervals():
            return [(float(s), float(s + rng.randint(0, 4)))
                    for s in (rng.randint(0, 30) for _ in range(rng.randint(0, 12)))]
        a, b = union(intervals()), union(intervals())
        units = [t + 0.5 for t in range(40)]
        assert sum(_covered(a, t) for t in units) == sum(end - start for start, end in a)
        assert all(a[i][1] < a[i + 1][0] for i in range(len(a) - 1))  # merged: apart
        rest = subtract(a, b)
        assert [t for t in units if _covered(rest, t)] == [
            t for t in units if _covered(a, t) and not _covered(b, t)]
        lo, hi = sorted(rng.randint(-2, 35) for _ in range(2))
        assert Coverage(a).within(lo, hi) == sum(lo < t < hi and _covered(a, t) for t in units)
        acts = [_activity(rng.choice(["kernel", "gpu_memcpy"]), "k", s, e - s)
                for s, e in intervals()]
        in_order = device_unions(sorted(acts, key=lambda x: x.ts))
        assert in_order == device_unions(acts)  # the sort-free path and the general one
