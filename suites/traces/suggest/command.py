"""`python -m suites.analyze TRACE --suggest [--out DIR]`: from a model's trace to a sweep at its
shapes. After the diagnosis, the trace's top-level op calls are grouped by (op, shapes, dtypes),
matched to fusebench's blocks (patterns.py), ranked by time per step, and written out:

- suggest.csv: every group, mapped or not, with its time and calls per step, its share, the
  block and shape it maps to, or why it does not map;
- experiment/suggested.yaml: the Hydra experiment that sweeps the mapped groups
  (experiment.py);
- printed: the ranked table, what could not be mapped and why, the share of the trace's device
  time the mapped groups cover, and, as the last line, the command that runs the sweep.

A trace without shapes (recorded without `record_shapes=True`) gets one line saying so, after
its diagnosis; nothing is written.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from kernels import registry
from suites.common.errors import ConfigError
from suites.traces.device_time import on_gpu, trace_mode
from suites.traces.events import Trace
from suites.traces.gpu_timeline import kind
from suites.traces.suggest import experiment
from suites.traces.suggest.groups import (Group, group_matches, group_outside, group_unmapped,
                                          ranked)
from suites.traces.suggest.op_calls import read_op_calls
from suites.traces.suggest.patterns import match_thread
from suites.traces.suggest.replay import Replay, replay_all

NO_SHAPES = ("--suggest: this trace has no input shapes (it was recorded without "
             "record_shapes=True): profile again with torch.profiler.profile(..., "
             "record_shapes=True) to get a sweep at its shapes")
SHOWN = 25


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


def _frame(groups: list[Group], steps: int, total: float, replays: dict) -> pd.DataFrame:
    none = Replay()
    return pd.DataFrame([{
        "group": g.label(), "block": g.suite or "-",
        "shape": ", ".join(f"{k}={v}" for k, v in g.values.items()) or g.shapes,
        "dtype": g.dtype, "us_per_step": g.device_us / steps,
        "share": g.device_us / total if total else float("nan"),
        "calls_per_step": g.instances / steps, "host_us_per_step": g.host_us / steps,
        "ops": g.ops_text(), "mapped": g.mapped,
        "why": g.problem or g.reason or "; ".join(g.notes),
        "replay_variant": g.replay if id(g) in replays else "",
        "trace_us_per_instance": replays.get(id(g), none).trace_us,
        "replay_us": replays.get(id(g), none).us,
        "trace_over_replay": replays.get(id(g), none).ratio,
        "replay_note": replays.get(id(g), none).note} for g in groups])


def _replay_lines(groups: list[Group], replays: dict) -> list[str]:
    """The replay beside the trace, per mapped group, and what a difference says."""
    rows = [(g, replays[id(g)]) for g in groups if id(g) in replays]
    if not rows:
        return []
    notes = {r.note for _, r in rows}
    if all(r.us != r.us for _, r in rows) and len(notes) == 1:
        return [f"replay: {notes.pop()}"]  # e.g. a GPU trace read on a CPU
    lines = ["replay (each group alone, as the trace ran it; trace / replay past 1.5x is a "
             "finding):"]
    for g, r in rows:
        if r.us == r.us:
            lines.append(f"  {g.label()}: {g.replay} {r.us:.4g} us a call alone, "
                         f"{r.trace_us:.4g} us in the trace (x{r.ratio:.2f})"
                         + (f": {r.note.split(': ', 1)[1]}" if r.note else ""))
        else:
            lines.append(f"  {g.label()}: {r.note}")
    return lines


def communicates(trace: Trace) -> bool:
    """Whether the trace holds communication kernels (the GPU timeline's own rule)."""
    return any(kind(a) == "communication" for a in trace.device)


def run(trace: Trace, steps: int, out: Path | None, replay: bool = True,
        scale: float = 1.0) -> list[str]:
    """The suggestion's console lines; its files under `out` (default: ./suggested/<trace>)."""
    found = suggestions(trace)
    if found is None:
        return ["", NO_SHAPES]
    groups, info = found
    steps = max(1, steps)
    total = info["total_device_us"]
    replays = (replay_all(groups, info["device"], communicates(trace), scale) if replay
               else {})
    if not groups:
        return ["", "--suggest: no op call of the trace caused device work: nothing to group"]
    frame = _frame(groups, steps, total, replays)
    mapped = [g for g in groups if g.mapped]
    covered = sum(g.device_us for g in mapped)
    what = "device" if info["device"] == "cuda" else "CPU op"
    lines = ["", f"--suggest: {len(groups)} op groups over {steps} step(s), ranked by {what} "
                 f"time per step ({info['mode']}: "
                 + ("a backward pass is in the trace)" if info["mode"] != "fwd_nograd"
                    else "forward only)")]
    shown = frame.head(SHOWN).copy()
    shown["share"] = shown["share"].map(lambda x: f"{x:.1%}")
    shown["why"] = shown["why"].str.slice(0, 70)
    lines.append(shown[["group", "us_per_step", "share", "calls_per_step", "ops", "why"]]
                 .to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    if len(frame) > SHOWN:
        lines.append(f"  ... and {len(frame) - SHOWN} more groups (suggest.csv)")
    blocked = [g for g in groups if g.suite and g.problem]
    if blocked:
        lines.append("mapped to a block but not buildable:")
        lines += [f"  {g.label()}: {g.problem}" for g in blocked[:10]]
    unattributed = total - info["top_level_us"]
    if unattributed > 0.01 * total:
        lines.append(f"{unattributed / steps / 1e3:.3g} ms of {what} time per step "
                     f"({unattributed / total:.0%}) has no launch in the trace (launched before "
                     "the profiler started): in no group")
    lines += _replay_lines(groups, replays)
    lines.append(f"covered: {len(mapped)} group(s) of {len(groups)}, "
                 f"{covered / steps / 1e3:.3g} ms of {total / steps / 1e3:.3g} ms {what} time "
                 f"per step ({covered / total:.0%})" if total else "covered: nothing timed")
    if out is None:  # the working folder: a trace's own folder may be read-only
        out = Path("suggested") / Path(trace.path).name.split(".")[0]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot make the folder ({exc.strerror})") from None
    frame.to_csv(out / "suggest.csv", index=False)
    if not mapped:
        lines.append(f"no group maps to a block: nothing to sweep (suggest.csv: {out})")
        return lines
    trace_info = {"trace": str(trace.path), "steps": steps, "device": info["device"],
                  "mode": info["mode"], "total_us_per_step": round(total / steps, 3),
                  "covered_us_per_step": round(covered / steps, 3),
                  **({"scale": scale} if scale > 1 else {})}
    path = experiment.write(out, groups, info["mode"], steps, trace_info, scale)
    lines += [f"written: {out / 'suggest.csv'}, {path}",
              experiment.command_line(out)]
    return lines
