"""MTIA's device activities (`mtia_ccp_events`, launched by `runFunction -
job_prep_and_submit_for_execution` in `mtia_runtime`) are read as a GPU's are: the same work
written in MTIA's vocabulary gets the same timeline, steps and verdict."""
import gzip
import json
from pathlib import Path

import pytest

from suites.traces.call_profile import CallProfile
from suites.traces.events import read_trace
from suites.traces.findings import FindingContext, run_detectors
from suites.traces.findings.codes import BOUND_CODES, Code
from suites.traces.gpu_timeline import FIELDS, kind, trace_timeline
from suites.traces.steps import analyze
from trace_builders import write

REAL = Path(__file__).parent / "fixtures" / "real_traces"
MTIA_LAUNCH = "runFunction - job_prep_and_submit_for_execution"


def as_mtia(event: dict) -> dict:
    """The event as an MTIA trace writes it: device activities in mtia_ccp_events (copies as
    its dma transfers), runtime calls in mtia_runtime, kernel launches as runFunction."""
    event = dict(event)
    cat = event.get("cat")
    if cat in ("kernel", "gpu_memset"):
        event["cat"] = "mtia_ccp_events"
    elif cat == "gpu_memcpy":
        event["cat"], event["name"] = "mtia_ccp_events", f"dma {event['name']}"
    elif cat in ("cuda_runtime", "cuda_driver"):
        event["cat"] = "mtia_runtime"
        if event.get("name") == "cudaLaunchKernel":
            event["name"] = MTIA_LAUNCH
    return event


def verdict(path: Path):
    prof = CallProfile(analyze(read_trace(path)))
    found = [f for f in run_detectors(FindingContext(profile=prof))
             if f.code in BOUND_CODES or f.code == Code.NO_VERDICT]
    return prof, found


@pytest.mark.parametrize("name", ["h100_bert_small", "h100_qwen1.5_0.5b"])
def test_the_same_work_in_mtia_vocabulary_reads_the_same(name, tmp_path):
    with gzip.open(REAL / f"{name}.json.gz", "rt") as f:
        doc = json.load(f)
    doc["traceEvents"] = [as_mtia(e) for e in doc["traceEvents"]]
    mtia = write(doc, tmp_path / "mtia.json")
    original = read_trace(REAL / f"{name}.json.gz")
    converted = read_trace(mtia)
    assert "mtia_ccp_events" not in converted.other_categories
    assert len(converted.device) == len(original.device) > 0
    a, b = trace_timeline(original), trace_timeline(converted)
    assert [getattr(b, f) for f in FIELDS] == pytest.approx([getattr(a, f) for f in FIELDS])
    (prof_a, found_a), (prof_b, found_b) = verdict(REAL / f"{name}.json.gz"), verdict(mtia)
    assert prof_b.analysis.mode == prof_a.analysis.mode == "cuda"
    assert [s.n_kernels for s in prof_b.steps] == [s.n_kernels for s in prof_a.steps]
    assert [(f.code, f.statement) for f in found_b] == [(f.code, f.statement) for f in found_a]
    assert found_b and found_b[0].code != Code.NO_VERDICT
    def copies(prof):
        return sum(r["calls_per_call"] for r in prof.kernel_rows() if r["kind"] == "memcpy")
    assert copies(prof_b) == copies(prof_a)  # its dma transfers are copies in the kernel table


def test_mtia_dma_is_a_copy_and_its_other_activities_compute():
    from suites.traces.events import Event
    def activity(name):
        return Event(name, "mtia_ccp_events", 0.0, 1.0, 1, 1, 1, None, None)
    assert kind(activity("dma_h2d")) == "memcpy"
    assert kind(activity("fused_linear_relu")) == "computation"
    assert kind(activity("ncclKernel_AllReduce")) == "communication"
