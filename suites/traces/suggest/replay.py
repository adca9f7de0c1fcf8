"""Replay first: each mapped group run alone as the trace ran it (the block's variant of the
trace's form: `aten::linear` is the linear block's eager, `addmm` matmul_add's addmm, an SDPA
call attention's sdpa, `aten::layer_norm` norm's functional, the GeGLU MLP's ops its eager), at
the trace's shapes and dtype, and its time per call set beside the trace's time per instance.

It says whether the microbenchmark reproduces the model: within 1.5x either way it does; past
it, a finding with the likely cause ("the model's attention ran 2.3x slower than alone: its
inputs were strided views"). Only where this machine is the trace's kind of device (a CPU trace
here; a CUDA trace where CUDA is): a GPU trace read on a CPU is not replayed, and says so.

Timed with torch.utils.benchmark (the median of blocked runs of at least REPLAY_S), on the
threads torch uses by default; this is a check of the trace, not a measurement of record.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.utils.benchmark  # noqa: F401 (torch.utils.benchmark.Timer: not imported by torch)

from kernels import registry
from kernels.base import Case
from suites.common.memory import available_memory
from suites.traces.suggest.groups import Group
from suites.traces.suggest.scaling import scaled

REPLAY_S = 0.2
HEADROOM = 4
APART = 1.5  # the model and the replay disagree past this factor either way


@dataclass
class Replay:
    us: float = math.nan      # the replay's time per call
    trace_us: float = math.nan  # the trace's time per instance of the group
    note: str = ""            # why there is no replay, or what the difference says

    @property
    def ratio(self) -> float:
        """trace / replay: over 1, the model ran it slower than alone."""
        return self.trace_us / self.us if self.us > 0 else math.nan


def _device(trace_device: str) -> str | None:
    if trace_device == "cpu":
        return "cpu"
    return "cuda" if torch.cuda.is_available() else None


def _cause(g: Group, ratio: float, comm: bool, trace_device: str) -> str:
    if ratio > 1:
        if any("strided view" in n for n in g.notes):
            return "its inputs were strided views in the model (the replay's are contiguous)"
        if comm:
            return "it may have overlapped with communication kernels"
        ops = g.recorded_ops / max(1, g.instances)
        if trace_device == "cpu":  # a CPU trace's op spans hold the profiler's own work
            return (f"on a CPU the trace's time holds the profiler's cost for the {ops:.3g} ops "
                    "it recorded in each call, and the model's other work shares the caches")
        return "the model's other work shares the device and its caches"
    return ("the model's caches held its operands (weights reused across calls), or the "
            "replay's threads or clocks differ")


def replay_one(g: Group, device: str, scale: float = 1.0) -> float:
    """The replay's time per call, times the factor its shape was scaled down by (scaling.py:
    an axis its work is linear in), so it stands beside the trace's."""
    op = registry.get_op(g.suite)
    variant = registry.get_variant(g.suite, g.replay)
    values, applied = scaled(g.suite, g.values, scale)
    case = Case.make(g.suite, values, g.dtype, device)
    problem = variant.supports(case)
    if problem:
        raise RuntimeError(problem)
    # A shape past what is free is said, never allocated (an out-of-memory kill takes the
    # whole command): its ideal bytes x HEADROOM (intermediates, the call's output).
    need = op.bytes_ideal(case) * HEADROOM
    room, what = available_memory(device)
    if need > room:
        raise MemoryError(f"needs ~{need / 2**30:.3g} GiB, {room / 2**30:.3g} GiB {what}")
    inputs = op.make_inputs(case, torch.Generator(device=device).manual_seed(0))
    with torch.no_grad(), variant.scope():
        call = variant.prepare(case, inputs)
        call()
        timer = torch.utils.benchmark.Timer("call()", globals={"call": call},
                                            num_threads=torch.get_num_threads())
        return timer.blocked_autorange(min_run_time=REPLAY_S).median * 1e6 * applied


def replay_all(groups: list[Group], trace_device: str, comm: bool,
               scale: float = 1.0) -> dict[int, Replay]:
    """id(group) -> its Replay, for every mapped group with a replay variant."""
    device = _device(trace_device)
    out = {}
    for g in groups:
        if not g.mapped or not g.replay:
            continue
        r = Replay(trace_us=g.device_us / max(1, g.instances))
        if device is None:
            r.note = f"not replayed: the trace ran on {trace_device}, this machine has no CUDA"
        else:
            try:
                r.us = replay_one(g, device, scale)
            except Exception as exc:  # a shape this machine cannot hold: said, not raised
                r.note = f"not replayed: {type(exc).__name__}: {str(exc).splitlines()[0][:150]}"
        if math.isfinite(r.ratio) and not 1 / APART <= r.ratio <= APART:
            way = "slower" if r.ratio > 1 else "faster"
            factor = r.ratio if r.ratio > 1 else 1 / r.ratio
            r.note = (f"the model's {g.label()} ran {factor:.2g}x {way} than alone: "
                      f"{_cause(g, r.ratio, comm, trace_device)}")
        out[id(g)] = r
    return out
