"""compare.csv (tidy), compare.md (the table a reviewer pastes into a PR), compare.html (the same
look as report.html, readable offline) and the rule that produced the verdicts, in words."""
from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from suites.common.numbers import missing, num, plain, ratio
from suites.reports.compare.loading import Side, env_facts
from suites.reports.compare.joined import Rule
from suites.reports.kit import page as hp

VERDICT_CSS = """
tr.faster td{background:#eaf6ec}tr.slower td{background:#fbeaea}tr.unclear td{background:#fdf5e2}
tr.not-comparable td,tr.only-in-a td,tr.only-in-b td{color:#777}
"""
HTML_COLUMNS = {"case_id": "case", "variant": "variant", "median_a_us": "A median us",
                "median_b_us": "B median us", "ratio": "B/A", "ci": "CI", "verdict": "verdict",
                "n": "rounds A/B", "status": "status A/B", "note": "note"}


def rule_text(rule: Rule) -> str:
    return (f"B/A is B's time per call over A's: below 1, B is faster. The unit of evidence is a "
            f"timing round's median (the calls of one round share one machine state): each side "
            f"needs {rule.min_rounds} clean rounds, and Welch's t gives a 95% interval of B/A from "
            f"the two sides' round medians (in logs). The verdict is faster when the whole "
            f"interval is below {plain(1 / (1 + rule.noise_floor))}, slower when it is all above "
            f"{plain(1 + rule.noise_floor)}, the same when it lies all between the two, and "
            "unclear when it reaches across either (more rounds would tell). The noise floor, "
            f"{rule.noise_floor:.0%}, is there because two runs of one commit minutes apart land "
            "in different machine states by more than their rounds show (the README's A/A "
            "measurement).")


def _display(frame: pd.DataFrame) -> pd.DataFrame:
    """Strings for the md and html tables: CI as one cell, sample counts and statuses paired."""
    return frame.assign(
        ratio=frame["ratio"].map(ratio),
        ci=[f"{ratio(lo)} to {ratio(hi)}" if not missing(lo) else "-"
            for lo, hi in zip(frame["ci_low"], frame["ci_high"])],
        n=[f"{a}/{b}" for a, b in zip(frame["n_a"], frame["n_b"])],
        status=[f"{a or '-'}/{b or '-'}" for a, b in
                zip(frame["status_a"].fillna(""), frame["status_b"].fillna(""))],
        median_a_us=frame["median_a_us"].map(num), median_b_us=frame["median_b_us"].map(num),
        note=frame["note"].fillna(""))


def _md_cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(frame: pd.DataFrame) -> str:
    columns = dict(HTML_COLUMNS)
    if frame["suite"].nunique() > 1:
        columns = {"suite": "suite", **columns}
    shown = _display(frame)
    lines = ["| " + " | ".join(columns.values()) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_md_cell(row[c]) for c in columns) + " |"
              for _, row in shown.iterrows()]
    return "\n".join(lines)


def facts_markdown(a: Side, b: Side) -> str:
    fa, fb = env_facts(a), env_facts(b)
    lines = ["| | A | B |", "|---|---|---|"]
    lines += [f"| {k} | {_md_cell(fa[k])} | {_md_cell(fb[k])} |" for k in fa]
    return "\n".join(lines)


def write_markdown(path: Path, frame, a: Side, b: Side, rule: Rule, summary: list[str]) -> str:
    table = markdown_table(frame)
    text = "\n\n".join(["# fusebench compare: A vs B", facts_markdown(a, b), rule_text(rule),
                        "\n".join(f"- {line}" for line in summary), table]) + "\n"
    path.write_text(text, encoding="utf-8")
    return table


def write_html(path: Path, frame, a: Side, b: Side, rule: Rule, summary: list[str],
               plot: Path) -> Path:
    fa, fb = env_facts(a), env_facts(b)
    facts = pd.DataFrame({"fact": list(fa), "A": list(fa.values()), "B": list(fb.values())})
    columns = dict(HTML_COLUMNS)
    if frame["suite"].nunique() > 1:
        columns = {"suite": "suite", **columns}
    # hp.table gives each <tr> the row's `status` as its class: use it for the verdict's color.
    shown = _display(frame).rename(columns={"status": "status_pair"}).assign(
        status=frame["verdict"].str.lower().str.replace(" ", "-"))
    columns = {("status_pair" if c == "status" else c): h for c, h in columns.items()}
    sections = [
        ("Runs", hp.table(facts, {"fact": "", "A": "A", "B": "B"}, left=("fact", "A", "B"))),
        ("Summary", hp.bullet_list(summary) + f"<p>{html.escape(rule_text(rule))}</p>"),
        ("B / A per row", hp.image(plot)),
        ("All rows", hp.table(shown, columns, left=("suite", "case_id", "variant", "verdict",
                                                    "status_pair", "note"))),
    ]
    meta = html.escape(f"A: {a.path}   B: {b.path}")
    page = hp.page("fusebench compare: A vs B", sections, meta)
    path.write_text(page.replace("</style>", VERDICT_CSS + "</style>", 1), encoding="utf-8")
    return path


def write_all(out_dir: Path, frame, a: Side, b: Side, rule: Rule, summary: list[str],
              plot: Path) -> str:
    """The CSV, markdown and HTML; returns the markdown table for stdout."""
    frame.to_csv(out_dir / "compare.csv", index=False)
    write_html(out_dir / "compare.html", frame, a, b, rule, summary, plot)
    return write_markdown(out_dir / "compare.md", frame, a, b, rule, summary)
