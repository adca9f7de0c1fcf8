"""Several devices in one trace: one process that drives two GPUs (a model split across them with
device_map="auto", a pipeline in one process) writes each GPU's activities under its own `pid`.
The steps' figures and verdict read the devices as one, busy when any is busy; this says how
busy each is alone, and whether they work at once or take turns. Taking turns (each one's
layers run after the other's, one micro-batch at a time) leaves each device idle while the other
works, however busy the pair looks together."""
from __future__ import annotations

from dataclasses import dataclass

from suites.traces.device_time import on_gpu
from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, FindingContext
from suites.traces.gpu_timeline import by_device, length, union

# Devices take turns when the time they are busy together is under this share of the least
# busy one's time, and each is busy at least MIN_BUSY of the span (a device that holds a
# copy or two is no partner in the work).
TURNS_OVERLAP = 0.2
MIN_BUSY = 0.1


@dataclass
class DeviceShares:
    alone: dict  # device -> its busy time
    span_us: float  # from the first activity on any device to the last
    together_us: float  # time counted by two devices or more

    def shares(self) -> str:
        """"device 0 41% and device 1 41%": each one's busy share of the span."""
        parts = [f"device {d} {us / self.span_us:.0%}" for d, us in self.alone.items()]
        return ", ".join(parts[:-1]) + " and " + parts[-1]

    @property
    def take_turns(self) -> bool:
        working = [us for us in self.alone.values() if us >= MIN_BUSY * self.span_us]
        return len(working) >= 2 and self.together_us < TURNS_OVERLAP * min(working)


def device_shares(profile) -> DeviceShares | None:
    """Each device's busy time alone, where a GPU trace holds several devices; else None."""
    if profile is None or not on_gpu(profile.analysis.mode):
        return None
    devices = by_device(profile.analysis.trace.device)
    if len(devices) < 2:
        return None
    busy = {d: union([(e.ts, e.ts + e.dur) for e in events]) for d, events in devices.items()}
    every = [iv for intervals in busy.values() for iv in intervals]
    span = max(end for _, end in every) - min(start for start, _ in every)
    if span <= 0:
        return None
    alone = {d: length(intervals) for d, intervals in busy.items()}
    return DeviceShares(alone, span, sum(alone.values()) - length(union(every)))


def several_devices(ctx: FindingContext):
    found = device_shares(ctx.profile)
    if found is None:
        return
    statement = (f"{len(found.alone)} devices in one trace: the steps' figures and verdict read "
                 f"them as one device, busy when any is; busy alone: {found.shares()} of the "
                 f"{found.span_us / 1e3:.3g} ms span; two or more busy at once: "
                 f"{found.together_us / found.span_us:.0%} of it")
    processes = ctx.profile.analysis.step_processes
    if len(processes) > 1:  # each process drives its own: ranks merged, not a split model
        statement += (f"; {len(processes)} processes drive them (pids {', '.join(processes)}): "
                      "the ranks of a job in one file, not one process's split model; analyse "
                      "one file per process")
    elif found.take_turns:
        statement += (": they take turns (a model split across devices and run in sequence), "
                      "each idle while another works; micro-batches through the stages, or a "
                      "replica per device, would keep them busy together")
    turns = found.take_turns and len(processes) <= 1
    yield Finding(Code.SEVERAL_DEVICES, Severity.NOTICE if turns else Severity.INFO,
                  statement, {"devices": len(found.alone), "span_us": found.span_us,
                              "together_us": found.together_us,
                              **{f"device_{d}_busy_us": us for d, us in found.alone.items()}})
