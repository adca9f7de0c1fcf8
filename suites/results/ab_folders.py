"""The layout of an A/B design's folder (python -m suites.compare --ab), for the commands that
write it and those that read it (history): ab.json, the plan, and runs/<name>, a normal run
folder per run, named by its pair and side: p01_A, p01_B, p01_A2 (A2: A's code again, the A/A
run --aa adds)."""
from __future__ import annotations

import re
from pathlib import Path

AB_JSON = "ab.json"
RUNS_DIR = "runs"
A, B, A2 = "A", "B", "A2"
_RUN_NAME = re.compile(r"^p(\d+)_(A|B|A2)$")


def run_name(pair: int, label: str) -> str:
    """A run's folder name under runs/ (pairs counted from 0 here, from 1 in the name)."""
    return f"p{pair + 1:02d}_{label}"


def run_folder(design: Path, pair: int, label: str) -> Path:
    return Path(design) / RUNS_DIR / run_name(pair, label)


def side_of(folder: Path) -> tuple[Path, str] | None:
    """(the design's folder, its side: A, B or A2) of a run folder a design made; None for any
    other folder."""
    folder = Path(folder)
    match = _RUN_NAME.match(folder.name)
    design = folder.parent.parent
    if match is None or folder.parent.name != RUNS_DIR or not (design / AB_JSON).is_file():
        return None
    return design, match.group(2)
