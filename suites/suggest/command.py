"""`python -m suites.analyze TRACE --suggest [--out DIR]`: from a model's trace to a sweep at its
shapes. After the diagnosis, the trace's groups (suites/traces/suggest/) are replayed alone
(replay.py) and written out:

- suggest.csv: every group, mapped or not, with its time and calls per step, its share, the
  block and shape it maps to, or why it does not map; the replay's time, interval, verdict and
  cause, each cause with its evidence in the same row (verdict.py);
- replay_rounds.csv: every share of every replay round, with its state (clean, contended, ...)
  and figure: what each stated replay time rests on;
- experiment/suggested.yaml: the Hydra experiment that sweeps the mapped groups
  (suites/traces/suggest/experiment.py);
- printed (page.py): the ranked table, what could not be mapped and why, the replays, the share
  of the trace's time the mapped groups cover, and, as the last line, the command that runs the
  sweep.

A trace without shapes (recorded without `record_shapes=True`) gets one line saying so, after
its diagnosis; nothing is written. audit.py checks a folder this writes.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from suites.common.audit import audit_safely
from suites.common.errors import ConfigError
from suites.suggest import page
from suites.suggest.audit import audit
from suites.suggest.files import ROUNDS, TABLE
from suites.suggest.replay import Replay, figure, replay_all
from suites.traces.events import Trace
from suites.traces.suggest import experiment
from suites.traces.suggest.groups import Group
from suites.traces.suggest.suggestions import NO_SHAPES, suggestions



def _frame(groups: list[Group], steps: int, total: float, replays: dict) -> pd.DataFrame:
    blank = {k: None for k in Replay("", float("nan")).row()}
    return pd.DataFrame([{
        "group": g.label(), "block": g.suite or "-",
        "shape": ", ".join(f"{k}={v}" for k, v in g.values.items()) or g.shapes,
        "dtype": g.dtype, "us_per_step": g.device_us / steps,
        "share": g.device_us / total if total else float("nan"),
        "calls_per_step": g.instances / steps, "host_us_per_step": g.host_us / steps,
        "ops": g.ops_text(), "mapped": g.mapped,
        "why": g.problem or g.reason or "; ".join(g.notes),
        **(replays[id(g)].row() if id(g) in replays else blank)} for g in groups])


def _rounds(groups: list[Group], replays: dict, device: str) -> pd.DataFrame:
    """Every judged share of the replays' rounds, by group."""
    return pd.DataFrame([{
        "group": g.label(), "round": s.round, "position": s.position, "state": s.state,
        "reason": s.reason, "figure_us": figure(s, device), "samples": len(s.samples_us),
        "calls_per_sample": s.calls_per_sample, "wait_frac": s.load.wait_frac,
        "others_cores": s.load.others_cores}
        for g in groups if id(g) in replays for s in replays[id(g)].slots],
        columns=["group", "round", "position", "state", "reason", "figure_us", "samples",
                 "calls_per_sample", "wait_frac", "others_cores"])


def _folder(out: Path | None, trace: Trace) -> Path:
    if out is None:  # the working folder: a trace's own folder may be read-only
        out = Path("suggested") / Path(trace.path).name.split(".")[0]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot make the folder ({exc.strerror})") from None
    return out


def run(trace: Trace, steps: int, out: Path | None, replay: bool = True,
        scale: float = 1.0) -> list[str]:
    """The suggestion's console lines; its files under `out` (default: ./suggested/<trace>)."""
    found = suggestions(trace)
    if found is None:
        return ["", NO_SHAPES]
    groups, info = found
    if not groups:
        return ["", "--suggest: no op call of the trace caused device work: nothing to group"]
    steps = max(1, steps)
    total = info["total_device_us"]
    replays = replay_all(groups, info["device"], scale) if replay else {}
    frame = _frame(groups, steps, total, replays)
    lines = page.lines(groups, frame, info, steps)
    out = _folder(out, trace)
    frame.to_csv(out / TABLE, index=False)
    written = [out / TABLE]
    if any(r.slots for r in replays.values()):
        _rounds(groups, replays, info["device"]).to_csv(out / ROUNDS, index=False)
        written.append(out / ROUNDS)
    mapped = [g for g in groups if g.mapped]
    if not mapped:
        lines.append(f"no group maps to a block: nothing to sweep ({TABLE}: {out})")
        return lines
    covered = sum(g.device_us for g in mapped)
    trace_info = {"trace": str(trace.path), "steps": steps, "device": info["device"],
                  "mode": info["mode"], "total_us_per_step": round(total / steps, 3),
                  "covered_us_per_step": round(covered / steps, 3),
                  **({"scale": scale} if scale > 1 else {})}
    written.append(experiment.write(out, groups, info["mode"], steps, trace_info, scale))
    # Every statement of the folder against its numbers (audit.py); the command stays last.
    lines += [*audit_safely(audit, out, "suggest").lines(),
              f"written: {', '.join(str(p) for p in written)}", experiment.command_line(out)]
    return lines
