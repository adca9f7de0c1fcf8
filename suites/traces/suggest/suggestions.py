"""A trace's op groups for `--suggest`, ranked, and what the trace says overall: its top-level
op calls (op_calls.py) matched per thread to fusebench's blocks (patterns.py) and grouped
(groups.py). Trace analysis only: the replay, the files and the page are the suggest room's
(suites/suggest/)."""
from __future__ import annotations

from kernels import registry
from suites.traces.device_time import on_gpu, trace_mode
from suites.traces.events import Trace
from suites.traces.suggest.groups import (Group, group_matches, group_outside, group_unmapped,
                                          ranked)
from suites.traces.suggest.op_calls import read_op_calls
from suites.traces.suggest.patterns import match_thread

NO_SHAPES = ("--suggest: this trace has no input shapes (it was recorded without "
             "record_shapes=True): profile again with torch.profiler.profile(..., "
             "record_shapes=True) to get a sweep at its shapes")


def training(trace: Trace) -> bool:
    """Whether the trace holds a backward pass (autograd's engine or backward ops)."""
    return any("Backward" in e.name or e.name.startswith("autograd::engine")
               for e in trace.cpu_ops)


def own_blocks() -> list:
    """The registered blocks that declare their own trace pattern (kernels/api.py
    `from_trace`)."""
    ops = [registry.get_op(name) for name in registry.op_names()]
    return [op for op in ops if callable(getattr(op, "from_trace", None))]


def suggestions(trace: Trace) -> tuple[list[Group], dict] | None:
    """(every group, ranked; what the trace says overall), or None without shapes."""
    calls, shaped, outside = read_op_calls(trace)
    if not shaped:
        return None
    threads: dict = {}
    for call in calls:
        if call.top_level:
            threads.setdefault((call.event.pid, call.event.tid), []).append(call)
    matches, unmapped = [], []
    own = own_blocks()
    for thread_calls in threads.values():
        found, left = match_thread(thread_calls, own)
        matches += found
        unmapped += left
    groups = ranked(group_matches(matches) + group_unmapped(unmapped) + group_outside(outside))
    gpu = on_gpu(trace_mode(trace))
    total_device = (sum(a.dur for a in trace.device) if gpu
                    else sum(g.device_us for g in groups))
    info = {"device": "cuda" if gpu else "cpu", "total_device_us": total_device,
            "top_level_us": sum(g.device_us for g in groups),
            "mode": "fwd_bwd" if training(trace) else "fwd_nograd"}
    return groups, info
