"""Small Chrome traces built in tests: synthetic events, and fixture traces rewritten on disk."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "gpu_traces"
TRITON_TRACE = FIXTURES / "a100_triton_pointwise.json.gz"
ALEXNET_TRACE = FIXTURES / "a100_alexnet_fp32.json.gz"


def load(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def write(doc, path: Path) -> Path:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt") as f:
        json.dump(doc, f)
    return path


def event(name, cat, ts, dur, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
            "args": args}


def gpu_step(step: int, t0: float, launch_api="cudaLaunchKernel", kernels=(("k", 5.0),),
             corr_base=100, label="call", host_dur=40.0):
    """One ProfilerStep with a record_function range, one launch per kernel, and the kernels."""
    events = [event(f"ProfilerStep#{step}", "user_annotation", t0, host_dur + 20),
              event(label, "user_annotation", t0 + 1, host_dur)]
    ts = t0 + 2
    for i, (name, dur) in enumerate(kernels):
        corr = corr_base + i
        events.append(event("aten::op", "cpu_op", ts, 8))
        events.append(event(launch_api, "cuda_runtime", ts + 1, 5, correlation=corr))
        events.append(event(name, "kernel", ts + 10, dur, tid=7, correlation=corr, stream=7))
        ts += 9
    return events
