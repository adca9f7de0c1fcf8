"""The report's findings in plain words: per dtype and size, what bounds the baseline, what the
other variants changed (fusion, kernels per call, the memory traffic fusion avoids) and which
one was fastest."""
from __future__ import annotations


import pandas as pd

from suites.traces.findings.codes import BOUND_CODES, CHANGE_CODES
from suites.common.numbers import plain, span, times
from suites.common.roofline import why_unjudged
from suites.results.columns import AA_CONTROL, Status, profile_unclean
from suites.reports.run.answer import work_us_of


def _statement(findings: pd.DataFrame, case_id: str, variant: str, codes) -> str | None:
    hits = findings[(findings["case_id"] == case_id) & (findings["variant"] == variant)
                    & findings["code"].isin(codes)]
    return hits["statement"].iloc[0] if len(hits) else None


def _fastest(rows: pd.DataFrame) -> str:
    rows = rows[rows["variant"] != AA_CONTROL]  # the baseline again: never "the fastest"
    ok = rows[(rows["status"] == Status.OK) & rows["mean_us"].notna()]
    noisy = int((rows["status"] == Status.NOISY).sum())
    if ok.empty:
        return f"no clean measurement: {noisy} variant(s) noisy" if noisy else "no variant ran"
    best = ok.loc[ok["mean_us"].idxmin()]
    if pd.isna(best.get("speedup")):  # no ok baseline, or no round both were clean in
        return f"fastest: {best['variant']} at {plain(best['mean_us'], 4)} us (no paired speedup)"
    if best.get("speedup_low") == best.get("speedup_high") == best["speedup"] == 1:
        # The baseline against itself: no interval to give (its 1-1 is no measurement).
        return (f"fastest: {best['variant']} at {plain(best['mean_us'], 4)} us, the baseline "
                "(no other variant was faster per call)")
    interval = ("" if pd.isna(best.get("speedup_low")) else
                f", 95% interval {span(best['speedup_low'], best['speedup_high'])}")
    return (f"fastest: {best['variant']} at {plain(best['mean_us'], 4)} us "
            f"({times(best['speedup'])} the "
            f"baseline, paired per round{interval})")


def _traffic(rows: pd.DataFrame, baseline: str) -> str | None:
    """The bytes each form moves by the op's model (kernels/<op>.py), against the baseline's."""
    modelled = rows[rows["bytes_moved"].notna()].set_index("variant")
    if baseline not in modelled.index or len(modelled) < 2:
        return None
    base = modelled.loc[baseline, "bytes_moved"]
    parts = []
    for variant, moved in modelled["bytes_moved"].items():
        if variant != baseline:
            parts.append(f"{variant} {plain(moved / 1e6)} MB ({1 - moved / base:.0%} less)")
    return (f"memory traffic by the model: {baseline} moves {plain(base / 1e6)} MB per call; "
            + ", ".join(parts))


def case_lines(frame: pd.DataFrame, findings: pd.DataFrame, baseline: str,
               said=frozenset()) -> list[tuple[str, list[str]]]:
    """[(case heading, [sentences])] in sweep order; `said`: the (case_id, variant, code) of
    findings already stated across cases (shared_findings.py), left out here."""
    out = []
    for case_id, rows in frame.groupby("case_id", sort=False):
        lines = []
        bound = _statement(findings, case_id, baseline, BOUND_CODES)
        base_status = rows.loc[rows["variant"] == baseline, "status"]
        shared_bound = any((case_id, baseline, str(c)) in said for c in BOUND_CODES)
        if bound and not shared_bound:
            lines.append(f"{baseline}: {bound}")
        elif len(base_status) and base_status.iloc[0] == Status.NOISY:
            lines.append(f"{baseline}: noisy (too few clean timing rounds): nothing is stated "
                         "from a contended machine")
        elif not bound:
            base = rows[rows["variant"] == baseline]
            lines.append(f"{baseline}: {_no_bound(base.iloc[0]) if len(base) else 'did not run'}")
        for variant in rows["variant"]:
            if variant == baseline:
                continue
            changes = [s for code in CHANGE_CODES if (case_id, variant, str(code)) not in said
                       and (s := _statement(findings, case_id, variant, (code,)))]
            if changes:
                lines.append(f"{variant}: " + "; ".join(changes))
        traffic = _traffic(rows, baseline)
        if traffic:
            lines.append(traffic)
        lines.append(_fastest(rows))
        out.append((case_id, lines))
    return out


def headline(frame: pd.DataFrame, baseline: str) -> list[str]:
    """The rows of the sweep by status (the answer per variant is the report's first section)."""
    counts = frame["status"].value_counts()
    return ["rows: " + ", ".join(f"{n} {status}" for status, n in counts.items())]


def _no_bound(row) -> str:
    """Why a row states no bound, as its own columns say."""
    state = row.get("profile_state")
    if profile_unclean(state):
        return f"no bound: its profile was {state.replace('_', ' ')} (the findings say why)"
    if row.get("status") != Status.OK:
        return f"{row.get('status')}: {row.get('reason')}"
    if not isinstance(row.get("trace"), str) or not row.get("trace"):
        return "not profiled (profile=off, or the profile failed: its reason says which)"
    return f"no bound ({why_unjudged(row.get('flops'), work_us_of(row))})"
