"""Where a step's time goes: the primary bound (step_bound.py) stated with its numbers and what
cuts it, and the steps that differ from it (what else stands out beside it: standouts.py)."""
from __future__ import annotations

import re
from collections import defaultdict

from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, FindingContext
from suites.traces.findings.devices import device_shares
from suites.traces.findings.row_bound import row_bound_finding, row_paced_by_host
from suites.traces.findings.step_bound import (DEVICE, MARGIN, PrimaryBound, StepBound,
                                                duration, held_by_stream_wait, host_side,
                                                primary_bound, unrecorded_us)
from suites.traces.device_time import (GPU, HOST_ONLY, gpu_job_hint, on_rocm,
                                       unread_device_categories)
from suites.traces.op_kinds import (FUSED_KERNEL, is_alloc_api, is_copy_api, is_stream_wait_api,
                                    is_sync_api)

SHOWN_OTHERS = 4
# Bounds that say the hardware is doing the work (info), not that time is lost (notice).
WORK_CODES = (Code.COMPUTE_BOUND, Code.MEMORY_BOUND, Code.COMM_BOUND, Code.COPY_BOUND)


def profile_bound(ctx: FindingContext) -> PrimaryBound | None:
    """The profile's primary bound, computed once per profile (several detectors ask)."""
    profile = ctx.profile
    if profile is None:
        return None
    return profile._memo("primary_bound",
                         lambda: primary_bound(profile.steps, profile.analysis.mode))


# Each bound's name, as its finding's statement begins (the trace's verdict, not a suite row's:
# there a roofline may restate compute as overhead or memory).
HEADLINES = {Code.OVERHEAD_BOUND: "overhead-bound", Code.COMPUTE_BOUND: "compute-bound",
             Code.MEMORY_BOUND: "memory-bound", Code.COMM_BOUND: "communication-bound",
             Code.COPY_BOUND: "copy-bound", Code.DEVICE_WAIT: "device waiting",
             Code.SYNC_BOUND: "sync-bound", Code.DATA_BOUND: "data-loading-bound",
             Code.INIT_BOUND: "initialisation-bound", Code.HOST_CODE_BOUND: "host-code-bound"}
# Parts whose name adds to the headline: a CPU's compute and collectives run on the host.
_NAMED_KINDS = ("CPU compute", "CPU collectives", "allocation")


# A GPU trace's step bound on its kernels (TraceLens's "computation": every kernel that is not
# a collective or a copy) is bound by the device, not necessarily by its FLOPs: its kernels may be
# bound by memory (kernel_mix, the GEMM table's FLOP/B say which).
GPU_BOUND = "GPU-bound"


def verdict_label(b: StepBound) -> str:
    """A bound in a few words, as its statement names it: "overhead-bound", "GPU-bound",
    "communication-bound (CPU collectives)"."""
    if b.code == Code.COMPUTE_BOUND and b.kind == "computation":
        return GPU_BOUND
    return HEADLINES[b.code] + (f" ({b.kind})" if b.kind in _NAMED_KINDS else "")


def _statement(b: StepBound, step, ctx: FindingContext) -> tuple[Code, str]:
    """A trace step's bound in words (a suite row's is row_bound.py's)."""
    what = "step"
    p = b.parts
    if b.code == Code.COMPUTE_BOUND:
        work = "device work" if ctx.on_gpu else "compute work (CPU ops that compute)"
        busy = p["busy"] if ctx.on_gpu else b.us
        if not ctx.on_gpu:
            return b.code, (f"compute-bound: {work} takes {b.share:.0%} of the {what} "
                            f"({duration(b.us)} of a {duration(b.window_us)} window)")
        # A trace: its kernels' time, whatever bounds each kernel.
        return b.code, (f"{GPU_BOUND}: kernels run {b.share:.0%} of the {what} "
                        f"({duration(b.us)} of a {duration(b.window_us)} window, TraceLens's "
                        f"'computation'; the device is busy {busy / b.window_us:.0%})"
                        f"{_earlier_work(step, b.window_us)}")
    if b.code == Code.OVERHEAD_BOUND and not ctx.on_gpu:
        return b.code, (f"overhead-bound: compute work (CPU ops that compute) is "
                        f"{duration(p['CPU compute'])} of a {duration(b.window_us)} {what} "
                        f"({p['CPU compute'] / b.window_us:.0%}); the rest is Python and dispatch")
    if b.code == Code.OVERHEAD_BOUND and b.kind == "allocation":
        return b.code, (f"overhead-bound (allocation): the GPU waited for the host "
                        f"{duration(p['host wait'])} of the {what}'s {duration(b.window_us)} "
                        f"({p['host wait'] / b.window_us:.0%}); the host's time then is memory "
                        f"allocation calls ({_allocations(step)}; {b.share:.0%} of the {what}): "
                        "the caching allocator asks the device for memory in the step "
                        "(torch.cuda.empty_cache in the loop, or new tensor sizes each step): "
                        "keep its cache warm")
    if b.code == Code.OVERHEAD_BOUND:
        return b.code, (f"overhead-bound: the GPU waited for the host {duration(p['host wait'])} "
                        f"of the {what}'s {duration(b.window_us)} "
                        f"({p['host wait'] / b.window_us:.0%}; busy {duration(p['busy'])}"
                        f"{queue_runs_empty(ctx)}); the host's time then is Python, dispatch and "
                        f"launch calls ({b.share:.0%} of the {what}): "
                        f"{overhead_remedy(ctx, step.n_kernels)}")
    words = {
        Code.COMM_BOUND: "communication-bound: collectives take",
        Code.COPY_BOUND: "copy-bound: memory copies nothing overlaps take",
        Code.DEVICE_WAIT: "device waiting: work was queued, yet the GPU sat idle (waiting on "
                          "an event, another stream or device) for",
        Code.SYNC_BOUND: "sync-bound: the host blocked in synchronize calls and copies for",
        Code.DATA_BOUND: "data-loading-bound: DataLoader ranges take",
        Code.INIT_BOUND: "initialisation-bound: one-time set-up calls (context creation, device "
                         "queries, module loading) take",
        Code.HOST_CODE_BOUND: "host-code-bound: the program's own host code (ranges that "
                              f"launch nothing: {', '.join(step.host_code_names[:3]) or '?'}) "
                              "takes",
    }[b.code]
    said = f"{words} {duration(b.us)} of the {duration(b.window_us)} {what} ({b.share:.0%})"
    if ctx.on_gpu and b.side == "host" and b.code != Code.SYNC_BOUND:
        said += " while the device waited for the host"
    if b.code in (Code.SYNC_BOUND, Code.INIT_BOUND):
        said += _longest(step, b.code)
    if b.code == Code.DEVICE_WAIT and held_by_stream_wait(step):
        said += _held_stream(step)
    return b.code, said


EVENT_RECORD = re.compile(r"EventRecord", re.IGNORECASE)


def _held_stream(step) -> str:
    """A step whose device sat idle with work queued behind a stream's wait for an event, while
    the host blocked (sglang's decode: the kernels launched after a hipStreamWaitEvent start
    only as the 463 ms copy behind them ends): the wait, and what the host did meanwhile."""
    first = next(c for c in step.runtime if is_stream_wait_api(c.name))
    at = first.ts - (step.call.ts if step.call is not None else step.window.start)
    recorded = any(EVENT_RECORD.search(c.name) and c.ts < first.ts for c in step.runtime)
    if recorded:
        source = "an event recorded earlier in the step"
    elif first.name.startswith("hip"):  # Kineto's ROCm tracer leaves hipEventRecord out
        source = ("an event whose recording a ROCm trace does not show (Kineto leaves "
                  "hipEventRecord out): another stream's, another host thread's or an earlier "
                  "step's work")
    else:
        source = ("an event no call of the step records: another stream's, another host "
                  "thread's or an earlier step's work")
    blocked = _longest(step, Code.SYNC_BOUND).removeprefix("; the longest: ")
    return (f", behind a {first.name} ({duration(at)} into the step: torch's wait_stream or "
            f"wait_event) on {source}: find the wait in the code and what it waits on. The "
            f"host blocked "
            f"{duration(step.blocking_us)} behind that wait"
            + (f" (the longest: {blocked})" if blocked else ""))


def _allocations(step) -> str:
    """`cudaMalloc x5, 235 ms`: the step's allocation calls by name, longest total first."""
    calls: dict[str, list[float]] = defaultdict(list)
    once = {id(c) for c in step.host.init_calls}  # one-time set-up: said apart
    for c in step.runtime:
        if is_alloc_api(c.name) and id(c) not in once:
            calls[c.name].append(c.dur)
    ranked = sorted(calls.items(), key=lambda kv: -sum(kv[1]))[:2]
    return ", ".join(f"{name} x{len(d)}, {duration(sum(d))}" for name, d in ranked)


EARLIER_SHOWN = 0.05  # of the window: less of the device's time on earlier work goes unsaid


def _earlier_work(step, window_us: float) -> str:
    """Where the device spent part of the step's window on work launched before the trace (the
    previous step's, still running when the profiler started): busy, but not this step's."""
    earlier = step.pre_trace_us
    if window_us <= 0 or earlier < EARLIER_SHOWN * window_us:
        return ""
    return (f"; {duration(earlier)} of it ran work launched before the trace (earlier work "
            "still running when the profiler started), the rest the step's own")


def _unrecorded(step, window_us: float) -> str:
    """The window's time before the trace's first recorded device activity, with work queued:
    left out of every part (StepMetrics.unrecorded_us), and said where it is worth a word."""
    unrecorded = unrecorded_us(step)
    if window_us <= 0 or unrecorded < EARLIER_SHOWN * window_us:
        return ""
    return (f"; judged in the window after its first {duration(unrecorded)}, in which work "
            "was queued but the trace records no device activity: what the device did then "
            "(work the trace does not hold, another process's, or a wait) it cannot tell")


def _runner_up(b: StepBound, what: str) -> str:
    """The next part, always said; a close call said as one."""
    if not b.runner_up or b.runner_up_us < 0.01 * b.window_us:  # nothing else took time
        return ""
    if b.close:
        return (f"; a close call: {b.runner_up} is {b.runner_up_us / b.window_us:.1%} of the "
                f"{what} against {b.contest_us / b.window_us:.1%} (within {MARGIN:.0%})")
    return f"; next: {b.runner_up} {b.runner_up_us / b.window_us:.0%}"


def _longest(step, code: Code) -> str:
    """`; the longest: hipMemcpyWithStream, 463 ms` for a step bound on its host calls."""
    if code == Code.INIT_BOUND:
        calls = step.host.init_calls
    else:
        calls = [c for c in step.runtime if (is_sync_api(c.name) or is_copy_api(c.name))
                 and c is not step.flush]  # the profiler's flush is not the step's (step_bound)
    if not calls:
        return ""
    top = max(calls, key=lambda c: c.dur)
    inside = f" inside {top.op}" if top.op else ""
    first = (" (the first runtime call: it pays for creating the context)"
             if code == Code.INIT_BOUND and step.runtime and top is step.runtime[0] else "")
    return f"; the longest: {top.name}{inside}, {duration(top.dur)}{first}"


# A trace's verdict rests on thin evidence below these: most device activities unlinked (placed
# by time, their launches unseen), or a handful of events in all.
THIN_UNLINKED_SHARE = 0.5
THIN_EVENTS = 200


def thin_evidence(ctx: FindingContext) -> str:
    """Why a trace's verdict rests on little (a user's trace only: a suite row's call is small
    by design), or ""."""
    if ctx.profile is None or ctx.row is not None:
        return ""
    analysis = ctx.profile.analysis
    device = analysis.trace.device
    if len(analysis.step_processes) > 1:
        return (f"{len(analysis.step_processes)} processes (pids "
                f"{', '.join(analysis.step_processes)}) in one file: their steps overlap, and "
                "each counts the others' work in its span: analyse one file per process, as "
                "ranks")
    if device and analysis.unlinked_device > THIN_UNLINKED_SHARE * len(device):
        return (f"{analysis.unlinked_device} of {len(device)} device activities have no launch "
                "in the trace, so why the device waited is partly guessed")
    trace = analysis.trace
    kept = len(trace.cpu_ops) + len(trace.annotations) + len(trace.runtime) + len(device)
    if kept < THIN_EVENTS:  # what was read, exact copies and bad events aside
        return (f"only {kept} events in the trace (ops, ranges, runtime calls, device "
                "activities), "
                "a fragment")
    return ""


TRACED_FRAMES = 100  # Python frames a step (with_stack): from here the tracer's cost shows


def _python_tracer(ctx: FindingContext) -> str:
    """A trace recorded with_stack holds a Python frame per call, and recording them costs the
    host time in every one: a host-bound share then reads high (BERT-small: 1,276 frames in a
    4.4 ms step)."""
    if ctx.profile is None or ctx.row is not None:
        return ""
    frames = ctx.profile.analysis.trace.other_categories.get("python_function", 0)
    per_step = frames / max(1, len(ctx.profile.steps))
    if per_step < TRACED_FRAMES:
        return ""
    return (f" [recorded with_stack: {per_step:,.0f} Python frames a step; tracing them adds "
            "to the host's time, so its share reads high: a trace without with_stack gives the "
            "host's own]")


def _evidence(b: StepBound, step_name: str) -> dict:
    return {"step": step_name, "verdict": f"{b.side}-bound: {b.kind}", "window_us": b.window_us,
            "share": b.share, "runner_up": b.runner_up, "runner_up_us": b.runner_up_us,
            "close_call": b.close,
            **{f"{k.replace(' ', '_').replace(':', '')}_us": us for k, us in b.parts.items()}}


def bound(ctx: FindingContext):
    if ctx.row is not None:  # a suite row: its one bound (row_bound.py), never decided again
        yield from row_bound_finding(ctx)
        return
    found = profile_bound(ctx)
    if found is None:
        yield from _no_verdict(ctx)
        return
    code, statement = _statement(found.bound, found.step, ctx)
    statement += _runner_up(found.bound, "call" if ctx.row is not None else "step")
    statement += _unrecorded(found.step, found.bound.window_us)
    if found.bound.side != DEVICE:
        statement += _python_tracer(ctx)
    thin = thin_evidence(ctx)
    if thin:
        statement += f" [low confidence: {thin}]"
    devices = device_shares(ctx.profile) if ctx.row is None else None
    if devices is not None:
        statement += (f" [{len(devices.alone)} devices read as one, busy when any is; alone: "
                      f"{devices.shares()}" + (", taking turns" if devices.take_turns else "")
                      + "]")
    if found.steps < found.of:  # the steps disagree: say how many share the bound
        statement += f" [{found.steps} of {found.of} steps; shown: {found.step.name}]"
    severity = Severity.INFO if code in WORK_CODES else Severity.NOTICE
    yield Finding(code, severity, statement, _evidence(found.bound, found.step.name))
    if found.others:
        kinds = defaultdict(list)
        for name, b in found.others:
            kinds[verdict_label(b)].append((name, b))
        parts = [f"{label} in {len(steps)} ({', '.join(n for n, _ in steps[:SHOWN_OTHERS])}"
                 f"{', ...' if len(steps) > SHOWN_OTHERS else ''}; e.g. {duration(steps[0][1].us)} "
                 f"of {duration(steps[0][1].window_us)})" for label, steps in kinds.items()]
        yield Finding(Code.STEPS_DIFFER, Severity.NOTICE,
                      "other steps differ: " + "; ".join(parts),
                      {"steps_differing": len(found.others)})


def _no_verdict(ctx: FindingContext):
    """The no_verdict finding: why no step got a bound (the device's side of the trace is
    missing, or its host's)."""
    if ctx.profile is None:
        return
    if ctx.profile.analysis.mode == GPU:
        yield from _no_host_side(ctx)
        return
    if ctx.profile.analysis.mode != HOST_ONLY:
        return
    trace = ctx.profile.analysis.trace
    unread = unread_device_categories(trace)
    hint = gpu_job_hint(trace)
    if unread:
        what = ", ".join(f"{n} {cat}" for cat, n in unread.items())
    elif trace.runtime:
        what = "none: runtime calls but no kernels, copies or memsets"
    else:  # a GPU job recorded with the CPU's activities only
        what = (f"none: a GPU job ({hint or 'the trace lists its devices'}) recorded without "
                "its device's activities (add ProfilerActivity.CUDA)")
    yield Finding(Code.NO_VERDICT, Severity.WARNING,
                  f"no verdict: the trace shows a device but none of its activities this tool "
                  f"reads (device events: {what}); only the host side is analysed",
                  {"unread_events": sum(unread.values())})


def _no_host_side(ctx: FindingContext):
    """GPU steps with no bound: mostly idle, and the trace has no host side to say why."""
    blind = [s for s in ctx.profile.steps
             if s.window is not None and s.window_us > 0 and not host_side(s)]
    if not blind:
        return
    idle = sum(s.window.host_wait_us for s in blind)
    window = sum(s.window_us for s in blind)
    yield Finding(Code.NO_VERDICT, Severity.WARNING,
                  f"no verdict: the trace has device activities but no host side ({len(blind)} "
                  f"step(s) with no runtime calls and no launch linked to their "
                  f"{sum(s.n_kernels for s in blind)} activities); the device was idle "
                  f"{duration(idle)} of {duration(window)} ({idle / window:.0%}) and why (the "
                  "host, a sync, another device) cannot be told from this trace",
                  {"steps": len(blind), "idle_us": idle, "window_us": window})


def host_paced(ctx: FindingContext) -> str | None:
    """Where the host sets the steps' time (the primary bound is a host cause), the clause that
    a statement about a kernel's speed must carry: a faster kernel only lengthens the device's
    wait. Advice to make a kernel faster is not given then at all (occupancy, GEMM rates): it
    cannot shorten the step. None where the device sets it, or nothing was judged."""
    if ctx.row is not None:  # a suite row: its one bound
        return ("but the call is overhead-bound: a faster kernel would not shorten it"
                if row_paced_by_host(ctx) else None)
    found = profile_bound(ctx)
    if found is None or found.bound.side == DEVICE:
        return None
    return f"but the step is {verdict_label(found.bound)}: a faster kernel would not shorten it"


EMPTY_DELAY_US, EMPTY_SHARE = 2.0, 0.8  # launched kernels start at once: nothing queued


def queue_runs_empty(ctx: FindingContext) -> str:
    """`; 95% of kernels start as soon as launched: the queue runs empty`, the overhead-bound
    verdict's evidence where the launch delays show it; "" otherwise."""
    delays = [d for s in ctx.profile.steps for d in s.launch_delays_us] if ctx.profile else []
    if not delays:
        return ""
    at_once = sum(d <= EMPTY_DELAY_US for d in delays) / len(delays)
    if at_once < EMPTY_SHARE:
        return ""
    if len(delays) == 1:
        return "; its one kernel starts as soon as it is launched: the queue runs empty"
    return f"; {at_once:.0%} of kernels start as soon as they are launched: the queue runs empty"


# A GPU step that waits for its host: what cuts the host's part, by how many kernels it has.
ADVICE_MIN_KERNELS = 10  # fewer a step: little to fuse or to capture


def overhead_remedy(ctx: FindingContext, kernels_per_step: float) -> str:
    """What cuts an overhead-bound GPU step's host time, said for the program the trace shows:
    a vLLM server captures graphs unless told not to; a compiled one already fuses; ROCm's
    graphs are HIP graphs behind torch's CUDA-graph API."""
    if kernels_per_step < ADVICE_MIN_KERNELS and ctx.row is None:
        few = "one kernel" if kernels_per_step == 1 else f"{kernels_per_step:.3g} kernels"
        return (f"with {few} a step there is little to fuse or capture: the host's own time "
                "(Python, dispatch) is what to cut")
    trace = ctx.profile.analysis.trace if ctx.profile is not None else None
    graphs = ("HIP graphs, through torch's CUDA-graph API" if trace is not None and on_rocm(trace)
              else "CUDA graphs")
    if trace is not None and _runs_vllm(trace):
        return (f"vLLM captures its steps as {graphs} unless run with --enforce-eager (or at "
                "sizes past its capture sizes): capturing this one would cut it")
    if ctx.profile is not None and any(FUSED_KERNEL.search(r["kernel"])
                                       for r in ctx.profile.kernel_rows()):
        return (f"torch.compile already fuses here: cheaper launches ({graphs}: "
                "mode=\"reduce-overhead\") would cut it")
    return (f"fewer kernels (fusion: torch.compile) or cheaper launches ({graphs}: "
            "torch.compile mode=\"reduce-overhead\") would cut it")


def _runs_vllm(trace) -> bool:
    """vLLM's own ops or kernels in the trace (vllm::, _C ops of vLLM's build)."""
    return any("vllm" in e.name.lower() for events in (trace.cpu_ops[:5000], trace.device[:5000])
               for e in events)
