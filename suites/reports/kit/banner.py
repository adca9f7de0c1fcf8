"""The machine-state banner at the top of report.html and ladder.html: whatever makes a number in
the page less than a clean measurement, said before any number is read. Empty on a clean run."""
from __future__ import annotations

import html

import pandas as pd

from suites.results.columns import Status, profile_unclean
from suites.results.journal import COMPLETE, RUNNING, still_running

CSS = (".banner{background:#fff4d6;border:1px solid #e0b84a;padding:.5em 1em;margin:1em 0}"
       ".banner ul{margin:.2em 0}")


def rounds_line(summary: dict | None) -> str | None:
    """`12 of 180 timing round shares were not clean (8 contended, 4 stalled) ...`."""
    if not summary:
        return None
    states = dict(summary.get("states") or {})
    clean = states.pop("clean", 0)
    bad = sum(states.values())
    remeasured = summary.get("remeasured_cases") or []
    if not bad and not remeasured:
        return None
    kinds = ", ".join(f"{n} {state}" for state, n in sorted(states.items(), key=lambda kv: -kv[1]))
    parts = []
    if bad:
        parts.append(f"{bad} of {bad + clean} timing rounds (one variant's share each) were not "
                     f"clean ({kinds}) and were left out of the ok rows' figures")
    if remeasured:  # its first rounds were replaced, so they need not be among the bad ones
        parts.append(f"{len(remeasured)} case(s) were re-measured later in the sweep, their "
                     f"first rounds too few clean ({', '.join(remeasured[:6])}"
                     f"{', ...' if len(remeasured) > 6 else ''})")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


# Other processes' cores, on average over a run's timing shares, from which the banner says so.
BUSY_NEIGHBOURS = 0.5


def neighbours_line(summary: dict | None) -> str | None:
    """`other processes kept 1.1 cores busy on average while the rounds ran ...`, or None."""
    others = (summary or {}).get("others_cores_mean")
    if others is None or others < BUSY_NEIGHBOURS:
        return None
    return (f"other processes kept {others:.1f} cores busy on average while the rounds ran: "
            "within what the rounds allow (the core the timing leaves free), but a neighbour "
            "there can still slow the timed calls (two runs of suite=linear on a 2-core VM came "
            "2x apart on a 20 us call that way); compare this run with one from a quiet machine "
            "with care.")


def state_line(folder, state: dict | None) -> str | None:
    """`run X is incomplete: interrupted (SIGINT after 12 of 32 rows)`; None when complete, or
    when there is no run.json to say (the reader's problems name that)."""
    if not state or state.get("state") == COMPLETE:
        return None
    done, planned = state.get("done", "?"), state.get("planned", "?")
    what = state.get("state", "?")
    if what == RUNNING and not still_running(state):
        what = "stopped without a word (killed, or the machine went down)"
    elif what == RUNNING:
        what = "still running"
    reason = f": {state['reason']}" if state.get("reason") else ""
    return (f"run {folder} is incomplete, {what}{reason}; {done} of its {planned} planned rows "
            "were done (a row the run was writing when it was killed may be there too).")


def banner_lines(envs: list[dict], frame: pd.DataFrame, states=()) -> list[str]:
    """What the banner says for the runs behind a page (one run for report.html); `states`:
    (folder, run.json) of each run."""
    lines = [line for folder, state in states if (line := state_line(folder, state))]
    lines += list(dict.fromkeys(e["warning"] for e in envs if e.get("warning")))
    lines += list(dict.fromkeys(line for e in envs if (line := rounds_line(e.get("rounds")))))
    lines += list(dict.fromkeys(line for e in envs
                                if (line := neighbours_line(e.get("rounds")))))
    noisy = frame[frame["status"] == Status.NOISY]
    if len(noisy):
        lines.append(f"{len(noisy)} row(s) are noisy: too few clean timing rounds, so they are not "
                     "shown as results (the table of rows not shown says why).")
    if "profile_state" in frame:
        marked = frame[(frame["status"] == Status.OK)
                       & frame["profile_state"].map(profile_unclean)]
        if len(marked):
            kinds = ", ".join(f"{n} {state.replace('_', ' ')}" for state, n in
                              marked["profile_state"].value_counts().items())
            lines.append(f"{len(marked)} row(s) have a profile that was not clean after its "
                         f"takes ({kinds}): their profile figures (host us, device us, exposed "
                         "overhead, kernels) are marked and state no bound.")
    if "pct_peak" in frame:
        above = frame[(frame["status"] == Status.OK) & (frame["pct_peak"] > 100)]
        if len(above):
            lines.append(f"{len(above)} row(s) ran above 100% of the measured roofline (up to "
                         f"{above['pct_peak'].max():.1f}%): the peak probe read low or the model "
                         "undercounts; their % roofline is flagged, not an efficiency.")
    return lines


SHOWN = 3  # banner lines shown at once; the rest one click away, so the answer stays on screen


def banner_html(lines: list[str]) -> str:
    if not lines:
        return ""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines[:SHOWN])
    more = ""
    if len(lines) > SHOWN:
        rest = "".join(f"<li>{html.escape(line)}</li>" for line in lines[SHOWN:])
        more = (f"<details><summary>{len(lines) - SHOWN} more</summary><ul>{rest}</ul>"
                "</details>")
    return f"<div class='banner'><strong>Read with care</strong><ul>{items}</ul>{more}</div>"
