"""An A/B design's plan, kept as ab.json in its folder: the two checkouts (what each was asked as
and the commit it resolved to), the sweep's overrides, the number of pairs, whether A/A runs are
added, and the order of the runs. A rerun of the same command with the same --out reads it back
and goes on where the runs stop; another plan in that folder is refused, naming what differs.

Order. Pair i runs A then B when i is even, B then A when odd, so that a drift of the machine
across the session (a neighbour starting, the clock warming) favours neither side: over two
pairs a linear trend cancels. With A/A runs (--aa), a third run of A's code, A2, joins each pair
on the side B is not: A B A2, then A2 B A. B/A and A2/A then each alternate which runs first.

What each run is: `run_suite.py` with the sweep's overrides and the design's defaults
(RUN_DEFAULTS, unless an override names the key): the quick timing preset, no profile pass, no
peak probe, no Triton counters and no progress lines. The pairs' power comes from more runs, not
longer ones: two runs of one commit differ mostly by what each process lands on (a case 10-40%
apart between processes while its rounds agree within 1-2%), which no number of rounds inside a
run averages away, so a run's seconds are best spent on another pair (docs/compare.md).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from suites.common.errors import ConfigError, InputError
from suites.results import atomic
from suites.results.ab_folders import A, A2, AB_JSON, B

# Each run of a design: its time in the pairs is what matters, so what does not change a row's
# time per call is left out (an override of the same key wins). Measured: docs/compare.md.
RUN_DEFAULTS = ("timing=quick", "profile=off", "calibrate=false", "triton_counters=off",
                "progress=false")
# docs/compare.md: on this busy 2-core host 8 pairs found a 10% change in 3 of 6 rows by their
# time, 12 pairs in 6 of 6; the bench: 80% against 96% of rows at a 2% drift.
DEFAULT_PAIRS = 12
MIN_PLANNED_PAIRS = 3  # intervals.MIN_PAIRS: fewer and no row can be judged


@dataclass(frozen=True)
class Checkout:
    label: str     # A or B
    asked: str     # the revision or path the user gave
    commit: str    # the commit it resolved to (a path's HEAD; "" where it is no git checkout)
    path: str      # the folder its run_suite.py runs from (a worktree for a revision)
    dirty: bool = False  # a path checkout with uncommitted changes: its commit is not all of it
    revision: bool = False  # a revision (run from a worktree of its own), not a path


@dataclass
class Plan:
    a: Checkout
    b: Checkout
    overrides: list[str]
    pairs: int
    aa: bool = False
    # run name -> its state ("done", "failed: <why>") and seconds, kept as the runs end
    runs: dict[str, dict] = field(default_factory=dict)

    def order(self) -> list[tuple[int, str]]:
        """(pair, label) in the order the runs are made."""
        out = []
        for i in range(self.pairs):
            first, second = (A, B) if i % 2 == 0 else (B, A)
            if self.aa:
                out += [(i, A), (i, B), (i, A2)] if i % 2 == 0 else [(i, A2), (i, B), (i, A)]
            else:
                out += [(i, first), (i, second)]
        return out

    def checkout(self, label: str) -> Checkout:
        return self.b if label == B else self.a

    def arguments(self, code: Path | None = None) -> list[str]:
        """The overrides a run gets: the sweep's, then the design's defaults it leaves, each
        only where the checkout `code` knows it (an older revision without triton_counters
        would refuse the override and every run of it fail)."""
        given = {o.lstrip("+~").split("=", 1)[0] for o in self.overrides}
        return [*self.overrides, *(d for d in RUN_DEFAULTS if d.split("=", 1)[0] not in given
                                   and (code is None or knows(Path(code), d)))]

    def same_design(self, other: "Plan") -> list[str]:
        """What differs between two plans for one folder, a phrase each ([]: the same design;
        more pairs than `other` is the same design extended, fewer is another)."""
        diffs = []
        if self.pairs < other.pairs:
            diffs.append(f"pairs: {other.pairs} there, {self.pairs} now (more pairs extend a "
                         "design; fewer would leave runs out)")
        for name in ("overrides", "aa"):
            if getattr(self, name) != getattr(other, name):
                diffs.append(f"{name}: {getattr(other, name)} there, {getattr(self, name)} now")
        for label in (A, B):
            mine, theirs = self.checkout(label), other.checkout(label)
            if (mine.commit or mine.path) != (theirs.commit or theirs.path):
                diffs.append(f"{label}: {theirs.asked} ({theirs.commit or theirs.path}) there, "
                             f"{mine.asked} ({mine.commit or mine.path}) now")
        return diffs


def save(plan: Plan, out_dir: Path) -> None:
    atomic.write_text(Path(out_dir) / AB_JSON, json.dumps(asdict(plan), indent=2) + "\n")


def load(out_dir: Path) -> Plan | None:
    """The plan kept in out_dir; None where there is none; an InputError where it is garbled."""
    path = Path(out_dir) / AB_JSON
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        sides = [Checkout(**{"revision": "/checkouts/" in str(record[k].get("path", "")),
                             **record[k]}) for k in ("a", "b")]
        return Plan(*sides, list(record["overrides"]),
                    int(record["pairs"]), bool(record.get("aa", False)),
                    dict(record.get("runs") or {}))
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: not an A/B plan fusebench wrote ({exc}); pass another --out "
                         "or remove it") from None


def knows(code: Path, override: str) -> bool:
    """Whether a checkout's config has the key of `key=value`: a group's option file
    (conf/timing/quick.yaml) or a top-level key of conf/config.yaml."""
    key, value = override.split("=", 1)
    conf = code / "conf"
    if (conf / key).is_dir():
        return (conf / key / f"{value}.yaml").is_file()
    try:
        text = (conf / "config.yaml").read_text(encoding="utf-8")
    except OSError:
        return False
    return any(line.startswith(f"{key}:") for line in text.splitlines())


def check_pairs(pairs: int) -> int:
    if pairs < MIN_PLANNED_PAIRS:
        raise ConfigError(f"--pairs {pairs}: at least {MIN_PLANNED_PAIRS} (a row's interval "
                          "needs the spread of 3 pairs)")
    return pairs
