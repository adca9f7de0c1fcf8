"""compare.csv (tidy), compare.md (the table a reviewer pastes into a PR), compare.html (the same
look as report.html, readable offline), the rule that produced the verdicts, in words, and the
settings the two sides do not share, first, then what the run folders lack or leave unsaid
("read with care": a run incomplete, a file missing or unreadable, as the reader says it).
audit.py reads these pages back: what it parses is written here."""
from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from suites.common.numbers import missing, num, ratio
from suites.reports.compare.loading import Side, env_facts
from suites.reports.kit import page as hp
from suites.reports.kit.banner import banner_html

VERDICT_CSS = """
tr.faster td{background:#eaf6ec}tr.slower td{background:#fbeaea}
tr.inconclusive td{background:#fdf5e2}
tr.not-comparable td,tr.only-in-a td,tr.only-in-b td{color:#777}
"""
HTML_COLUMNS = {"case_id": "case", "variant": "variant", "a_us": "A us",
                "b_us": "B us", "ratio": "B/A", "ci": "99% CI", "eq": "90% CI",
                "verdict": "verdict", "mde": "mde", "n": "rounds A/B", "status": "status A/B",
                "note": "note"}
SUMMARY, CARE = "Summary", "Read with care"  # the headings of compare.md's and .html's lists


def slug(verdict: str) -> str:
    """A verdict as compare.html's row class: `not comparable` -> `not-comparable`."""
    return str(verdict).lower().replace(" ", "-")


def care_lines(a: Side, b: Side) -> list[str]:
    """What the runs of either side lack or leave unsaid, a line each, the side first."""
    return a.incomplete + b.incomplete


def _interval(lows, highs) -> list[str]:
    return [f"{ratio(lo)} to {ratio(hi)}" if not missing(lo) else "-"
            for lo, hi in zip(lows, highs)]


def _display(frame: pd.DataFrame) -> pd.DataFrame:
    """Strings for the md and html tables: CI as one cell, sample counts and statuses paired."""
    return frame.assign(
        ratio=frame["ratio"].map(ratio),
        ci=_interval(frame["ci_low"], frame["ci_high"]),
        eq=_interval(frame["eq_low"], frame["eq_high"]),
        mde=[f"{m:.0%}" if not missing(m) else "-" for m in frame["mde"]],
        n=[f"{a}/{b}" for a, b in zip(frame["n_a"], frame["n_b"])],
        status=[f"{a or '-'}/{b or '-'}" for a, b in
                zip(frame["status_a"].fillna(""), frame["status_b"].fillna(""))],
        a_us=frame["a_us"].map(num), b_us=frame["b_us"].map(num),
        note=frame["note"].fillna(""))


def _md_cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _columns(basis) -> dict[str, str]:
    """The tables' columns: compare's, with the basis's count label and its own columns
    (`extra_cells`: header -> a string per row) before the note."""
    columns = {**HTML_COLUMNS, "n": basis.count_label}
    note = columns.pop("note")
    return {**columns, **{name: name for name in basis.extra_cells_names}, "note": note}


def markdown_table(frame: pd.DataFrame, basis) -> str:
    columns = _columns(basis)
    if frame["suite"].nunique() > 1:
        columns = {"suite": "suite", **columns}
    shown = _display(frame).assign(**basis.extra_cells(frame))
    lines = ["| " + " | ".join(columns.values()) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_md_cell(row[c]) for c in columns) + " |"
              for _, row in shown.iterrows()]
    return "\n".join(lines)


def facts_markdown(a: Side, b: Side) -> str:
    fa, fb = env_facts(a), env_facts(b)
    lines = ["| | A | B |", "|---|---|---|"]
    lines += [f"| {k} | {_md_cell(fa[k])} | {_md_cell(fb[k])} |" for k in fa]
    return "\n".join(lines)


def warning_lines(basis) -> list[str]:
    """The settings A and B do not share, a line each, said before anything else."""
    return [f"warning: A and B differ in {line}" for line in basis.differences]


def write_markdown(path: Path, frame, a: Side, b: Side, basis, summary: list[str]) -> str:
    table = markdown_table(frame, basis)
    warnings = ["\n".join(f"- **{line}**" for line in warning_lines(basis))] \
        if basis.differences else []
    care = care_lines(a, b)
    care = [f"## {CARE}\n\n" + "\n".join(f"- {line}" for line in care)] if care else []
    text = "\n\n".join(["# fusebench compare: A vs B", *warnings, *care, facts_markdown(a, b),
                        basis.text(), f"## {SUMMARY}",
                        "\n".join(f"- {line}" for line in summary + basis.lines()),
                        table]) + "\n"
    path.write_text(text, encoding="utf-8")
    return table


def write_html(path: Path, frame, a: Side, b: Side, basis, summary: list[str],
               plot: Path, images: tuple[tuple[str, Path], ...] = ()) -> Path:
    fa, fb = env_facts(a), env_facts(b)
    facts = pd.DataFrame({"fact": list(fa), "A": list(fa.values()), "B": list(fb.values())})
    columns = _columns(basis)
    if frame["suite"].nunique() > 1:
        columns = {"suite": "suite", **columns}
    # hp.table gives each <tr> the row's `status` as its class: use it for the verdict's color.
    shown = _display(frame).assign(**basis.extra_cells(frame)).rename(
        columns={"status": "status_pair"}).assign(
        status=frame["verdict"].map(slug))
    columns = {("status_pair" if c == "status" else c): h for c, h in columns.items()}
    warnings = [("A and B differ", hp.bullet_list(warning_lines(basis)))] \
        if basis.differences else []
    sections = [
        *warnings,
        ("Runs", hp.table(facts, {"fact": "", "A": "A", "B": "B"}, left=("fact", "A", "B"))),
        (SUMMARY, hp.bullet_list(summary + basis.lines())
         + f"<p>{html.escape(basis.text())}</p>"),
        ("B / A per row", hp.image(plot)),
        *((title, hp.image(image)) for title, image in images),
        ("All rows", hp.table(shown, columns, left=("suite", "case_id", "variant", "verdict",
                                                    "status_pair", "note"))),
    ]
    meta = html.escape(f"A: {a.path}   B: {b.path}")
    page = hp.page("fusebench compare: A vs B", sections, meta, banner_html(care_lines(a, b)))
    path.write_text(page.replace("</style>", VERDICT_CSS + "</style>", 1), encoding="utf-8")
    return path


def write_all(out_dir: Path, frame, a: Side, b: Side, basis, summary: list[str],
              plot: Path, images: tuple[tuple[str, Path], ...] = ()) -> str:
    """The CSV, markdown and HTML; returns the markdown table for stdout. `basis`: what the
    verdicts rest on (joined.Basis for two runs, the A/B design's for pairs): its `lines()`,
    `text()`, `differences`, `count_label`, `extra_cells_names` and `extra_cells(frame)`;
    `images`: more plots after compare.png."""
    frame.to_csv(out_dir / "compare.csv", index=False)
    write_html(out_dir / "compare.html", frame, a, b, basis, summary, plot, images)
    return write_markdown(out_dir / "compare.md", frame, a, b, basis, summary)
