"""Trace analysis on real A100 traces (tests/fixtures/gpu_traces), real CPU attention traces
(tests/fixtures/cpu_traces) and synthetic events."""
import gzip
import json
from pathlib import Path

import pytest

from suites.traces.call_profile import CallProfile
from suites.traces.device_time import gpu_job_hint
from suites.traces.op_kinds import LAUNCH_APIS
from suites.traces.steps import analyze
from suites.common.errors import InputError
from suites.traces.events import Event, Trace, TraceFormatError, read_trace
from trace_builders import ALEXNET_TRACE, TRITON_TRACE, event, gpu_step, load, write


def test_triton_fixture_one_kernel_by_correlation():
    analysis = analyze(read_trace(TRITON_TRACE))
    assert analysis.mode == "cuda"
    [step] = analysis.steps
    assert step.name == "ProfilerStep#1"
    [kernel] = step.kernels
    assert kernel.name == "triton_poi_fused_add_cos_sin_0"
    assert kernel.corr == 35
    assert step.device_us == pytest.approx(1.76)
    assert step.launch_api_us == pytest.approx(47.768)  # one cuLaunchKernel (driver API)
    assert list(step.launch_delays_us) == [0.0]  # the kernel starts before the launch call returns
    assert analysis.unattributed_device == 0


def test_triton_fixture_launch_is_inside_the_compiled_region():
    trace = read_trace(TRITON_TRACE)
    analyze(trace)
    [launch] = [r for r in trace.runtime if r.name == "cuLaunchKernel"]
    assert launch.ts == pytest.approx(2413669097399.166)
    assert launch.op == "triton_poi_fused_add_cos_sin_0"  # Inductor's launcher range
    assert any(op.name == "Torch-Compiled Region: 0/0" for op in trace.cpu_ops)


def test_alexnet_fixture_counts_every_device_activity():
    analysis = analyze(read_trace(ALEXNET_TRACE))
    [step] = analysis.steps  # no ProfilerStep annotations: the whole trace is one step
    assert step.name == "whole trace"
    kinds = {}
    for k in step.kernels:
        kinds[k.cat] = kinds.get(k.cat, 0) + 1
    assert kinds == {"kernel": 79, "gpu_memcpy": 16, "gpu_memset": 3}
    assert step.n_kernels == 98
    assert sum(k.dur for k in step.kernels if k.cat == "kernel") == pytest.approx(10728)
    rows = CallProfile(analysis).kernel_rows()
    assert sum(r["calls_per_call"] for r in rows if r["kind"] == "kernel") == 79
    assert {r["kind"] for r in rows} == {"kernel", "memcpy", "memset"}


@pytest.mark.parametrize("api", ["cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",
                                 "cuLaunchKernelEx"])
def test_every_launch_api_is_a_launch(api, tmp_path):
    doc = load(TRITON_TRACE)
    for e in doc["traceEvents"]:
        if e.get("name") == "cuLaunchKernel":
            e["name"] = api
            driver = api.startswith("cu") and not api.startswith("cuda")
            e["cat"] = "cuda_driver" if driver else "cuda_runtime"
    analysis = analyze(read_trace(write(doc, tmp_path / "t.json.gz")))
    [step] = analysis.steps
    assert step.n_kernels == 1 and step.launch_api_us == pytest.approx(47.768)
    assert api in LAUNCH_APIS


def test_alexnet_with_driver_launches_gives_the_same_counts(tmp_path):
    doc = load(ALEXNET_TRACE)
    for e in doc["traceEvents"]:
        if e.get("name") == "cudaLaunchKernel":
            e["name"], e["cat"] = "cuLaunchKernelEx", "cuda_driver"
    [step] = analyze(read_trace(write(doc, tmp_path / "a.json"))).steps
    assert step.n_kernels == 98


def test_kernels_belong_to_the_step_that_launched_them(tmp_path):
    # The second step's kernel runs after the first step ends on the host: correlation, not the
    # GPU timestamp, decides.
    events = gpu_step(1, 0.0, kernels=(("a", 5.0),), corr_base=10)
    late = gpu_step(2, 100.0, kernels=(("b", 50.0),), corr_base=20)
    for e in late:
        if e["cat"] == "kernel":
            e["ts"] = 95.0  # queued behind step 1 on the GPU clock, launched in step 2
    analysis = analyze(read_trace(write({"traceEvents": events + late}, tmp_path / "t.json")),
                       label="call")
    assert [s.n_kernels for s in analysis.steps] == [1, 1]
    assert [k.name for k in analysis.steps[1].kernels] == ["b"]
    assert analysis.steps[0].host_us == 40.0


def test_device_time_is_the_union_of_overlapping_activities(tmp_path):
    events = gpu_step(1, 0.0, kernels=(("a", 10.0), ("b", 10.0)))
    kernels = [e for e in events if e["cat"] == "kernel"]
    kernels[1]["ts"] = kernels[0]["ts"] + 5  # two streams overlap by 5 us
    [step] = analyze(read_trace(write({"traceEvents": events}, tmp_path / "t.json"))).steps
    assert step.device_us == pytest.approx(15.0)


def test_cpu_trace_counts_compute_ops_not_metadata(tmp_path):
    events = [event("ProfilerStep#0", "user_annotation", 0, 100),
              event("eager", "user_annotation", 1, 90),
              event("aten::matmul", "cpu_op", 2, 50), event("aten::mm", "cpu_op", 4, 45),
              event("aten::resolve_conj", "cpu_op", 5, 1), event("aten::t", "cpu_op", 60, 2),
              event("aten::add", "cpu_op", 70, 10)]
    analysis = analyze(read_trace(write({"traceEvents": events}, tmp_path / "c.json")), label="eager")
    [step] = analysis.steps
    assert analysis.mode == "cpu"
    assert [k.name for k in step.kernels] == ["aten::mm", "aten::add"]
    assert step.device_us == pytest.approx(44 + 10)  # mm's self time excludes resolve_conj
    assert step.host_us == 90 and step.n_cpu_ops == 5


CPU_TRACES = Path(__file__).parent / "fixtures" / "cpu_traces"  # its README: how recorded
CPU_SDPA = ["cpu_sdpa_flash_fp32", "cpu_sdpa_flash_bf16_train", "cpu_sdpa_math_fp32"]


@pytest.mark.parametrize("name", CPU_SDPA)
def test_cpu_attention_is_cpu_work(name):
    """Recorded with ProfilerActivity.CPU alone: every SDPA backend a CPU has (flash's
    _for_cpu kernels, forward and backward; math) computes on it, so each step counts its
    compute ops and their self time, as any CPU trace does."""
    analysis = analyze(read_trace(CPU_TRACES / f"{name}.json.gz"), label="sdpa")
    assert analysis.mode == "cpu" and len(analysis.steps) == 3
    for step in analysis.steps:
        attention = [k for k in step.kernels if "attention" in k.name or k.name == "aten::bmm"]
        assert attention and step.device_us >= sum(k.self_us for k in attention) > 0


def test_a_gpu_machines_cpu_attention_is_cpu_work(tmp_path):
    """Kineto built with CUPTI writes the GPU's properties whatever it recorded: a CPU run on a
    GPU machine (device=cpu) has them. An op that names its CPU kernel outweighs them; ops a
    GPU job runs too (aten::mm) do not."""
    doc = load(CPU_TRACES / "cpu_sdpa_flash_fp32.json.gz")
    doc["deviceProperties"] = [{"id": 0, "name": "NVIDIA H100"}]
    analysis = analyze(read_trace(write(doc, tmp_path / "t.json")), label="sdpa")
    assert analysis.mode == "cpu" and all(s.n_kernels and s.device_us > 0 for s in analysis.steps)
    events = [event("ProfilerStep#0", "user_annotation", 0, 100),
              event("aten::mm", "cpu_op", 1, 90)]
    doc = {"traceEvents": events, "deviceProperties": doc["deviceProperties"]}
    assert analyze(read_trace(write(doc, tmp_path / "g.json"))).mode == "host-only"


def _ops_with_a_cpu_kernel() -> list[str]:
    """Every op of torch's own library that runs on a CPU: a CPU kernel, or a composite one.
    Not the ops Python code registers (torch.compile's streams::record_stream): those register
    for every device at once, a stream's op as much as any."""
    torch = pytest.importorskip("torch")
    keys = ("CPU", "CompositeImplicitAutograd", "CompositeExplicitAutograd",
            "CompositeExplicitAutogradNonFunctional")
    names = set()
    for schema in torch._C._jit_get_all_schemas():
        try:
            dump = torch._C._dispatch_dump(schema.name).splitlines()
        except RuntimeError:  # a schema with no dispatcher entry (a TorchScript builtin)
            continue
        # "CPU: registered at aten/src/...cpp:123 ..."; a Python registration names a .py file
        if any(line.startswith((f"{key}:", f"{key}[alias]:")) and ".py:" not in line
               for line in dump for key in keys):
            names.add(schema.name)
    return sorted(names)


def test_no_op_a_cpu_runs_says_the_job_ran_on_a_gpu():
    """Not one example but every op a CPU runs (aten::cudnn_is_acceptable, asked by every CPU
    convolution, and the _for_cpu attention kernels among them); the GPU's own still do."""
    names = _ops_with_a_cpu_kernel()
    ops = [Event(n, "cpu_op", float(i), 1.0, 1, 1, None, None, None) for i, n in enumerate(names)]
    assert len(names) > 1000 and gpu_job_hint(Trace(path="ops", cpu_ops=ops)) == ""
    for gpu_only in ("aten::_scaled_dot_product_flash_attention", "aten::cudnn_convolution",
                     "aten::_efficient_attention_forward", "aten::record_stream",
                     "aten::_scaled_dot_product_cudnn_attention", "nccl:all_reduce"):
        one = [Event(gpu_only, "cpu_op", 0.0, 1.0, 1, 1, None, None, None)]
        assert gpu_job_hint(Trace(path="op", cpu_ops=one)) == f"it runs {gpu_only}"


def test_reader_accepts_bare_arrays_and_trailing_commas(tmp_path):
    path = tmp_path / "bare.json"
    path.write_text("[" + json.dumps(event("aten::add", "cpu_op", 0, 3)) + ",\n]")
    trace = read_trace(path)
    assert [op.name for op in trace.cpu_ops] == ["aten::add"]


def test_reader_keeps_top_level_metadata_in_any_order(tmp_path):
    doc = load(TRITON_TRACE)
    reordered = {"traceEvents": doc["traceEvents"], "deviceProperties": doc["deviceProperties"]}
    trace = read_trace(write(reordered, tmp_path / "r.json"))
    assert trace.meta["deviceProperties"][0]["name"].startswith("NVIDIA A100")


@pytest.mark.parametrize("text, message", [
    ("", "the file is empty"),
    (" \n ", "the file is empty"),
    ("{\"traceEvents\": [ {\"ph\": \"X\", ", "invalid JSON"),
    ("{\"foo\": 1}", "no traceEvents"),
    ("hello", "expected one of"),
])
def test_malformed_traces_raise_a_clear_error(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(TraceFormatError, match=message) as raised:
        read_trace(path)
    assert isinstance(raised.value, InputError)  # a bad input file, not a bad configuration


@pytest.mark.parametrize("data", [bytes([0x0a, 0x85, 0x01, 0x12, 0x00]) + bytes(range(256)),
                                  b"\x80\x04\x95\x0b\x00"])  # a protobuf's start; a pickle's
def test_a_binary_file_is_said_to_be_no_json_trace(tmp_path, data):
    path = tmp_path / "trace.pftrace"
    path.write_bytes(data)
    with pytest.raises(TraceFormatError, match="not JSON text but binary data.*export_chrome"):
        read_trace(path)


def test_truncated_gzip_is_a_format_error(tmp_path):
    data = TRITON_TRACE.read_bytes()
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError):
        read_trace(path)


_DIGEST = """
import sys
from suites.traces.events import DECODER, read_trace
t = read_trace(sys.argv[1])
lists = ("cpu_ops", "annotations", "runtime", "device", "python_ranges")
print(DECODER, {n: [(e.name, e.ts, e.dur, e.corr, e.ext, e.nbytes, e.info)
                    for e in getattr(t, n)] for n in lists}, sorted(t.skipped.items()))
"""


@pytest.mark.parametrize("nan", [False, True])
def test_json_reads_what_msgspec_reads(tmp_path, nan):
    """Without msgspec (json decodes), and where msgspec rejects a stretch (a NaN: json reads
    it), every kept event is the same, its links, bytes, launch and GEMM shapes included."""
    import subprocess
    import sys
    doc = load(ALEXNET_TRACE.parents[1] / "real_traces/h100_bert_small.json.gz")
    if nan:
        doc["traceEvents"][5].setdefault("args", {})["note"] = float("nan")
    path = write(doc, tmp_path / "t.json")
    runs = {}
    for blocked in (False, True):
        code = ("import sys; sys.modules['msgspec'] = None\n" if blocked else "") + _DIGEST
        out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                             text=True, check=True).stdout
        decoder, _, digest = out.partition(" ")
        runs[decoder] = digest
    assert set(runs) == {"json", "msgspec"} and runs["json"] == runs["msgspec"]
    assert "KernelLaunch(registers=" in runs["json"] and "(141, 512)" in runs["json"]


def test_large_events_span_buffer_refills(tmp_path):
    # An event bigger than the reader's 1 MiB window must still decode.
    big = event("aten::add", "cpu_op", 0, 3, note="x" * (3 << 20))
    path = write({"traceEvents": [big, event("aten::mul", "cpu_op", 5, 1)]}, tmp_path / "b.json.gz")
    assert [op.name for op in read_trace(path).cpu_ops] == ["aten::add", "aten::mul"]
    assert gzip.open(path).read(1) == b"{"


def test_profiler_steps_recorded_as_cpu_ops_are_steps(tmp_path):
    # Older torch versions emit ProfilerStep#N with cat "cpu_op".
    events = [event("ProfilerStep#0", "cpu_op", 0, 50), event("aten::add", "cpu_op", 5, 10),
              event("ProfilerStep#1", "cpu_op", 100, 50), event("aten::add", "cpu_op", 105, 10)]
    analysis = analyze(read_trace(write({"traceEvents": events}, tmp_path / "old.json")))
    assert [s.name for s in analysis.steps] == ["ProfilerStep#0", "ProfilerStep#1"]
    assert [s.n_kernels for s in analysis.steps] == [1, 1]


def test_per_thread_stream_launch_names_count_as_launches(tmp_path):
    events = gpu_step(1, 0.0, launch_api="cudaLaunchKernel_ptsz")
    [step] = analyze(read_trace(write({"traceEvents": events}, tmp_path / "t.json"))).steps
    assert step.launch_api_us == 5.0 and len(step.launch_delays_us) == 1


def test_activities_without_a_launch_belong_to_the_step_they_ran_in(tmp_path):
    events = gpu_step(1, 0.0) + gpu_step(2, 100.0, corr_base=200)
    events.append(event("cudaStreamSynchronize", "cuda_runtime", 20, 3))  # no correlation id
    events.append(event("orphan", "kernel", 30, 4, tid=7))  # no correlation id either
    events.append(event("launched_earlier", "kernel", 130, 4, tid=7, correlation=999))
    events.append(event("after_every_step", "kernel", 500, 4, tid=7, correlation=998))
    analysis = analyze(read_trace(write({"traceEvents": events}, tmp_path / "t.json")))
    assert [k.name for k in analysis.steps[0].kernels] == ["k", "orphan"]
    assert [k.name for k in analysis.steps[1].kernels] == ["k", "launched_earlier"]
    assert [s.unlinked for s in analysis.steps] == [1, 1]
    assert analysis.unlinked_device == 3 and analysis.unattributed_device == 1


def test_a_graph_launch_has_one_launch_delay(tmp_path):
    events = [event("ProfilerStep#1", "user_annotation", 0, 100),
              event("cudaGraphLaunch", "cuda_runtime", 10, 5, correlation=7)]
    events += [event(f"k{i}", "kernel", 20 + 10 * i, 8, tid=7, correlation=7) for i in range(4)]
    [step] = analyze(read_trace(write({"traceEvents": events}, tmp_path / "g.json"))).steps
    assert step.n_kernels == 4 and list(step.launch_delays_us) == [5.0]  # 20 - (10 + 5)


def test_a_trace_with_nothing_to_analyse_is_a_format_error(tmp_path):
    doc = {"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1}]}
    with pytest.raises(TraceFormatError, match="nothing to analyse"):
        analyze(read_trace(write(doc, tmp_path / "m.json")))


def test_a_trace_from_another_profiler_says_what_it_holds(tmp_path):
    """JAX and TensorFlow write complete events without a `cat`: told, not just "nothing"."""
    events = [{"ph": "X", "name": f"fusion.{i}", "pid": 1, "tid": 1, "ts": 10 * i, "dur": 5}
              for i in range(3)]
    events.append(event("f", "python_function", 0, 3))
    with pytest.raises(TraceFormatError, match="its complete events: 3 without a category, "
                       "1 'python_function'; written by another profiler"):
        analyze(read_trace(write({"traceEvents": events}, tmp_path / "jax.json")))


def test_a_kernel_under_a_runtime_and_a_driver_launch_counts_once(tmp_path):
    """cudaLaunchKernel calls cuLaunchKernel; both can carry the kernel's correlation id."""
    events = gpu_step(1, 0.0, kernels=(("k", 10.0),))
    events.append(event("cuLaunchKernel", "cuda_driver", 3.5, 2, correlation=100))
    [step] = analyze(read_trace(write({"traceEvents": events}, tmp_path / "t.json"))).steps
    assert step.n_kernels == 1 and step.device_us == pytest.approx(10.0)
    assert len(step.launch_delays_us) == 1


def test_a_step_annotation_longer_than_the_trace_is_clipped(tmp_path):
    events = gpu_step(1, 0.0, kernels=(("k", 10.0),), host_dur=40.0)
    events[0]["dur"] = 13_000_000.0  # the profiler wrote the step's end 13 s late
    [step] = analyze(read_trace(write({"traceEvents": events}, tmp_path / "t.json"))).steps
    last = max(e["ts"] + e["dur"] for e in events[1:])
    assert step.host_us == pytest.approx(last)


def test_a_copy_that_waited_and_a_sync_are_blocking_not_launch(tmp_path):
    """A 704-byte DtoH copy whose call returned 146 ms later waited for the stream's earlier
    work; an async copy whose copy ran after the call returned is a launch."""
    events = gpu_step(1, 0.0, kernels=(("k", 10.0),), host_dur=200_000.0)
    events += [event("cudaMemcpyAsync", "cuda_runtime", 30, 146_000, correlation=300),
               event("Memcpy DtoH (Device -> Pageable)", "gpu_memcpy", 145_900, 2, tid=7,
                     correlation=300),
               event("cudaMemcpyAsync", "cuda_runtime", 146_100, 4, correlation=301),
               event("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", 146_200, 3, tid=7,
                     correlation=301),
               event("cudaDeviceSynchronize", "cuda_runtime", 146_300, 50)]
    [step] = analyze(read_trace(write({"traceEvents": events}, tmp_path / "t.json"))).steps
    assert step.blocking_us == pytest.approx(146_000 + 50)
    assert step.launch_api_us == pytest.approx(5 + 4)  # the kernel's launch and the async copy


def test_runtime_and_driver_launches_in_either_order_give_one_kernel_row(tmp_path):
    """cudaLaunchKernel and the cuLaunchKernel under it share one correlation id: one kernel,
    one launch, whichever call the trace lists first."""
    for driver_first in (False, True):
        events = gpu_step(1, 0.0, kernels=(("gemm", 10.0),), corr_base=100)
        driver = event("cuLaunchKernel", "cuda_driver", 3.5, 3, correlation=100)
        events = [driver] + events if driver_first else events + [driver]
        doc = {"traceEvents": events, "deviceProperties": [{"id": 0, "name": "H100"}]}
        analysis = analyze(read_trace(write(doc, tmp_path / f"t{driver_first}.json")))
        step = analysis.steps[0]
        assert step.n_kernels == 1 and [k.name for k in step.kernels] == ["gemm"]
        rows = CallProfile(analysis).kernel_rows()
        assert [(r["kernel"], r["calls_per_call"], r["total_us_per_call"]) for r in rows] == [
            ("gemm", 1.0, 10.0)]
