"""The audit of a history's changes (regressions.json `changes` and `regressed`), against the
run folders they were diffed from and against each other:

- cause_allowed: a change's cause is of a kind explain.py may name, and its key is on
  causes.py's allow-list of what moves a time (never a lock wait, a date, a path);
- cause_changed: the cause's key differs between the two runs compared (their env.json, stored
  config or measurements.csv), with the values the change states;
- place_order: the runs of a change's place are in order (the last run surely before it, the
  earliest it may be at, its best place, the first run surely after it) and none is past the
  newest run of its suite and machine;
- gate_place: the newest run's verdict and the change's place agree: a regressed entry stands
  at a change flagged regressed at the same place, with the newest run of its suite, no change
  point between its place and the newest run, a reason where it is not placed at the newest
  run itself, and a ratio above 1; every change flagged regressed has its entry; a change point
  placed at the newest run alone, slower beyond the suite's practical threshold, is flagged.
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from suites.common.audit import Tally
from suites.reports.history import causes
from suites.reports.history.explain import CAUSE_SCORE, MECHANISM_SCORE

NO_CAUSE = ("machine state", "unexplained")  # nothing stored differs: no key
KEY = ("suite", "case_id", "variant", "machine")


def _name(change: dict) -> str:
    return (f"{change.get('suite')} {change.get('case_id')} {change.get('variant')} "
            f"{change.get('where', '')}").strip()


def _config(folder: Path) -> dict:
    try:
        state = json.loads((folder / "run.json").read_text())
        if isinstance(state.get("config"), dict) and state["config"]:
            return state["config"]
    except (OSError, ValueError, AttributeError):
        pass
    import yaml  # PyYAML (Hydra's own dependency): a plain read
    try:
        data = yaml.safe_load((folder / ".hydra" / "config.yaml").read_text())
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def _row(folder: Path, change: dict) -> dict | None:
    try:
        with open(folder / "measurements.csv", newline="") as f:
            for row in csv.DictReader(f):
                if (row.get("suite"), row.get("case_id"), row.get("variant")) == \
                        (change.get("suite"), change.get("case_id"), change.get("variant")):
                    return row
    except OSError:
        return None
    return None


def _same(stated, read) -> bool:
    """A stated value and the folder's: equal as numbers where both are, else as they are."""
    try:
        a, b = float(stated), float(read)
    except (TypeError, ValueError):
        return stated == read
    return a == b or (math.isnan(a) and math.isnan(b))


def folder_value(folder: Path, key: str, change: dict):
    """(found, value) of a cause key in a run folder; found False where it cannot be read."""
    if key.startswith(("counter:", "status")):
        row = _row(folder, change)
        if row is None:
            return False, None
        column = key.split(":", 1)[1] if key.startswith("counter:") else "status"
        return column in row, row.get(column)
    if key.startswith("config."):
        return True, causes.value_at({}, _config(folder), key)
    try:
        env = json.loads((folder / "env.json").read_text())
    except (OSError, ValueError):
        return False, None
    return True, causes.value_at(env, {}, key)


def check_cause(tally: Tally, change: dict) -> None:
    kind, key, where = change.get("cause", ""), change.get("cause_key", ""), _name(change)
    if kind in NO_CAUSE or not kind:
        tally.test(not key, "cause_allowed", where, f"regressions.json: cause {kind or '(none)'} "
                   f"with key {key!r}", "a change with no stored difference names no key")
        return
    if kind in CAUSE_SCORE:
        tally.test(causes.key_kind(key) == kind, "cause_allowed", where,
                   f"regressions.json: cause {kind} {key!r}",
                   f"causes.py: {key!r} is {causes.key_kind(key) or 'not a cause'}")
    else:
        tally.test(kind in MECHANISM_SCORE and bool(key), "cause_allowed", where,
                   f"regressions.json: cause {kind} {key!r}", "explain.py's kinds: "
                   + ", ".join([*CAUSE_SCORE, *MECHANISM_SCORE]))
        if kind not in ("counter", "status"):
            return  # kernels and figures: read from kernels.csv by the explanation
    compared = change.get("compared") or {}
    sides = [folder_value(Path(compared.get(side, "")), key, change)
             for side in ("before", "after")]
    if not all(found for found, _ in sides):
        return  # the run folders are not here to read: nothing to test against
    (_, before), (_, after) = sides
    stated = (change.get("cause_before"), change.get("cause_after"))
    tally.test(not _same(before, after) and _same(stated[0], before) and _same(stated[1], after),
               "cause_changed", where, f"regressions.json: {key} {stated[0]!r} -> {stated[1]!r}",
               f"the run folders compared ({compared.get('before')}, {compared.get('after')}): "
               f"{before!r} -> {after!r}")


def check_place(tally: Tally, change: dict, newest: int | None) -> None:
    indices = [change.get(k) for k in ("before_run_index", "first_run_index", "run_index",
                                       "after_run_index")]
    ordered = all(isinstance(i, int) for i in indices) and \
        indices[0] < indices[1] <= indices[2] <= indices[3]
    tally.test(ordered and newest is not None and indices[3] <= newest, "place_order",
               _name(change), "regressions.json: runs before / first / at / after "
               + " / ".join(str(i) for i in indices),
               f"regressions.json newest run of its suite and machine: {newest}")


def _exact_at(change: dict, run: int | None) -> bool:
    return change.get("first_run_index") == change.get("run_index") == \
        change.get("after_run_index") == run


def check_gate(tally: Tally, entry: dict, mine: list[dict], newest: int | None) -> None:
    where, at = _name(entry), entry.get("run_index")
    tally.test(entry.get("newest_run_index") == newest, "gate_place", where,
               f"regressions.json regressed: newest run #{entry.get('newest_run_index')}",
               f"regressions.json newest: #{newest}")
    tally.test(any(c.get("run_index") == at and c.get("regressed") for c in mine), "gate_place",
               where, f"regressions.json regressed at run #{at}",
               "regressions.json changes: no change flagged regressed there")
    later = [c["run_index"] for c in mine if c.get("steps") and isinstance(at, int)
             and newest is not None and at < c["run_index"] <= newest]
    tally.test(isinstance(at, int) and newest is not None and at <= newest and not later,
               "gate_place", where, f"regressed: the newest run's level began at run #{at}",
               f"newest run #{newest}; change points after it at {later}")
    tally.test(_exact_at(entry, newest) or bool(entry.get("reason")), "gate_place", where,
               f"regressed {entry.get('where')}, not at the newest run",
               f"regressions.json: reason {entry.get('reason')!r}")
    ratio = entry.get("ratio")
    tally.test(isinstance(ratio, (int, float)) and ratio > 1, "gate_place", where,
               "regressions.json: regressed", f"its ratio {ratio}")


def check_changes(tally: Tally, pages: dict) -> None:
    report = pages["json"]
    newest = {(n.get("suite"), n.get("machine")): n.get("run_index")
              for n in report.get("newest", [])}
    by_series: dict[tuple, list[dict]] = {}
    for change in report.get("changes", []):
        by_series.setdefault(tuple(change.get(k) for k in KEY), []).append(change)
    entries = report.get("regressed", [])
    for change in report.get("changes", []):
        last = newest.get((change.get("suite"), change.get("machine")))
        check_cause(tally, change)
        check_place(tally, change, last)
        if change.get("regressed"):
            tally.test(any(tuple(e.get(k) for k in KEY) == tuple(change.get(k) for k in KEY)
                           and e.get("run_index") == change.get("run_index") for e in entries),
                       "gate_place", _name(change), "regressions.json changes: regressed",
                       "regressions.json regressed: no entry at its place")
        limit = ((report.get("thresholds") or {}).get(change.get("suite")) or {}).get(
            "min_change")
        slower = [s.get("ratio") for s in (change.get("steps") or {}).values()
                  if isinstance(s.get("ratio"), (int, float)) and isinstance(limit, (int, float))
                  and s["ratio"] > 1 + limit]
        if _exact_at(change, last) and change.get("steps"):
            tally.test(not slower or bool(change.get("regressed")), "gate_place", _name(change),
                       f"a change point at the newest run, x{max(slower or [1]):.3g}",
                       f"regressions.json: not regressed (practical threshold {limit})")
    for entry in entries:
        check_gate(tally, entry, by_series.get(tuple(entry.get(k) for k in KEY), []),
                   newest.get((entry.get("suite"), entry.get("machine"))))
