"""The audit of a compare folder: every statement its pages make (compare.csv, compare.md,
compare.html) tested against the others and against the numbers it rests on; each
contradiction names both sources (suites/common/audit.py). `python -m suites.compare` ends
with its first line.

The checks, by code:

- finite: every number of compare.csv (a blank is no number, not a contradiction);
- row_kind: a row's verdict against its statuses and round counts (only in A: no B row, and
  the other way; a verdict of the four: ok on both sides, with intervals; not comparable:
  both sides, no intervals);
- interval_order: 0 < ci_low <= eq_low <= ratio <= eq_high <= ci_high;
- interval_shape: both intervals centred on the ratio in logs, their widths in the ratio
  Student's t gives for some degrees of freedom (1 to the normal's);
- verdict_rule: the verdict is decision.verdict of the row's own intervals, floor and held;
- mde: the mde is the one the row's intervals give (exp((t_0.995 + t_0.80) se) - 1, se and
  the degrees of freedom read back from its two intervals);
- summary_counts, largest, mde_range: the summary's counts, its largest speedup and slowdown
  and its range of mde against compare.csv;
- md_html: compare.md and compare.html list the same summary and the same lines to read with
  care;
- table_rows: the md table's rows and verdicts, and the html table's, are compare.csv's.
"""
from __future__ import annotations

import html
import math
import re
from collections import Counter
from pathlib import Path

import pandas as pd

from suites.common.audit import Audit, Tally, finite
from suites.common.errors import InputError
from suites.common.numbers import plain
from suites.reports.compare import decision
from suites.reports.compare.joined import COLUMNS, VERDICTS
from suites.reports.compare.outputs import CARE, HTML_COLUMNS, SUMMARY, slug
from suites.reports.kit.change import Change
from suites.results.intervals import DECIDE_LEVEL, EQUIVALENCE_LEVEL, POWER, t_quantile

KIND = "compare"
CSV, MD, HTML = "compare.csv", "compare.md", "compare.html"
NUMBERS = ("a_us", "b_us", "ratio", "ci_low", "ci_high", "eq_low", "eq_high", "mde", "drift_sd",
           "floor", "n_a", "n_b")
INTERVALS = ("ci_low", "eq_low", "ratio", "eq_high", "ci_high")
TOLERANCE = 1e-6  # what a number may lose on its way through a CSV file and a log
# joined.summary_lines' sentences, as the audit reads them back.
COUNTS = re.compile(r"^(\d+) rows: (.*)$")
COUNT = re.compile(r"(\d+) ([a-zA-Z ]+?)(?:, |$)")
LARGEST = re.compile(r"^largest (speedup|slowdown): (.+) (\S+): B/A (\S+) \(99% CI")
MDE_RANGE = re.compile(r"could have seen a change of (\d+)% to (\d+)% \(mde\)$")
T_DECIDE, T_EQUIVALENT = 1 - (1 - DECIDE_LEVEL) / 2, 1 - (1 - EQUIVALENCE_LEVEL) / 2
MAX_DOF = 1e7  # t_quantile's normal from here


def looks_like(folder) -> bool:
    """A folder `python -m suites.compare` wrote: it holds compare.csv, which nothing else
    writes."""
    return (Path(folder) / CSV).is_file()


def _where(row: dict) -> str:
    return f"{row['suite']} {row['case_id']} {row['variant']}"


def _blank(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=1e-12)


# --- each row against itself --------------------------------------------------------------

def _row_kind(t: Tally, row: dict) -> bool:
    """True when the row has intervals to judge further."""
    verdict, has_a, has_b = row["verdict"], not _blank(row["status_a"]), not _blank(row["status_b"])
    intervals = not any(_blank(row[c]) for c in INTERVALS)
    expected = {"only in A": has_a and not has_b and row["n_b"] == 0 and not intervals,
                "only in B": has_b and not has_a and row["n_a"] == 0 and not intervals,
                "not comparable": has_a and has_b and not intervals}
    holds = expected.get(verdict, verdict in list(Change) and intervals
                         and row["status_a"] == row["status_b"] == "ok"
                         and min(row["n_a"], row["n_b"]) >= 2)
    t.test(holds, "row_kind", _where(row), f"{CSV}: verdict {verdict}",
           f"{CSV}: status A {row['status_a']}, B {row['status_b']}, rounds {row['n_a']}/"
           f"{row['n_b']}, intervals {'present' if intervals else 'blank'}")
    return holds and verdict in list(Change)


def _ratio_of_t(dof: float) -> float:
    return t_quantile(T_DECIDE, dof) / t_quantile(T_EQUIVALENT, dof)


def _dof(target: float) -> float | None:
    """The degrees of freedom whose t_0.995 / t_0.95 is `target` (math.inf: the normal's, which
    t_quantile gives from MAX_DOF on); None where no dof from 1 gives it. Regula falsi
    (Illinois) on 1 / dof, over which the ratio is nearly a straight line: from 1.566 for the
    normal to 10.1 at 1 dof. A dof to 1e-7 of itself moves an mde by far less than TOLERANCE."""
    normal = _ratio_of_t(math.inf)
    if abs(normal - target) <= 1e-9 * target:
        return math.inf
    if normal > target or _ratio_of_t(1.0) < target:
        return None  # narrower than the normal's, or wider than 1 dof allows
    low, high = 1 / MAX_DOF, 1.0  # 1 / dof: the ratio rises with it
    f_low, f_high = _ratio_of_t(MAX_DOF) - target, _ratio_of_t(1.0) - target
    if f_low >= 0:
        return MAX_DOF
    u, side = low, 0
    for _ in range(100):
        u = low - f_low * (high - low) / (f_high - f_low)
        f_u = _ratio_of_t(1 / u) - target
        if abs(f_u) < 1e-12 * target or high - low < 1e-9 * u:
            break
        if f_u < 0:
            low, f_low = u, f_u
            f_high, side = (f_high / 2 if side == -1 else f_high), -1
        else:
            high, f_high = u, f_u
            f_low, side = (f_low / 2 if side == 1 else f_low), 1
    return 1 / u


def _intervals(t: Tally, row: dict) -> None:
    values = [row[c] for c in INTERVALS]
    where, said = _where(row), f"{CSV}: " + ", ".join(f"{c} {row[c]}" for c in INTERVALS)
    ordered = values[0] > 0 and all(a <= b * (1 + TOLERANCE) for a, b in zip(values, values[1:]))
    if not t.test(ordered, "interval_order", where, said, "ci_low <= eq_low <= ratio <= eq_high "
                  "<= ci_high, above 0"):
        return
    ratio, ci_low, ci_high, eq_low, eq_high = (row[c] for c in ("ratio", "ci_low", "ci_high",
                                                                "eq_low", "eq_high"))
    decide, equivalent = math.log(ci_high / ratio), math.log(eq_high / ratio)
    centred = (_close(decide, math.log(ratio / ci_low))
               and _close(equivalent, math.log(ratio / eq_low)))
    dof = _dof(decide / equivalent) if centred and equivalent > 0 else None
    if decide == equivalent == 0 and centred:
        dof = math.inf  # identical rounds and no drift: the intervals are the ratio itself
    if not t.test(dof is not None, "interval_shape", where, said,
                  "two intervals centred on the ratio, their widths in Student's t's ratio "
                  "(1.57 for the normal to 10.1 at 1 degree of freedom)"):
        return
    se = decide / t_quantile(T_DECIDE, dof) if decide else 0.0
    mde = math.expm1((t_quantile(T_DECIDE, dof) + t_quantile(POWER, dof)) * se)
    t.test(_close(row["mde"], mde) if not _blank(row["mde"]) else False, "mde", where,
           f"{CSV}: mde {row['mde']}",
           f"its intervals: se {se:.4g} at {dof:.3g} degrees of freedom give {mde:.6g}")
    expected = decision.verdict(ci_low, ci_high, eq_low, eq_high, row["floor"],
                                None if _blank(row["held"]) else row["held"])
    t.test(row["verdict"] == expected, "verdict_rule", where, f"{CSV}: {row['verdict']}",
           f"decision.verdict of its intervals (floor {row['floor']}, held "
           f"{row['held'] if not _blank(row['held']) else 'no'}): {expected}")


def _rows(t: Tally, frame: pd.DataFrame) -> None:
    for row in frame.to_dict("records"):
        bad = [f"{c} {row[c]}" for c in NUMBERS if not finite(row[c])]
        t.test(not bad, "finite", _where(row), f"{CSV}: {', '.join(bad)}",
               "a number a page may state")
        if not bad and _row_kind(t, row):
            _intervals(t, row)


# --- the summary and the tables against compare.csv ---------------------------------------

def _md_list(md: str, heading: str) -> list[str] | None:
    """The bullets under `## heading` in compare.md; None where there is no such heading."""
    found = re.search(rf"^## {re.escape(heading)}\n\n((?:- .*\n?)*)", md, re.M)
    return None if found is None else [line[2:] for line in found.group(1).splitlines()]


def _html_list(page: str, pattern: str) -> list[str] | None:
    found = re.search(pattern, page, re.S)
    if found is None:
        return None
    return [html.unescape(item) for item in re.findall(r"<li>(.*?)</li>", found.group(1), re.S)]


def _counts(t: Tally, frame: pd.DataFrame, summary: list[str]) -> None:
    head = COUNTS.match(summary[0]) if summary else None
    said = {} if head is None else {w: int(n) for n, w in COUNT.findall(head.group(2))}
    truth = {v: n for v, n in Counter(frame["verdict"]).items()}
    t.test(head is not None and int(head.group(1)) == len(frame) and said == truth,
           "summary_counts", MD, f"{MD}: {summary[0] if summary else 'no summary'}",
           f"{CSV}: {len(frame)} rows: " + ", ".join(f"{n} {v}" for v, n in truth.items()))


def _largest(t: Tally, frame: pd.DataFrame, summary: list[str]) -> None:
    for word, verdict, pick in (("speedup", Change.FASTER, "idxmin"),
                                ("slowdown", Change.SLOWER, "idxmax")):
        rows = frame[frame["verdict"] == verdict]
        line = next((s for s in summary if s.startswith(f"largest {word}:")), None)
        truth = "none" if rows.empty else rows.loc[getattr(rows["ratio"], pick)()]
        said = LARGEST.match(line or "")
        holds = (line == f"largest {word}: none") if rows.empty else (
            said is not None and (said.group(2), said.group(3), said.group(4)) ==
            (truth["case_id"], truth["variant"], plain(truth["ratio"])))
        t.test(holds, "largest", MD, f"{MD}: {line}", f"{CSV}: " + (
            f"no {verdict} row" if rows.empty else
            f"{truth['case_id']} {truth['variant']} B/A {plain(truth['ratio'])}"))


def _mde_range(t: Tally, frame: pd.DataFrame, summary: list[str]) -> None:
    mde = frame.loc[frame["verdict"] == Change.INCONCLUSIVE, "mde"]
    said = next((m for s in summary if (m := MDE_RANGE.search(s))), None)
    truth = None if mde.empty else (f"{mde.min():.0%}", f"{mde.max():.0%}")
    t.test((said is None and truth is None) or (said is not None and truth is not None and
                                                 f"{said.group(1)}%" == truth[0]
                                                 and f"{said.group(2)}%" == truth[1]),
           "mde_range", MD, f"{MD}: " + (said.group(0) if said else "no range of mde"),
           f"{CSV}: the inconclusive rows' mde " + ("-" if truth is None else " to ".join(truth)))


def _md_table(md: str) -> list[tuple[str, str, str]]:
    lines = [line for line in md.splitlines() if line.startswith("| ")]
    if not lines:
        return []
    cells = [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
             for line in lines]
    head = cells[0]
    if not {HTML_COLUMNS["case_id"], "verdict"} <= set(head):
        return []
    at = [head.index(HTML_COLUMNS[c]) for c in ("case_id", "variant", "verdict")]
    return [tuple(row[i] for i in at) for row in cells[1:] if len(row) == len(head)]


def _tables(t: Tally, frame: pd.DataFrame, md: str, page: str) -> None:
    truth = list(zip(frame["case_id"], frame["variant"], frame["verdict"]))
    shown = _md_table(md.split(f"## {SUMMARY}", 1)[-1])
    t.test(shown == truth, "table_rows", MD, f"{MD}: {len(shown)} rows in its table",
           f"{CSV}: {len(truth)} rows, the same case, variant and verdict each")
    rows = page.split("<h2>All rows</h2>", 1)[-1]
    classes = [c for c in re.findall(r'<tr class="([^"]*)">', rows)
               if c in {slug(v) for v in VERDICTS}]
    t.test(classes == [slug(v) for v in frame["verdict"]], "table_rows", HTML,
           f"{HTML}: {len(classes)} rows with a verdict", f"{CSV}: {len(frame)} rows, the same "
           "verdict each")


def _pages(t: Tally, frame: pd.DataFrame, md: str, page: str) -> None:
    summary = _md_list(md, SUMMARY) or []
    _counts(t, frame, summary)
    _largest(t, frame, summary)
    _mde_range(t, frame, summary)
    html_summary = _html_list(page, rf"<h2>{SUMMARY}</h2>(<ul>.*?</ul>)")
    t.test(summary == html_summary, "md_html", SUMMARY, f"{MD}: {len(summary)} summary lines",
           f"{HTML}: {len(html_summary or [])} summary lines"
           + ("" if summary == html_summary else ", not the same"))
    care = _md_list(md, CARE) or []
    html_care = _html_list(page, r"<div class='banner'>(.*?)</div>") or []
    t.test(care == html_care, "md_html", CARE, f"{MD}: {len(care)} lines to read with care",
           f"{HTML}: {len(html_care)} in its banner" + ("" if care == html_care else
                                                         ", not the same"))
    _tables(t, frame, md, page)


def audit(folder: Path) -> Audit:
    folder = Path(folder)
    if not looks_like(folder):
        raise InputError(f"{folder}: no {CSV}: not a compare folder (python -m suites.compare "
                         f"writes {CSV}, {MD} and {HTML})")
    t = Tally()
    frame = pd.read_csv(folder / CSV, keep_default_na=False, na_values=[""])
    lacking = [c for c in COLUMNS if c not in frame.columns]
    if not t.test(not lacking, "columns", CSV, f"{CSV}: no column(s) {', '.join(lacking)}",
                  "the columns compare writes (an older compare, or edited): rerun compare"):
        return t.audit(folder, KIND)
    _rows(t, frame)
    pages = {name: (folder / name).read_text(encoding="utf-8") if (folder / name).is_file()
             else None for name in (MD, HTML)}
    if t.test(None not in pages.values(), "pages", str(folder),
              f"{folder}: " + ", ".join(n for n, p in pages.items() if p is None) + " missing",
              f"{CSV}: compare writes the three together"):
        _pages(t, frame, pages[MD], pages[HTML])
    return t.audit(folder, KIND)
