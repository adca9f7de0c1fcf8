"""The report's hotspots: per (case, variant), the series' `row_limit=15` profiler table (the
ops with the most self time, with their total time and calls), from the trace's op tree
(optree.csv), not from the key_averages text. A `<details>` per case keeps the page short."""
from __future__ import annotations

import html

import pandas as pd

from suites.traces import op_tree as ot
from suites.reports.kit import page as hp
from suites.reports.run.tree_section import NO_TREES

TOP = 15  # the series' row_limit
COLUMNS = {"name": "op", "calls_per_call": "calls", "self_us": "self us",
           "self_pct": "self %", "total_us": "total us", "total_pct": "total %"}


def table(rows: list[dict], k: int = TOP) -> pd.DataFrame:
    """The top k of one tree by self time (op_tree.hotspots), shares in percent of the call."""
    top = pd.DataFrame(ot.hotspots(rows, k), columns=["name", "kind", "calls_per_call",
                                                       "self_us", "total_us", "self_share",
                                                       "total_share"])
    top["name"] = top["name"].replace({ot.CALL: "(the call: time in no op)"})
    # Shares to 0.1%: the table ranks ops, a third digit of a share says nothing more.
    return top.assign(self_pct=(100 * top["self_share"]).round(1),
                      total_pct=(100 * top["total_share"]).round(1))


def section(found: dict[tuple[str, str], list[dict]], frame: pd.DataFrame, name) -> str:
    """The section's HTML from the op trees (tree_section.trees); `name`: row -> the case's
    short name (answer.case_namer)."""
    if not found:
        return NO_TREES.replace("op trees", "hotspots")
    variants = list(dict.fromkeys(frame["variant"]))
    intro = (f"<p>Per call, the {TOP} names with the most self time (time in the op's own "
             "code, its children's taken out), as the series' "
             "<code>key_averages().table(sort_by=\"self_cpu_time_total\", row_limit=15)</code>"
             " reads them, from the trace's op tree. Shares are of the call's span; total "
             "includes the op's children. Click a case to open it.</p>")
    parts = [intro]
    for _, first in frame.drop_duplicates("case_id").iterrows():
        case = first["case_id"]
        tables = []
        for variant in variants:
            rows = found.get((case, variant))
            if not rows:
                continue
            tables.append(f"<div style='flex:1 1 520px;min-width:0'><b>{html.escape(variant)}"
                          f"</b>{hp.table(table(rows), COLUMNS, left=('name',))}</div>")
        if tables:
            parts.append(f"<details><summary>{html.escape(str(name(first)))}: top {TOP} per "
                         f"variant</summary><div style='display:flex;flex-wrap:wrap;gap:12px'>"
                         f"{''.join(tables)}</div></details>")
    return "".join(parts)
