"""gpu_check's bookkeeping: one JSON line per result, on disk as soon as it is known; a clock per
section; the summary, rewritten after every section so a run killed at the lease's limit still
leaves one.

A row: {"section", "item", "status", "t_s", ...numbers, "error"}; status is one of STATUSES.
`failed`, `noisy` and `deadline` rows make the exit status 1, as the harness's own exit status
treats them: `noisy` is a row measured but not clean (the machine was busy), kept apart from
`failed` so the table does not call working code broken; `skipped` says the item cannot run
here (no CUDA, a config the target's pruning drops, a variant this GPU lacks).
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Iterable

from suites.harness.variant_passes import short_error

STATUSES = ("ok", "failed", "noisy", "deadline", "skipped")
BAD = ("failed", "noisy", "deadline")
WIDTH = 100  # columns of a printed line


def _plain(value):
    """JSON without NaN/Infinity (not JSON; strict readers refuse them): None instead."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


class Recorder:
    """Appends rows to `path`, flushed at once: what a killed run measured is on disk.

    The check's own process starts the file afresh; each section's process appends to it
    (`append`, with the check's start as `started`, epoch seconds, so `t_s` runs on one clock
    for every row), and the check reads their rows back (`reload`) after each section."""

    def __init__(self, path: Path, echo: Callable[[str], None] = print, append: bool = False,
                 started: float | None = None):
        self.path, self.echo = Path(path), echo
        self.rows: list[dict] = []
        self.section_s: dict[str, float] = {}  # seconds each section took, for the summary
        self.started = time.time() if started is None else started
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not append:
            self.path.write_text("")  # this check's rows only; a new check starts afresh
        # O_APPEND for every writer: each line lands at the end, after the other process's.
        self._file = open(self.path, "a")

    def add(self, section: str, item: str, status: str, **fields) -> dict:
        if status not in STATUSES:
            raise ValueError(f"status {status!r} is not one of {STATUSES}")
        row = _plain({"section": section, "item": item, "status": status,
                      "t_s": round(time.time() - self.started, 1), "pid": os.getpid(),
                      **fields})
        self.rows.append(row)
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()
        note = row.get("error") or row.get("note") or ""
        self.echo(fit(f"[{row['t_s']:>5.0f}s] {section:<11} {status:<8} {item}"
                       + (f"  {note}" if note else "")))
        return row

    def close(self) -> None:
        self._file.close()

    def reload(self) -> None:
        """Every row of the file, this process's and its sections' (a line cut short by a
        killed process is skipped: it was never a whole row)."""
        rows = []
        for line in self.path.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and row.get("status") in STATUSES:
                rows.append(row)
        self.rows = rows

    def counts(self, section: str | None = None) -> Counter:
        return Counter(r["status"] for r in self.rows
                       if section is None or r["section"] == section)

    def exit_code(self) -> int:
        return 1 if any(r["status"] in BAD for r in self.rows) else 0


def fit(line: str, width: int = WIDTH) -> str:
    """`line` cut to `width` columns, "..." saying so. Unlike suites/common/text.cut it keeps the
    line's spacing: these are table rows, whose columns must stay aligned."""
    return line if len(line) <= width else line[:width - 3] + "..."


class Clock:
    """A section's deadline: its own budget, plus what the sections before it left unused."""

    def __init__(self, budget_s: float, slack_s: float = 0.0):
        self.budget_s = budget_s
        self.end = time.monotonic() + budget_s + max(0.0, slack_s)

    def left(self) -> float:
        return self.end - time.monotonic()

    def over(self) -> bool:
        return self.left() <= 0

    def reason(self) -> str:
        return f"not started: the section's deadline ({self.budget_s:.0f} s) had passed"


Work = Callable[[], "dict | None"]
GRACE_S = 15.0  # an item may run this far past its section's deadline before it is stopped


class ItemOverran(BaseException):
    """Raised into an item that ran past its section's deadline and the grace. Not an
    Exception: code in between (Triton's front end wraps what its compile raises into a
    CompilationError) must not turn the stop into a row that reads as a kernel bug."""


@contextlib.contextmanager
def item_alarm(seconds: float):
    """ItemOverran in this (the main) thread after `seconds`: one slow item (a cold autotune
    of a large case) must not take the lease's remaining minutes from the sections after it."""
    def overran(signum, frame):
        raise ItemOverran(f"stopped after running {seconds:.0f} s, past the section's deadline")

    previous = signal.signal(signal.SIGALRM, overran)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.01))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_items(rec: Recorder, section: str, clock: Clock,
              items: Iterable[tuple[str, Work]], hard: bool = False) -> None:
    """Each item in turn (a generator may plan later items from earlier results). Past the
    deadline an item is a `deadline` row; with `hard`, an item still running GRACE_S after it
    is stopped there and is a `deadline` row too; an item that raises is a `failed` row; a work
    that returns a dict is one row (`status` in it, ok by default); one that returns None
    recorded its own rows."""
    iterator = iter(items)
    while True:
        try:
            name, work = next(iterator)
        except StopIteration:
            return
        except Exception as exc:  # the plan itself broke: said once, and the next section goes on
            rec.add(section, "planning the section's items", "failed", error=short_error(exc))
            return
        if clock.over():
            rec.add(section, name, "deadline", error=clock.reason())
            continue
        started = time.monotonic()
        alarm = item_alarm(clock.left() + GRACE_S) if hard else contextlib.nullcontext()
        try:
            with alarm:
                fields = work()
        except ItemOverran as exc:
            rec.add(section, name, "deadline", error=str(exc),
                    seconds=round(time.monotonic() - started, 2))
            continue
        except Exception as exc:  # one item's failure is a row; the next item goes on
            rec.add(section, name, "failed", error=short_error(exc),
                    seconds=round(time.monotonic() - started, 2))
            continue
        if fields is not None:
            fields = dict(fields)
            status = fields.pop("status", "ok")
            fields.setdefault("seconds", round(time.monotonic() - started, 2))
            rec.add(section, name, status, **fields)


def table(rows: list[dict], columns: list[str], width: int = WIDTH) -> list[str]:
    """Rows as fixed-width text lines, each cut to `width`."""
    def text(value) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)

    cells = [[text(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return [fit(line.rstrip(), width) for line in lines]
