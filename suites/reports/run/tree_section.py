"""The report's op-tree section: what each variant's call runs against the baseline's, in plain
words (from optree.csv, suites/traces/op_tree.py), the transposes, copies and occupancy
queries per call, and each case's trees, folded away (a `<details>` per case)."""
from __future__ import annotations

import html

import pandas as pd

from suites.traces import op_tree as ot
from suites.reports.kit import page as hp
from suites.reports.run import shared_findings as sf
from suites.common.numbers import num, plain

NO_TREES = ("<p>This run folder has no op trees (no optree.csv, or nothing was "
            "profiled).</p>")
NAME_UP_TO = 56  # characters of an op's name in a tree; Inductor's kernel names run to 100+


def trees(optree: pd.DataFrame) -> dict[tuple[str, str], list[dict]]:
    """(case_id, variant) -> its tree's rows, from optree.csv's table ({} for a run without
    one: reader.py reads it)."""
    return {key: rows.to_dict("records")
            for key, rows in optree.groupby(["case_id", "variant"], sort=False)}


def section(found: dict[tuple[str, str], list[dict]], frame: pd.DataFrame, baseline: str,
            name) -> str:
    """The section's HTML from the trees (`trees`); `name`: row -> the case's short name
    (answer.case_namer)."""
    if not found:
        return NO_TREES
    cases = list(dict.fromkeys(c for c in frame["case_id"] if any(k[0] == c for k in found)))
    variants = list(dict.fromkeys(v for v in frame["variant"] if any(k[1] == v for k in found)))
    name_of = {r["case_id"]: name(r) for _, r in frame.drop_duplicates("case_id").iterrows()}
    intro = ("<p>The CPU ops of one call, nested by time (each op inside the one that called "
             "it), counted per call over the profiled calls: what the dispatcher ran for each "
             f"variant. Against {html.escape(baseline)}, in the ops' names (views and "
             "wrappers apart from the ops that compute; graph ids taken out):</p>")
    parts = [intro, _diff_lines(found, cases, variants, baseline, name_of)]
    parts.append(_layout_table(found, frame, cases, variants))
    parts.append("<p>Each case's trees (self and total us per call; x2: two calls per "
                 "call):</p>")
    parts += [_case_trees(found, case, variants, name_of.get(case, case)) for case in cases]
    return "".join(parts)


def _diff_lines(found, cases, variants, baseline, name_of) -> str:
    """A list item per variant, a line in it per group of ops that changed (op_tree.GROUPS),
    each said once with the cases it holds for where that is not every case."""
    records, seen = [], {}
    for variant in variants:
        if variant == baseline:
            continue
        for case in cases:
            base, rows = found.get((case, baseline)), found.get((case, variant))
            if not base or not rows:
                continue
            seen.setdefault(variant, []).append(case)
            clauses = ot.diff_clauses(ot.tree_diff(base, rows)) or \
                [("", f"the same ops as {baseline}")]
            records += [{"code": f"{variant}|{group}", "case_id": case, "variant": variant,
                         "statement": text} for group, text in clauses]
    if not records:
        return hp.bullet_list([f"no variant has both its own tree and {baseline}'s in a case"])
    items = []
    for variant, its_cases in seen.items():
        codes = [f"{variant}|{g}" for g in ("", *ot.GROUPS)]
        lines = []
        for shared in sf.group(pd.DataFrame(records), codes):
            group = shared.code.split("|", 1)[1]
            label = f"{group}: " if group and group != ot.COMPUTE else ""
            where = "" if set(shared.cases) == set(its_cases) else \
                f" ({sf.where(shared, cases, name_of)})"
            lines.append(f"{label}{shared.text()}{where}")
        items.append(f"<li><b>{html.escape(variant)}</b>{hp.bullet_list(lines)}</li>")
    return f"<ul>{''.join(items)}</ul>"


def _span(values) -> str:
    values = [v for v in values if v == v]
    if not values:
        return "-"
    low, high = min(values), max(values)
    return num(low) if abs(high - low) < 0.05 else f"{num(low)}-{num(high)}"


def _layout_table(found, frame, cases, variants) -> str:
    """Per variant, over the cases: transposes, copies, occupancy queries and ops per call,
    with the SDPA backend where one ran."""
    backends = frame.set_index(["case_id", "variant"])["backend"] if "backend" in frame \
        else pd.Series(dtype=object)
    rows = []
    for variant in variants:
        trees_ = [found[(c, variant)] for c in cases if (c, variant) in found]
        counts = [ot.layout_counts(t) for t in trees_]
        names = {}
        for tree in trees_:
            for (op, kind), n in ot.name_counts(tree).items():
                if op in ot.TRANSPOSE_OPS:
                    names.setdefault(op, []).append(n)
        ran = sorted({str(b) for (c, v), b in backends.items() if v == variant and b == b and b})
        rows.append({
            "variant": variant, "backend": ", ".join(ran),
            "transposes": _span([c["transposes"] for c in counts]),
            "which": ", ".join(f"{op} x{_span(n)}" for op, n in names.items()),
            "layout_copies": _span([c["layout_copies"] for c in counts]),
            "copies": _span([c["copies"] for c in counts]),
            "occupancy": _span([ot.occupancy_queries(t) for t in trees_]),
            "ops": _span([sum(r["calls_per_call"] for r in t if r["depth"] and r["kind"] == ot.OP)
                          for t in trees_])})
    table = pd.DataFrame(rows)
    columns = {"variant": "variant", "backend": "SDPA backend", "transposes": "transposes",
               "which": "which", "layout_copies": "layout copies", "copies": "all copies",
               "occupancy": "occupancy queries", "ops": "CPU ops"}
    for column in ("backend", "which"):  # a CPU matmul has neither: no empty columns
        if not (table[column] != "").any():
            columns.pop(column)
    note = ("<p>Per call, over the cases (a range where they differ). Transposes: views "
            "(aten::t, aten::transpose, aten::permute...); layout copies: an aten::copy_ "
            "under a contiguous or a reshape, a transposed tensor made dense; all copies: "
            "copy_, clone and contiguous; occupancy queries: "
            f"{ot.OCCUPANCY_QUERY}* calls, which cuBLAS and cuDNN make before launching a "
            "GEMM-class kernel (none on a CPU).</p>")
    return note + hp.table(table, columns, left=("variant", "backend", "which"))


def tree_text(rows: list[dict]) -> str:
    """A tree as indented lines: name (x calls per call where not 1), self and total us."""
    lines = []
    for row in rows:
        depth = int(row["depth"])
        label = str(row["name"]) if depth else "(the call: self = time in no op)"
        if len(label) > NAME_UP_TO:
            label = label[:NAME_UP_TO - 1] + "\u2026"
        calls = row["calls_per_call"]
        if abs(calls - 1) >= 0.05:
            label += f" x{plain(calls)}"
        lines.append(f"{'  ' * max(0, depth - 1)}{label:<{62 - 2 * max(0, depth - 1)}}"
                     f"{num(row['self_us']):>9}{num(row['total_us']):>10}")
    return "\n".join(lines)


def _case_trees(found, case, variants, title) -> str:
    blocks = []
    for variant in variants:
        rows = found.get((case, variant))
        if not rows:
            continue
        head = f"{variant:<62}{'self us':>9}{'total us':>10}"
        blocks.append(f"<pre style='flex:0 1 auto;min-width:0;font-size:.75em;margin:.3em 0;"
                      f"overflow:auto'><b>{html.escape(head)}</b>\n"
                      f"{html.escape(tree_text(rows))}</pre>")
    # Side by side where the page is wide enough: the trees of one case compare at a glance.
    return (f"<details><summary>{html.escape(str(title))}: the op tree of each variant"
            f"</summary><div style='display:flex;flex-wrap:wrap;column-gap:24px'>"
            f"{''.join(blocks)}</div></details>")
