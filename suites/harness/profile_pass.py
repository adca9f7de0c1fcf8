"""The profiling pass: a separate run under torch.profiler with a schedule, one call per step,
each call inside `record_function(<variant>)`. Exports the Chrome trace (.json.gz, opens in
Perfetto) and the key_averages table; the timing pass never runs under the profiler."""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule


@dataclass(frozen=True)
class ProfileSpec:
    enabled: bool
    wait: int
    warmup: int
    active: int
    record_shapes: bool
    row_limit: int  # rows of the key_averages table


@contextlib.contextmanager
def native_stderr_captured():
    """Kineto logs every profiler start and stop from C++ straight to file descriptor 2, which
    breaks the progress lines; hold those lines back, and show them only if profiling fails."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            sink.seek(0)
            sys.stderr.write(sink.read().decode(errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def capture(call, label: str, device_type: str, spec: ProfileSpec, trace_path: Path,
            table_path: Path, before_call=None, meter=None):
    """`before_call` (e.g. an L2 flush) runs before each call, outside its range, and the GPU
    queue is drained before the call starts, as in the timing pass. `meter` (a load meter:
    start/stop) spans the profiled steps alone, not the profiler's start-up nor its export,
    which no figure of the trace holds; its reading is returned (None without one)."""
    activities = [ProfilerActivity.CPU]
    if device_type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    trace_path.parent.mkdir(parents=True, exist_ok=True)
    table_path.parent.mkdir(parents=True, exist_ok=True)

    def export(prof):
        prof.export_chrome_trace(str(trace_path))  # a .gz suffix makes torch gzip it

    steps = spec.wait + spec.warmup + spec.active
    plan = schedule(wait=spec.wait, warmup=spec.warmup, active=spec.active, repeat=1)
    # On a CPU the memory events give each call's peak allocation (suites/traces/memory.py);
    # a GPU run reads its peak from the CUDA allocator instead, outside the profiler.
    with native_stderr_captured(), profile(activities=activities, schedule=plan,
                                           on_trace_ready=export,
                                           record_shapes=spec.record_shapes,
                                           profile_memory=device_type == "cpu") as prof:
        load = None
        for step in range(steps):
            if meter is not None and step == steps - spec.active:
                meter.start()
            if before_call is not None:
                before_call()
            if device_type == "cuda":
                torch.cuda.synchronize()  # the call starts on an idle GPU, as when timed
            with record_function(label):
                call()
            if device_type == "cuda":
                # Outside the call's range: each step's kernels finish inside the step.
                torch.cuda.synchronize()
            if meter is not None and step == steps - 1:
                load = meter.stop()
            prof.step()
    sort_by = "self_device_time_total" if device_type == "cuda" else "self_cpu_time_total"
    table = prof.key_averages().table(sort_by=sort_by, row_limit=spec.row_limit)
    table_path.write_text(f"{label}: {spec.active} profiled calls, sorted by {sort_by}\n{table}\n")
    return load
