"""Before and after, on a noisy machine: two versions of the code timed in alternation.

    python -m suites.compare --ab HEAD~1 HEAD -- suite=matmul_add suite.dtypes=[float32]
    python -m suites.compare --ab main . --pairs 16 --out cmp/ -- suite=mlp timing=quick
    python -m suites.compare --ab v1.2..HEAD -- suite=matmul_add   # each commit against its parent

A and B are each a git revision of this repository (checked out as a worktree, run with this
environment) or a path to another checkout (`.`: this one, uncommitted edits and all). The same
sweep (the overrides after --) runs N times for each, A B, B A, A B, ...: each run a normal run
folder under <out>/runs/. Each row's B/A is then judged by its pairs (suites/reports/ab/
pairs.py): what the machine did to both runs of a pair cancels in its ratio, and what each run
landed on by itself is measured from the pairs' spread, not assumed. <out> becomes a compare folder (compare.csv,
compare.md, compare.html with each row's pair ratios), audited like any; --aa adds an A/A run of
A's code to each pair and its own compare folder (<out>/aa/), the design's false alarms seen.

The same command with the same --out resumes: finished runs are kept, a cut one is finished,
the rest made; what the design still lacks is said before it goes on. A range REV1..REV2 makes
one design per commit (against its parent) under <out>/<n>_<commit>/ and ends with the rows each
commit moved (range.md): which commit moved this row.
"""
from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from suites.common import cli
from suites.common.errors import ConfigError
from suites.reports.ab.design import run_design
from suites.reports.ab.plan import DEFAULT_PAIRS
from suites.reports.ab.revisions import run_range
from suites.reports.compare import decision

DEFAULT_ROOT = Path("results") / "compare"


def parser() -> argparse.ArgumentParser:
    p = cli.Parser(prog="python -m suites.compare", description=__doc__,
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ab", nargs="+", required=True, metavar="REV",
                   help="A and B (revisions or checkouts), or one range REV1..REV2")
    p.add_argument("--pairs", type=int, default=DEFAULT_PAIRS,
                   help="pairs of runs (default %(default)s: an mde of about 4%% where a "
                        "row's pairs spread by 2%%; docs/compare.md)")
    p.add_argument("--aa", action="store_true",
                   help="add an A/A run of A's code to each pair, compared in <out>/aa/")
    p.add_argument("--out", type=Path, default=None,
                   help=f"the design's folder (default {DEFAULT_ROOT}/ab_<time>); the same "
                        "--out again resumes it")
    p.add_argument("--floor", type=float, default=decision.FLOOR,
                   help="equivalence band, as compare's (default %(default)s)")
    return p


def split_overrides(argv: list[str]) -> tuple[list[str], list[str]]:
    """The command's own arguments, and the sweep's overrides after `--`."""
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1:]
    return argv, []


def _out_dir(out: Path | None, stem: str = "ab") -> Path:
    if out is not None:
        if out.exists() and not out.is_dir():
            raise ConfigError(f"--out {out}: exists and is not a folder")
        return out
    return DEFAULT_ROOT / f"{stem}_{datetime.now().strftime('%Y-%m-%d_%H-%M-%S')}"


def command(args, overrides: list[str]) -> Path:
    if len(args.ab) == 1 and ".." in args.ab[0]:
        return run_range(args.ab[0], overrides, args.pairs, args.aa, args.floor,
                                   _out_dir(args.out, "ab_range"))
    if len(args.ab) != 2:
        raise ConfigError(f"--ab {' '.join(args.ab)}: give two (A B: revisions or checkouts) "
                          "or one range REV1..REV2")
    return run_design(args.ab[0], args.ab[1], overrides, args.pairs, args.aa, args.floor,
                      _out_dir(args.out))


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own, overrides = split_overrides(argv)
    return cli.run_main(parser(), lambda args: command(args, overrides), own)
