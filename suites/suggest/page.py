"""The console's page of a suggestion, read from the rows suggest.csv holds (command.py), so the
page and the file say the same numbers: the ranked groups, what could not be built, the time no
group holds, the replays (each stated time with its interval and clean rounds, or why none is
stated) and the share the mapped groups cover."""
from __future__ import annotations

import math

import pandas as pd

from suites.suggest import verdict as judged
from suites.traces.suggest.groups import Group

SHOWN = 25


def _ranked(frame: pd.DataFrame) -> list[str]:
    shown = frame.head(SHOWN).copy()
    shown["share"] = shown["share"].map(lambda x: f"{x:.1%}")
    shown["why"] = shown["why"].str.slice(0, 70)
    lines = [shown[["group", "us_per_step", "share", "calls_per_step", "ops", "why"]]
             .to_string(index=False, float_format=lambda x: f"{x:.4g}")]
    if len(frame) > SHOWN:
        lines.append(f"  ... and {len(frame) - SHOWN} more groups (suggest.csv)")
    return lines


def replay_line(row) -> str:
    """One group's replay: its time, interval and clean rounds beside the trace's, the verdict
    and a cause with its numbers; or why no time is stated."""
    head = f"  {row['group']}: {row['replay_variant']}"
    if row["replay_verdict"] not in judged.STATED:
        return f"{head}: {row['replay_note']}"
    return (f"{head} {row['replay_us']:.4g} us a call alone (95% {row['replay_low_us']:.4g} to "
            f"{row['replay_high_us']:.4g}, {row['replay_rounds']:g} clean rounds, "
            f"{row['replay_rounds_dropped']:g} dropped), {row['trace_us_per_instance']:.4g} us "
            f"in the trace: x{row['trace_over_replay']:.2f}, {row['replay_note']}")


def replay_lines(frame: pd.DataFrame) -> list[str]:
    rows = [row for _, row in frame.iterrows()
            if isinstance(row["replay_variant"], str) and row["replay_variant"]]
    if not rows:
        return []
    notes = {row["replay_note"] for row in rows}
    if all(row["replay_verdict"] == judged.NOT_REPLAYED for row in rows) and len(notes) == 1:
        return [f"replay: {notes.pop()}"]  # e.g. a GPU trace read on a CPU
    threads = max(row["replay_threads"] for row in rows)
    return [f"replay (each group alone, as the trace ran it, timed in interleaved rounds on "
            f"{threads:g} thread(s), the contended ones dropped; trace / replay within "
            f"{judged.APART:g}x either way at both ends of its 95% interval reproduces):",
            *(replay_line(row) for row in rows)]


def lines(groups: list[Group], frame: pd.DataFrame, info: dict, steps: int) -> list[str]:
    total = info["total_device_us"]
    mapped = [g for g in groups if g.mapped]
    covered = sum(g.device_us for g in mapped)
    what = "device" if info["device"] == "cuda" else "CPU op"
    out = ["", f"--suggest: {len(groups)} op groups over {steps} step(s), ranked by {what} "
               f"time per step ({info['mode']}: "
               + ("a backward pass is in the trace)" if info["mode"] != "fwd_nograd"
                  else "forward only)")]
    out += _ranked(frame)
    blocked = [g for g in groups if g.suite and g.problem]
    if blocked:
        out.append("mapped to a block but not buildable:")
        out += [f"  {g.label()}: {g.problem}" for g in blocked[:10]]
    unattributed = total - info["top_level_us"]
    if unattributed > 0.01 * total:
        out.append(f"{unattributed / steps / 1e3:.3g} ms of {what} time per step "
                   f"({unattributed / total:.0%}) has no launch in the trace (launched before "
                   "the profiler started): in no group")
    out += replay_lines(frame)
    out.append(f"covered: {len(mapped)} group(s) of {len(groups)}, "
               f"{covered / steps / 1e3:.3g} ms of {total / steps / 1e3:.3g} ms {what} time "
               f"per step ({covered / total:.0%})" if total and not math.isnan(total)
               else "covered: nothing timed")
    return out
