"""What two single runs can see, and the A/B design that would see more: plain compare's last
summary lines. Two runs of one commit minutes apart land in different machine states (12-20%
apart on this 2-core VM), which no number of rounds inside them resolves; pairs of runs timed
in turn do (suites/reports/ab). The command is built from the runs' own record: each side's
commit (env.json) and the overrides it ran with (.hydra/overrides.yaml), so it can be pasted.
"""
from __future__ import annotations

import shlex
from pathlib import Path

import pandas as pd
import yaml

from suites.reports.compare.loading import Side
from suites.reports.kit.change import Change

# Overrides that belong to one run's folder or resumption, not to the sweep.
PER_FOLDER = ("hydra.run.dir=", "hydra.sweep.dir=", "resume=")


def _commit(side: Side) -> str:
    commits = list(dict.fromkeys(str(e.get("fusebench_commit")) for e in side.envs
                                 if e.get("fusebench_commit")))
    return commits[0] if len(commits) == 1 else f"<{side.label}'s commit>"


def _overrides(side: Side) -> list[str] | None:
    for run in side.runs:
        try:
            given = yaml.safe_load((Path(run) / ".hydra" / "overrides.yaml").read_text())
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(given, list):
            return [str(o) for o in given if not str(o).startswith(PER_FOLDER)]
    return None


def ab_command(a: Side, b: Side) -> str:
    overrides = _overrides(a)
    tail = ("<the run's overrides>" if overrides is None else
            " ".join(shlex.quote(o) for o in overrides))
    return f"python -m suites.compare --ab {_commit(a)} {_commit(b)} -- {tail}"


def hint_lines(frame: pd.DataFrame, a: Side, b: Side) -> list[str]:
    """What these two runs could see (the median mde of the rows judged) and the command that
    times the two commits in turn; none where every judged row was decided already."""
    judged = frame[frame["verdict"].isin(list(Change))]
    if judged.empty or not (judged["verdict"] == Change.INCONCLUSIVE).any():
        return []
    mde = judged["mde"].dropna()
    return [f"two single runs: a change below {mde.median():.0%} (the median row's mde) goes "
            "unseen here; pairs of runs timed in turn measure the drift instead of assuming it "
            f"and see a few percent (docs/compare.md): {ab_command(a, b)}"]
