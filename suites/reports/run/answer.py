"""The first screen of a report: does fusion pay off here, and where does the time go.

Three short answers, each from numbers the run measured:
- per variant family against the baseline: in how many cases it is faster, equivalent, slower or
  inconclusive by the intervals of the timing rounds (suites/reports/kit/change.py), with the range of
  its speedups, and for torch.compile the calls it takes to repay its first call;
- one line on whether any fused form pays off at all;
- where the baseline's time goes, case by case, from its primary verdict (overhead-, compute-,
  memory-bound...) and the share of a call that is exposed overhead.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import pandas as pd

from kernels.base import DTYPE_SHORT
from suites.common.numbers import plain, span, times
from suites.common.roofline import why_unjudged
from suites.reports.kit import breakeven as be
from suites.reports.kit.change import SAME_WITHIN, Change, phrase, row_changes
from suites.common.text import cut
from suites.results.columns import AA_CONTROL, Status, profile_unclean
from suites.traces.device_time import on_gpu

REASON_WIDTH = 110  # a not-run reason in the answer: its full text is in the table below

FAMILY_WORDS = {"library": "the fused library call", "compile": "torch.compile",
                "triton": "the hand-written Triton kernels", "eager": "eager variants"}


def case_namer(frame: pd.DataFrame, size_axis: str, params: list[str]):
    """row -> a short name of its case, e.g. `M64 fp32` (square sweeps name the size axis only,
    others every parameter that varies in the run)."""
    present = [p for p in params if p in frame]
    varying = [p for p in present if frame[p].nunique() > 1]
    if size_axis in varying and (frame.groupby(size_axis)[varying].nunique() <= 1).all().all():
        varying = [size_axis]
    dtypes = frame["dtype"].nunique() > 1
    modes = "mode" in frame and frame["mode"].nunique(dropna=True) > 1

    def name(row) -> str:
        if not varying:  # the case id names it all, the dtype and the mode included
            return str(row["case_id"])
        where = "-".join(f"{p}{row[p]}" for p in varying)
        where = f"{where} {DTYPE_SHORT.get(row['dtype'], row['dtype'])}" if dtypes else where
        return f"{where} {row['mode']}" if modes and isinstance(row.get("mode"), str) else where
    return name


def training_lines(frame: pd.DataFrame, findings: pd.DataFrame, baseline: str,
                   name) -> list[str]:
    """The training rows in words (suites/traces/findings/training.py): the backward's share of
    a step for the baseline, where each variant's fusion pays (forward, backward, both), the
    activation memory it saves, and what a compiled variant's partition saves and recomputes;
    nothing for a run without training modes."""
    if "mode" not in frame or not frame["mode"].isin(["fwd", "bwd", "fwd_bwd"]).any():
        return []
    lines = []
    by_code = findings.groupby("code") if not findings.empty else {}
    codes = set(findings["code"]) if not findings.empty else set()
    if "backward_share" in codes:
        share = findings[(findings["code"] == "backward_share")
                         & (findings["variant"] == baseline)]
        if not share.empty:
            values = [_share(s) for s in share["statement"]]
            values = [v for v in values if v is not None]
            if values:
                low, high = min(values), max(values)
                lines.append(f"training: backward is {low:.0%}"
                             + (f"-{high:.0%}" if high - low >= 0.01 else "")
                             + f" of a training step for {baseline} ({len(values)} case(s))")
    for variant, rows in (by_code.get_group("fusion_pays_where").groupby("variant")
                          if "fusion_pays_where" in codes else []):
        wheres = rows["statement"].str.extract(r"pays (in [a-z ]+?):")[0].value_counts()
        lines.append(f"training, {variant}: pays " + ", ".join(
            f"{where} in {n} case(s)" for where, n in wheres.items()))
    # activations_saved is said per row, compile_partition per case (one of its modes).
    for code, each in (("activations_saved", "rows"), ("compile_partition", "cases")):
        if code not in codes:
            continue
        for variant, rows in findings[findings["code"] == code].groupby("variant"):
            first = rows.iloc[0]
            lines.append(f"training, {variant}: {first['statement']} ({first['case_id']}"
                         + (f"; {len(rows)} {each} in all" if len(rows) > 1 else "") + ")")
    return lines


def _share(statement: str) -> float | None:
    found = re.match(r"backward is (\d+)% ", statement)
    return int(found.group(1)) / 100 if found else None


def _count_phrase(rows: pd.DataFrame) -> str:
    """`faster in 2 of 12 rows (1.06x-1.14x), inconclusive in 9 (0.95x-1.09x), noisy in 1`."""
    classes = row_changes(rows)
    counted = []  # (what, how many, figure)
    for cls in Change:
        hit = rows[classes == cls]
        if not hit.empty:
            low, high = hit["speedup"].min(), hit["speedup"].max()
            figure = times(low) if math.isclose(low, high) else span(low, high, "x")
            counted.append((phrase(cls, SAME_WITHIN), len(hit), f" ({figure})"))
    for status, n in rows.loc[classes.isna(), "status"].value_counts().items():
        counted.append(("not paired" if status == Status.OK else str(status), n, ""))
    return ", ".join(f"{what} in {n}{f' of {len(rows)} rows' if i == 0 else ''}{figure}"
                     for i, (what, n, figure) in enumerate(counted))


def _breakeven(rows: pd.DataFrame, frame: pd.DataFrame, baseline: str, name) -> str | None:
    """torch.compile's first call against what it saves per call, at the largest case it ran:
    suites/reports/kit/breakeven.py's one rule (a saving counts only where the compile is
    faster by its interval), as the ladder report states it across runs."""
    table = be.breakeven_table(frame[frame["variant"].isin([*rows["variant"], baseline])]
                               .assign(choice=""), "", baseline)
    measured = be.measured(table)
    if measured.empty:
        return None
    largest = measured.loc[measured["flops"].idxmax()]
    where = name(frame[frame["case_id"] == largest["case_id"]].iloc[0])
    cost = f"its first call ({plain(largest['compile_ms'])} ms)"
    if be.repaid(measured.loc[[largest.name]]).iloc[0]:
        first = f"repays {cost} {largest['verdict']} at {where}"
    else:
        first = f"does not repay {cost} at {where}: not faster per call by its interval"
    return f"{first}; it repays it at {int(be.repaid(measured).sum())} of {len(measured)} cases"


def _graphs(rows: pd.DataFrame) -> str:
    """Per compile variant: the graphs it built over the sweep and its compile time. Each case
    compiles afresh (a fresh dynamo per case, so a shape is specialised statically, where a
    Triton kernel takes any shape): one graph per case, more where the code breaks the graph."""
    if "compile_graphs" not in rows or rows["compile_graphs"].isna().all():
        return ""
    parts = []
    for variant, mine in rows[rows["compile_graphs"].notna()].groupby("variant", sort=False):
        graphs, cases = int(mine["compile_graphs"].sum()), mine["case_id"].nunique()
        breaks = " (graph breaks)" if graphs > cases else ""
        parts.append(f"{variant} built {graphs} graph{'s' * (graphs != 1)} for {cases} "
                     f"shape{'s' * (cases != 1)}{breaks}, "
                     f"{plain(mine['compile_ms'].sum() / 1e3)} s "
                     "of compiling in all")
    return "; " + "; ".join(parts)


def family_lines(frame: pd.DataFrame, baseline: str, name) -> list[str]:
    """One line per variant family other than the baseline's own."""
    lines = []
    base_family = frame.loc[frame["variant"] == baseline, "family"]
    for family, rows in frame[frame["variant"] != baseline].groupby("family", sort=False):
        variants = ", ".join(dict.fromkeys(rows["variant"]))
        paired = rows[(rows["status"] == Status.OK) & rows["speedup"].notna()]
        label = f"{FAMILY_WORDS.get(family, family)} ({variants})"
        if paired.empty:
            reasons = rows.groupby("status")["reason"].first()
            said = "; ".join(f"{status} on {int((rows['status'] == status).sum())} rows: "
                             f"{cut(str(reason), REASON_WIDTH)}"
                             for status, reason in reasons.items())
            lines.append(f"{label}: no speedup measured ({said})")
            continue
        line = f"{label}: {_count_phrase(rows)}"
        if family == "compile":
            repay = _breakeven(rows, frame, baseline, name)
            line += f"; {repay}" if repay else ""
            line += _graphs(rows)
        lines.append(line)
    if base_family.empty:
        lines.append(f"the baseline {baseline} did not run: no speedups")
    return lines


def aa_control_line(frame: pd.DataFrame) -> str | None:
    """What the run's A/A control (timing.aa_control) shows: how far two copies of the baseline
    came apart in this run, case by case; None without one."""
    rows = frame[(frame["variant"] == AA_CONTROL) & (frame["status"] == Status.OK)
                 & frame["speedup"].notna()]
    if rows.empty:
        return None
    apart = (rows["speedup"] - 1).abs()
    outside = rows[(rows["speedup_low"] > 1) | (rows["speedup_high"] < 1)]
    return (f"the run's A/A control ({AA_CONTROL}, a second copy of the baseline): within "
            f"{apart.max():.1%} of it in {len(rows)} case(s); its interval excludes 1 in "
            f"{len(outside)} (about 1 in 20 would by chance)")


def pays_off(frame: pd.DataFrame, baseline: str, name) -> str:
    """Whether any fused form (a library call, torch.compile, a Triton kernel: not another
    eager form, such as attention's in-place naive) is faster than the baseline anywhere."""
    paired = frame[(frame["status"] == Status.OK) & frame["speedup"].notna()
                   & (frame["variant"] != baseline) & (frame["family"] != "eager")]
    if paired.empty:
        return f"Nothing to compare: no variant has a paired speedup against {baseline}."
    faster = paired[row_changes(paired) == Change.FASTER]
    if faster.empty:
        return (f"Fusion does not pay off here: no variant is faster than {baseline} in any case "
                "by its 95% interval.")
    best = faster.loc[faster["speedup"].idxmax()]
    cases = faster["case_id"].nunique()
    return (f"Fusion pays off in {cases} of {frame['case_id'].nunique()} cases; the largest "
            f"gain: {best['variant']} at {name(best)}, {times(best['speedup'])} "
            f"({span(best['speedup_low'], best['speedup_high'])}).")


def bound_word(row, profiled: bool = True) -> str:
    """A row's bound as the answer says it: the one judgement (measurements.csv's
    roofline_bound, suites/common/roofline.py), or why the row has none."""
    bound = row.get("roofline_bound")
    state = row.get("profile_state")
    if profile_unclean(state):
        return f"unjudged (its profile {state.replace('_', ' ')})"
    if isinstance(bound, str) and bound:
        return f"{bound}-bound"
    if not profiled:
        return "not profiled (profile=off)"
    return f"unjudged ({why_unjudged(row.get('flops'), work_us_of(row))})"


def work_us_of(row) -> float:
    """The time a row's throughput and bound are judged by (suites/harness/derived.work_us)."""
    return row.get("kernel_us") if on_gpu(str(row.get("device") or "")) else row.get("mean_us")


def where_time_goes(frame: pd.DataFrame, baseline: str, name, profiled: bool = True) -> str | None:
    """The baseline's bound per case (the row's one bound), as stretches, and its exposed
    overhead at each dtype's smallest and largest case: `eager is overhead-bound at M64 fp32 and
    compute-bound at M128 fp32 to M2048 bf16; exposed overhead 29% of a call at M64 fp32, 0% at
    M2048 fp32`. A run without a profile says its bounds are the roofline model's alone."""
    base = frame[(frame["variant"] == baseline) & (frame["status"] == Status.OK)]
    if base.empty:
        return None
    stretches: list[tuple[str, list]] = []
    for _, row in base.iterrows():
        word = bound_word(row, profiled)
        if stretches and stretches[-1][0] == word:
            stretches[-1][1].append(row)
        else:
            stretches.append((word, [row]))
    if len(stretches) == 1:
        said = f"{stretches[0][0]} in every case"
    else:
        said = " and ".join(f"{word} at {name(rows[0])}" if len(rows) == 1 else
                            f"{word} at {name(rows[0])} to {name(rows[-1])}"
                            for word, rows in stretches)
    if not profiled and any(b.endswith("-bound") for b, _ in stretches):
        said += " (by the roofline model alone: not profiled, profile=off)"
    shares = []
    states = base.get("profile_state", pd.Series(None, index=base.index))
    trusted = base[[not profile_unclean(s) for s in states]]
    for _, rows in trusted.groupby("dtype", sort=False):
        ends = rows.iloc[[0, -1]] if len(rows) > 1 else rows
        shares += [f"{r['exposed_overhead_us'] / r['mean_us']:.0%} at {name(r)}"
                   for _, r in ends.iterrows()
                   if r["mean_us"] and r["exposed_overhead_us"] == r["exposed_overhead_us"]]
    overhead = f"; exposed overhead (host and launch work the device waits on) is " \
               f"{', '.join(shares)} of a call" if shares else ""
    return f"Where the time goes: {baseline} is {said}{overhead}."


@dataclass(frozen=True)
class Answer:
    """The report's first screen as lines: the verdict, one bullet per family (and the A/A
    control, the training lines), where the time goes. report.html, report.md and the console
    say these same lines."""

    verdict: str
    bullets: list[str]
    where: str | None

    def lines(self) -> list[str]:
        return [self.verdict, *(f"- {b}" for b in self.bullets),
                *([self.where] if self.where else [])]


def answer(frame: pd.DataFrame, findings: pd.DataFrame, baseline: str, name,
           profiled: bool = True) -> Answer:
    control = aa_control_line(frame)
    frame = frame[frame["variant"] != AA_CONTROL]  # the run's own A/A: not a way to fuse
    return Answer(pays_off(frame, baseline, name),
                  family_lines(frame, baseline, name) + ([control] if control else [])
                  + training_lines(frame, findings, baseline, name),
                  where_time_goes(frame, baseline, name, profiled))


ANSWER_HEADING = "## The answer"
WARNINGS_HEADING = "## Read with care"


def markdown(title: str, meta: str, said: Answer, warnings: list[str]) -> str:
    """report.md: the answer as text (the console prints its answer section), then what to
    read it with care for; the rest of the report is in report.html."""
    parts = [f"# {title}", "", meta, "", ANSWER_HEADING, "", *said.lines(), ""]
    if warnings:
        parts += [WARNINGS_HEADING, "", *(f"- {w}" for w in warnings), ""]
    parts += ["Plots, tables, findings and traces: report.html in this folder.", ""]
    return "\n".join(parts)


def answer_section(text: str) -> list[str]:
    """The answer's lines of a report.md (what the console prints, and the audit reads)."""
    lines = text.splitlines()
    if ANSWER_HEADING not in lines:
        return []
    start = lines.index(ANSWER_HEADING) + 1
    out = []
    for line in lines[start:]:
        if line.startswith("## ") or line.startswith("Plots, tables"):
            break
        if line.strip():
            out.append(line)
    return out
