"""The audit of a ladder folder (`collect`'s output): its pages against each other, against the
ladder its sources give today, and against the run reports of the folders it collected.

- breakeven.csv follows the one break-even rule (suites/reports/kit/breakeven.py): a count of
  calls only where compile is faster by its interval; never only where it is slower;
- each collected run's report.md says compile repays its first call at as many cases as the
  ladder's break-even table finds in that run (one rule, two pages);
- ladder.md and ladder.html give the answer the sources give now;
- every number in its tables finite.
"""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pandas as pd

from suites.common.audit import Audit, Tally, finite
from suites.common.errors import InputError
from suites.reports.kit import breakeven as be
from suites.reports.ladder import render
from suites.reports.ladder.loading import load
from suites.reports.ladder.report import SOURCES_JSON, analyze

REPAYS = re.compile(r"torch\.compile \(.*?\).*?it repays it at (\d+) of (\d+) cases")
ANSWER_HTML = re.compile(r"<p id='verdict'><b>(.*?)</b></p><ul>(.*?)</ul>", re.S)


def looks_like(folder: Path) -> bool:
    return (Path(folder) / "breakeven.csv").is_file() and (Path(folder) / "ladder.md").is_file()


def _rule(tally: Tally, table: pd.DataFrame) -> None:
    for _, r in table.iterrows():
        where = f"{r['suite']} {r['case_id']} {r['variant']}"
        counted = r["calls"] == r["calls"]
        change = r.get("change") if isinstance(r.get("change"), str) else ""
        tally.test(not counted or change == "faster", "breakeven_rule", where,
                   f"breakeven.csv: {r['verdict']}",
                   f"its speedup's interval says {change or 'nothing'}: only faster repays")
        if change == "slower":
            tally.test(r["verdict"] == be.NEVER, "breakeven_rule", where,
                       f"breakeven.csv: {r['verdict']}", "slower by its interval: never")


def _reports(tally: Tally, table: pd.DataFrame, runs: list[str], superseded: set[str]) -> None:
    """Each collected run's report.md against the ladder's break-even rows of that run. A run
    some of whose rows a newer run replaced (a rerun, a resumed job) is left out: its report
    speaks of rows the ladder no longer holds."""
    for folder in map(Path, runs):
        md = folder / "report.md"
        measurements = folder / "measurements.csv"
        if not md.is_file() or not measurements.is_file() or str(folder.resolve()) in superseded:
            continue
        said = REPAYS.search(md.read_text())
        if said is None:
            continue
        own = pd.read_csv(measurements, usecols=lambda c: c in ("suite", "case_id"))
        suites = set(own["suite"]) if "suite" in own else set(table["suite"])
        mine = be.measured(table[table["suite"].isin(suites)
                                 & table["case_id"].isin(set(own.get("case_id", ())))])
        pays, of = int(be.repaid(mine).sum()), len(mine)
        tally.test((int(said.group(1)), int(said.group(2))) == (pays, of), "ladder_vs_report",
                   str(folder), f"report.md: repays it at {said.group(1)} of {said.group(2)}",
                   f"the ladder's breakeven.csv: {pays} of {of}")


def _answers(tally: Tally, folder: Path, ladder) -> None:
    head, lines = render.answer_lines(ladder)
    now = [head, *lines]
    page = (folder / "ladder.html").read_text() if (folder / "ladder.html").is_file() else ""
    found = ANSWER_HTML.search(page)
    if found is not None:
        shown = [html.unescape(found.group(1))] + [html.unescape(x) for x in
                                                   re.findall(r"<li>(.*?)</li>", found.group(2),
                                                              re.S)]
        tally.test(shown == now, "answer_recomputed", str(folder / "ladder.html"),
                   f"{len(shown)} line(s), first {shown[:1]}",
                   "the answer its sources give now")
    md = (folder / "ladder.md").read_text() if (folder / "ladder.md").is_file() else ""
    if "## The answer" in md:
        block = md.split("## The answer", 1)[1].split("\n## ", 1)[0]
        said = [line.removeprefix("- ") for line in block.splitlines() if line.strip()]
        tally.test(said == now, "answer_recomputed", str(folder / "ladder.md"),
                   f"{len(said)} line(s), first {said[:1]}", "the answer its sources give now")


def _numbers(tally: Tally, folder: Path) -> None:
    for name in ("ladder.csv", "breakeven.csv", "fits.csv"):
        path = folder / name
        if not path.is_file():
            continue
        frame = pd.read_csv(path)
        for column in frame.columns:
            values = pd.to_numeric(frame[column], errors="coerce")
            tally.test(all(finite(v) for v in values), "finite", f"{name} {column}",
                       "a value not finite or absurd", "every number a page gives is finite")


def _root(folder: Path) -> tuple[Path | None, list[str]]:
    """Where the ladder's run folders are: sources.json's record, or (a collect from before it
    wrote one) the folder collect writes its ladder into by default, the sweep's own."""
    sources = folder / SOURCES_JSON
    if sources.is_file():
        known = json.loads(sources.read_text())
        return Path(known["root"]), known.get("runs", [])
    runs = sorted(str(p.parent) for p in folder.parent.glob("*/measurements.csv"))
    return (folder.parent, runs) if runs else (None, [])


def audit(folder: Path) -> Audit:
    folder = Path(folder)
    if not looks_like(folder):
        raise InputError(f"{folder}: not a ladder folder (no breakeven.csv and ladder.md)")
    tally = Tally()
    table = pd.read_csv(folder / "breakeven.csv")
    _numbers(tally, folder)
    root, runs = _root(folder)
    if root is None:  # its sources are not known: the table judged on its own columns
        _rule(tally, table)
        return tally.audit(folder, "ladder")
    collection = load(root)
    ladder = analyze(collection)
    fresh = pd.concat([p.breakeven for p in ladder.suites] or [pd.DataFrame(columns=be.COLUMNS)],
                      ignore_index=True)
    if "change" not in table:  # an older collect wrote no class: its rows' own intervals give it
        key = ["suite", "case_id", "variant"]
        table = table.merge(fresh[key + ["change"]], on=key, how="left")
    _rule(tally, table)
    tally.test(fresh["verdict"].tolist() == table["verdict"].tolist(), "breakeven_recomputed",
               str(folder / "breakeven.csv"), f"{len(table)} verdicts",
               "the break-even its sources give now")
    _answers(tally, folder, ladder)
    _reports(tally, table, runs,
             {str(Path(run).resolve()) for run in collection.dropped["run"].astype(str)})
    return tally.audit(folder, "ladder")
