"""One process driving two GPUs (a model split across them): each device's activities under its
own pid, streams per device, and a finding that says whether the devices take turns."""
import pytest

from suites.traces.call_profile import CallProfile
from suites.traces.command import main, timelines
from suites.traces.events import read_trace
from suites.traces.findings import FindingContext, run_detectors
from suites.traces.findings.codes import Code, Severity
from suites.traces.steps import analyze
from trace_builders import event, write


def two_gpus(tmp_path, overlap: bool, name="t.json"):
    """4 steps of 1 ms; in each, 4 kernels of 200 us on device 0 then 4 on device 1 (a model's
    first half on one GPU, its second on the other), or (overlap) both at once. Stream 7 on
    both devices."""
    events, corr = [], 1
    for step in range(4):
        t0 = step * 1000.0
        events.append(event(f"ProfilerStep#{step}", "user_annotation", t0, 1000))
        for i in range(8):
            device = 0 if i < 4 else 1
            at = t0 + 1 + i * 10
            start = t0 + 50 + (i % 4 if overlap else i) * 110
            events.append(event("cudaLaunchKernel", "cuda_runtime", at, 5, correlation=corr))
            kernel = event(f"layer{i}", "kernel", start, 100, tid=7, correlation=corr)
            kernel["pid"] = device
            events.append(kernel)
            corr += 1
    path = write({"traceEvents": events}, tmp_path / name)
    return path, CallProfile(analyze(read_trace(path)))


def finding(profile):
    found = [f for f in run_detectors(FindingContext(profile=profile))
             if f.code == Code.SEVERAL_DEVICES]
    assert len(found) == 1
    return found[0]


def test_devices_that_take_turns_are_said_and_each_has_its_timeline(tmp_path, capsys):
    path, profile = two_gpus(tmp_path, overlap=False)
    said = finding(profile)
    assert said.severity == Severity.NOTICE and "they take turns" in said.statement, said
    assert said.evidence["together_us"] == 0
    assert said.evidence["device_0_busy_us"] == said.evidence["device_1_busy_us"] == 1600
    primary = next(f for f in run_detectors(FindingContext(profile=profile))
                   if f.code == Code.COMPUTE_BOUND)
    assert "[2 devices read as one, busy when any is; alone: device 0 41% and device 1 41%, " \
           "taking turns]" in primary.statement, primary.statement
    rows = {row["scope"]: row for row in timelines(profile.analysis.trace, profile)}
    assert {"device 0", "device 1", "device 0 stream 7", "device 1 stream 7"} <= set(rows)
    assert rows["device 0"]["busy_us"] == rows["device 1"]["busy_us"] == 1600
    assert rows["trace"]["busy_us"] == 3200  # the pair, read as one device
    assert main([str(path)]) == 0
    assert "several_devices" in capsys.readouterr().out


def test_devices_that_work_at_once_do_not_take_turns(tmp_path):
    _, profile = two_gpus(tmp_path, overlap=True)
    said = finding(profile)
    assert said.severity == Severity.INFO and "take turns" not in said.statement
    assert said.evidence["together_us"] == 1600


def test_one_device_says_nothing_and_keeps_its_stream_names(tmp_path):
    events = [event("ProfilerStep#0", "user_annotation", 0, 100),
              event("cudaLaunchKernel", "cuda_runtime", 1, 5, correlation=1),
              event("k", "kernel", 10, 20, tid=7, correlation=1)]
    path = write({"traceEvents": events}, tmp_path / "one.json")
    profile = CallProfile(analyze(read_trace(path)))
    assert not [f for f in run_detectors(FindingContext(profile=profile))
                if f.code == Code.SEVERAL_DEVICES]
    assert [r["scope"] for r in timelines(profile.analysis.trace, profile)] == [
        "trace", "ProfilerStep#0", "stream 7"]


@pytest.mark.parametrize("steps", [True, False])
def test_two_processes_merged_into_one_file_lower_confidence_and_say_why(tmp_path, capsys, steps):
    """Two ranks' traces in one file (each on its own GPU): their steps overlap and each would
    count the other's kernels; the verdict says so, and how to read them instead. Without step
    ranges (the whole trace one step) too: told by the processes that launch."""
    import copy
    from trace_builders import load
    from pathlib import Path
    doc = load(Path(__file__).parent / "fixtures" / "real_traces" / "h100_bert_small.json.gz")
    if not steps:
        doc["traceEvents"] = [e for e in doc["traceEvents"]
                              if not str(e.get("name", "")).startswith("ProfilerStep#")]
    other = copy.deepcopy(doc["traceEvents"])
    for e in other:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            e["pid"] = 1
        elif isinstance(e.get("pid"), int):
            e["pid"] += 1000
        if isinstance(e.get("ts"), (int, float)):
            e["ts"] += 37.0
        if isinstance(e.get("args"), dict) and "correlation" in e["args"]:
            e["args"]["correlation"] += 10 ** 6
    doc["traceEvents"] += other
    path = write(doc, tmp_path / "merged.json")
    profile = CallProfile(analyze(read_trace(path)))
    assert profile.analysis.step_processes == ("19392", "20392")
    assert [s.name for s in profile.steps] == (["ProfilerStep#6"] * 2 if steps else ["whole trace"])
    found = {f.code: f for f in run_detectors(FindingContext(profile=profile))}
    primary = found[Code.OVERHEAD_BOUND]
    devices = found[Code.SEVERAL_DEVICES]  # each rank on its own GPU: no split model
    assert devices.severity == Severity.INFO and "take turns" not in devices.statement
    assert devices.statement.endswith("2 processes drive them (pids 19392, 20392): the ranks of "
                                      "a job in one file, not one process's split model; "
                                      "analyse one file per process"), devices.statement
    assert ("[low confidence: 2 processes (pids 19392, 20392) in one file: their steps overlap"
            in primary.statement), primary.statement
    assert main([str(path)]) == 0
    assert "analyse one trace per process" in capsys.readouterr().out
    # One process's trace without step ranges is one process: nothing said.
    alone = write({**doc, "traceEvents": doc["traceEvents"][:len(other)]}, tmp_path / "one.json")
    assert len(analyze(read_trace(alone)).step_processes) == 1
