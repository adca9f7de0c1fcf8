"""The step a suggested sweep predicts: for a sweep made by `python -m suites.analyze TRACE
--suggest` (suites/traces/suggest/), what each variant would save per step of the traced model
if it replaced what the trace ran, group by group, and in total.

Each run of such a sweep carries the trace's figures in its config (`suggested`: per group its
case, time and calls per step in the trace, and the variant that runs what the trace ran, its
`replay`; `_trace`: the step's whole time and what the mapped groups cover). Per group and
variant v, with r the replay variant, both timed in the same run and rounds:

    v / r = speedup_r / speedup_v       (each speedup against the block's baseline, paired)
    saved = the group's trace time per step x (1 - v / r)

with the interval from the speedups' 95% intervals (the two ends taken together, so it is
wider than a joint interval would be: the bound holds for both).

That reading assumes the variant would run in the model as much slower (or faster) than alone
as the trace's op did. Where the sweep ran on the trace's device at its shapes, the trace's op
can be set beside its own time alone (the replay variant's row): a model op that ran k times
its time alone may have paid for something the variant would not pay (page faults on its big
temporaries, the profiler's cost per recorded op: gone with the ops a fused variant does not
run) or for something it would (caches shared with the model's other work). So the interval
also holds the other reading, the variant at its time alone:

    saved_alone = the group's trace time per step - calls per step x the variant's time alone

and says which end came from it (`reading`). The first screen takes each
group's best variant (its largest saving, one that is correct) and sums: "fusing these 4 op
groups would save 3.1 ms of 45.6 ms per step (7%), 2.6-3.5 ms; 27.4 ms (60%) is in ops no
block covers". The sum of the ends is the total's interval: conservative, not a joint one.
"""
from __future__ import annotations

import math

import pandas as pd

from kernels.base import Case
from suites.results.columns import Status
from suites.traces.suggest.experiment import TRACE_KEY


def _suggested(run) -> dict | None:
    config = (run.state or {}).get("config") or {}
    table = config.get("suggested")
    return table if isinstance(table, dict) and TRACE_KEY in table else None


def _speedup(row) -> tuple[float, float, float]:
    s, lo, hi = (float(row.get(k, math.nan)) for k in ("speedup", "speedup_low",
                                                         "speedup_high"))
    return s, (lo if lo == lo else s), (hi if hi == hi else s)


def _as_alone(saved: dict, group: dict, replay_us: float, variant_us: tuple) -> dict:
    """The trace's op time over its time alone (k), and `saved`'s interval widened to hold the
    variant at its time alone (mean, low, high us a call), where the sweep is the trace's
    device and shapes (else k is NaN: the trace's clock and the sweep's are not one)."""
    same = (group["scale"] == 1 and bool(group["trace_device"]) and
            str(group["trace_device"]).split(":")[0] == str(group["run_device"]).split(":")[0])
    calls, us = float(group["calls_per_step"]), group["trace_us_per_step"]
    if not same or not replay_us > 0 or not calls > 0:
        return {"trace_over_alone": math.nan, "saved_alone_us": math.nan, "reading": "ratio"}
    v_us, v_lo, v_hi = (float(x) for x in variant_us)
    v_lo, v_hi = (v_lo if v_lo == v_lo else v_us), (v_hi if v_hi == v_hi else v_us)
    low_alone, high_alone = us - calls * v_hi, us - calls * v_lo
    widened = low_alone < saved["saved_low"] or high_alone > saved["saved_high"]
    saved["saved_low"] = min(saved["saved_low"], low_alone)
    saved["saved_high"] = max(saved["saved_high"], high_alone)
    return {"trace_over_alone": us / calls / replay_us, "saved_alone_us": us - calls * v_us,
            "reading": "ratio and alone" if widened else "ratio"}


def prediction_table(collection) -> pd.DataFrame | None:
    """One row per (group, variant) of every suggested run; None for a collection without
    one."""
    rows = collection.rows
    out = []
    for run in collection.runs:
        table = _suggested(run)
        if table is None:
            continue
        trace = table[TRACE_KEY]
        mine = rows[rows["run"] == str(run.path)]
        if not len(mine):
            continue
        suite = str(mine["suite"].iloc[0])
        for group in (table.get(suite) or {}).get("groups", []):
            case = Case.make(suite, group["values"], group["dtype"], "cpu",
                             mode=trace.get("mode", "fwd_nograd"))
            rows_of = mine[mine["case_id"] == case.id]
            replay = group.get("replay") or collection.suites[suite].baseline
            base = collection.suites[suite].baseline
            r = rows_of[rows_of["variant"] == replay]
            r_ok = len(r) and r["status"].iloc[0] == Status.OK
            us = float(group["device_us_per_step"])
            common = {
                "suite": suite, "case_id": case.id, "group": group.get("ops", ""),
                "replay": replay, "trace_us_per_step": us,
                "calls_per_step": group["calls_per_step"],
                "step_us": float(trace["total_us_per_step"]),
                "covered_us": float(trace["covered_us_per_step"]),
                "trace": trace.get("trace", ""), "trace_device": trace.get("device", ""),
                "run_device": run.env.get("device", ""),
                "scale": float(trace.get("scale", 1.0))}
            sr, sr_lo, sr_hi = ((1.0, 1.0, 1.0) if replay == base or not r_ok
                                else _speedup(r.iloc[0]))
            for v in rows_of.itertuples():
                if v.variant == replay:
                    continue
                row = {**common, "variant": v.variant, "family": v.family}
                if not r_ok or v.status != Status.OK:  # said, not dropped
                    row["note"] = (f"{replay} {r['status'].iloc[0] if len(r) else 'absent'}"
                                   if not r_ok else f"{v.variant} {v.status}")
                    out.append(row)
                    continue
                sv, sv_lo, sv_hi = (1.0, 1.0, 1.0) if v.variant == base else _speedup(
                    v._asdict())
                ratio, low, high = sr / sv, sr_lo / sv_hi, sr_hi / sv_lo
                saved = {"saved_us_per_step": us * (1 - ratio), "saved_low": us * (1 - high),
                         "saved_high": us * (1 - low)}
                alone = _as_alone(saved, common, float(r["mean_us"].iloc[0]),
                                  (v.mean_us, v.mean_low_us, v.mean_high_us))
                out.append({**row, "time_ratio": ratio, "time_ratio_low": low,
                            "time_ratio_high": high, **saved, **alone, "note": ""})
    if not out:
        return None
    frame = pd.DataFrame(out)
    # Every row noisy: the columns still exist.
    for column in ("time_ratio", "time_ratio_low", "time_ratio_high", "saved_us_per_step",
                   "saved_low", "saved_high", "trace_over_alone", "saved_alone_us"):
        if column not in frame:
            frame[column] = math.nan
    if "reading" not in frame:
        frame["reading"] = ""
    return frame


def best_per_group(table: pd.DataFrame) -> pd.DataFrame:
    """Each group's variant that saves the most (point estimate), of those timed."""
    timed = table.dropna(subset=["saved_us_per_step"])
    order = timed.sort_values("saved_us_per_step", ascending=False)
    return order.drop_duplicates(["suite", "case_id"]).reset_index(drop=True)


def unpredicted(table: pd.DataFrame) -> list[str]:
    """Groups with no timed pair: why (the replay's or every variant's row not ok)."""
    timed = set(zip(*[table.dropna(subset=["saved_us_per_step"])[c]
                      for c in ("suite", "case_id")]))
    out = []
    for (suite, case_id), rows in table.groupby(["suite", "case_id"], sort=False):
        if (suite, case_id) not in timed:
            notes = ", ".join(dict.fromkeys(n for n in rows["note"] if n))
            out.append(f"{suite} {case_id}: no prediction ({notes or 'no other variant'})")
    return out


def _ms(us: float) -> str:
    return f"{us / 1e3:.3g} ms"


def headline(table: pd.DataFrame) -> str:
    """The first screen's answer for the trace's step."""
    best = best_per_group(table)
    if not len(best):
        return "no op group of the trace has a timed prediction (their rows are not ok)"
    # A group pays where its saving's interval is above zero (a point estimate above zero with
    # an interval that holds zero is inconclusive: said, not summed).
    floor = best["saved_low"].where(best["saved_low"].notna(), best["saved_us_per_step"])
    paying = best[floor > 0]
    unsure = int(((best["saved_us_per_step"] > 0) & ~(floor > 0)).sum())
    step = float(table["step_us"].iloc[0])
    out_of_reach = step - float(table["covered_us"].iloc[0])
    saved, low, high = (float(paying[c].sum()) for c in ("saved_us_per_step", "saved_low",
                                                           "saved_high"))
    reach = (f"; {_ms(out_of_reach)} ({out_of_reach / step:.0%}) of the step is in ops no block "
             "covers" if step > 0 else "")
    unsure_text = (f"; {unsure} more group(s) may save a little (their intervals hold zero)"
                   if unsure else "")
    if not len(paying):
        return (f"no variant is surely faster than what the trace ran in any of its "
                f"{len(best)} op group(s){unsure_text}{reach}")
    return (f"fusing these {len(paying)} op group(s) would save {_ms(saved)} of {_ms(step)} per "
            f"step ({saved / step:.0%}), {_ms(low)} to {_ms(high)}{unsure_text}{reach}")


def caveat(table: pd.DataFrame) -> str:
    """Where the sweep is not the trace's machine or shapes, what the prediction then is."""
    first = table.iloc[0]
    parts = []
    if first["trace_device"] and first["run_device"] and \
            first["trace_device"] != first["run_device"]:
        parts.append(f"the trace ran on {first['trace_device']}, the sweep on "
                     f"{first['run_device']}")
    if first["scale"] > 1:
        parts.append(f"the sweep's shapes are {first['scale']:g}x smaller along a linear axis")
    if not parts:
        return ""
    return ("; ".join(parts) + ": the savings apply the sweep's time ratios to the trace's "
            "times, a check of the loop rather than a prediction for the traced machine")


def lines(table: pd.DataFrame) -> list[str]:
    """Per group: its best variant and what it saves per step (after the caveat, if any)."""
    out = [c for c in [caveat(table)] if c]
    for g in best_per_group(table).itertuples():
        if not g.saved_us_per_step > 0:
            out.append(f"{g.suite} {g.case_id} ({g.group}): {g.replay}, what the trace ran, is "
                       f"the fastest timed (the next, {g.variant}, takes x{g.time_ratio:.3g} "
                       "its time)")
            continue
        what = (f"{g.variant} instead of {g.replay}: x{g.time_ratio:.3g} the time "
                f"({g.time_ratio_low:.3g}-{g.time_ratio_high:.3g}), saves "
                f"{_ms(g.saved_us_per_step)} of its {_ms(g.trace_us_per_step)} per step "
                f"({_ms(g.saved_low)} to {_ms(g.saved_high)})")
        if g.reading == "ratio and alone":
            what += (f"; the model's op ran x{g.trace_over_alone:.3g} its time alone, so the "
                     f"interval also holds {g.variant} at its time alone "
                     f"({_ms(g.saved_alone_us)} saved)")
        out.append(f"{g.suite} {g.case_id} ({g.group}): {what}")
    return out + unpredicted(table)


INTRO = ("Each op group of the trace that a block covers, with each variant timed at its shape: "
         "the time it takes against the variant that runs what the trace ran (paired, in the "
         "same rounds), and what it would save per step of the traced model if it replaced "
         "it; the interval's ends from the two speedups' 95% intervals.")
COLUMNS = {"suite": "block", "case_id": "case", "variant": "variant", "replay": "instead of",
           "trace_us_per_step": "trace us/step", "time_ratio": "time x",
           "saved_us_per_step": "saved us/step", "saved_low": "low", "saved_high": "high"}
