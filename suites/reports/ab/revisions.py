"""A range of revisions, REV1..REV2, walked in order, each commit against its parent: one A/B
design per commit (<out>/<n>_<commit>/), and range.md, the rows each commit moved, with their
B/A and 99% interval: bisection's first step, which commit moved this row. The commits are
git's first-parent line from REV1 (left out, as git's range does) to REV2; a merge is judged
against its first parent, what the branch it closes changed, all at once.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd

from suites.common.errors import ConfigError
from suites.common.numbers import plain
from suites.reports.ab import checkouts
from suites.reports.ab.design import run_design
from suites.reports.kit.change import Change
from suites.results import atomic

RANGE_MD = "range.md"
MAX_COMMITS = 50  # each commit is a design of its own: past this, a range is a mistake


def commits_in(span: str, repo: Path = checkouts.REPO) -> list[tuple[str, str]]:
    """(commit, subject) of each commit in REV1..REV2, oldest first."""
    try:
        out = subprocess.run(["git", "log", "--first-parent", "--reverse", "--format=%H %s",
                              span], cwd=repo, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ConfigError(f"--ab {span}: git log failed: {exc}") from None
    if out.returncode != 0:
        raise ConfigError(f"--ab {span}: not a range of {repo} "
                          f"({out.stderr.strip().splitlines()[-1:] or ['git log failed']})")
    commits = [tuple(line.split(" ", 1)) if " " in line else (line, "")
               for line in out.stdout.splitlines() if line]
    if not commits:
        raise ConfigError(f"--ab {span}: no commit in that range (REV1 is left out, as git's "
                          "range does: give the commit before the first one to judge)")
    if len(commits) > MAX_COMMITS:
        raise ConfigError(f"--ab {span}: {len(commits)} commits, each a design of its own; at "
                          f"most {MAX_COMMITS}: give a shorter range")
    return commits


def moved_lines(frame: pd.DataFrame) -> list[str]:
    """The rows a design called faster or slower, a line each."""
    called = frame[frame["verdict"].isin([Change.FASTER, Change.SLOWER])]
    return [f"{r.case_id} {r.variant}: {r.verdict}, B/A {plain(r.ratio)} (99% CI "
            f"{plain(r.ci_low)} to {plain(r.ci_high)})" for r in called.itertuples()]


def range_text(span: str, done: list[tuple[str, str, Path]]) -> str:
    lines = [f"# fusebench: which commit moved which row, {span}", "",
             "Each commit against its parent, an A/B design each (its folder holds its "
             "compare.html); a row is listed where its 99% interval of B/A excludes 1.", ""]
    for commit, subject, folder in done:
        frame = pd.read_csv(folder / "compare.csv")
        moved = moved_lines(frame)
        lines.append(f"## {commit[:12]} {subject}")
        lines.append("")
        lines.append(f"folder: {folder.name}; {len(frame)} rows, {len(moved)} moved")
        lines += [f"- {line}" for line in moved] or ["- no row moved"]
        lines.append("")
    return "\n".join(lines)


def run_range(span: str, overrides: list[str], pairs: int, aa: bool, floor: float,
              out_dir: Path, say=print) -> Path:
    commits = commits_in(span)
    say(f"{span}: {len(commits)} commit(s), each against its parent: "
        + ", ".join(c[:12] for c, _ in commits))
    out_dir.mkdir(parents=True, exist_ok=True)
    done = []
    for n, (commit, subject) in enumerate(commits, 1):
        folder = out_dir / f"{n:02d}_{commit[:12]}"
        say(f"\n== {n} of {len(commits)}: {commit[:12]} {subject}")
        run_design(f"{commit}^", commit, overrides, pairs, aa, floor, folder, root=out_dir,
                   say=say)
        done.append((commit, subject, folder))
    checkouts.remove_worktrees(out_dir)
    text = range_text(span, done)
    atomic.write_text(out_dir / RANGE_MD, text + "\n")
    say("\n" + text)
    say(f"range folder: {out_dir}")
    return out_dir
