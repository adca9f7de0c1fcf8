"""The sample outputs README.md and docs/ show, each made by running its command at this commit
(`python -m suites.tools.docs --samples`), stamped with the command, the commit and the machine:

    $ python -m suites.analyze tests/fixtures/...
    # commit 1a2b3c4

A run's numbers depend on the machine and its load: those samples are what one run printed, the
stamp says where. A trace's analysis depends on nothing else: `--check` runs it again and
compares.
"""
from __future__ import annotations

import json
import platform
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
RUN = "python run_suite.py suite=matmul_add suite.dtypes=[float32]"
TRACE = "tests/fixtures/gpu_traces/a100_triton_pointwise.json.gz"


@dataclass(frozen=True)
class Sample:
    name: str
    command: str  # as a user types it, from the repository's folder
    produce: Callable[[Path | None], str]  # the output, given a scratch folder
    machine_free: bool = False  # the same output on any machine: --check compares it


def _python(command: str, *extra: str, cwd: Path = ROOT) -> str:
    words = shlex.split(command)
    assert words[0] == "python"
    done = subprocess.run([sys.executable, *words[1:], *extra], cwd=cwd, capture_output=True,
                          text=True, timeout=3600)
    if done.returncode not in (0, 1):  # 1: a row that is not a result, said in the output
        raise RuntimeError(f"{command}: exit {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def _run(work: Path, folder: str) -> Path:
    out = work / folder
    if not (out / "measurements.csv").is_file():
        (work / f"{folder}.txt").write_text(_python(RUN, f"hydra.run.dir={out}"))
    return out


TABLE_ROWS = 6  # of the run's table shown in the README: its quick start stays short


def run_output(work: Path) -> str:
    """The end of what a run prints: its table of rows (the first few), what to read with care,
    the report's answer and the audit of its pages."""
    out = _run(work, "a")
    lines = (work / "a.txt").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "us/call" in line and "variant" in line)
    # The table ends where the lines about the other rows begin (summary.py), or a blank line.
    after = ("skipped:", "failed:", "incorrect:", "noisy:", "read with care:")
    end = next((i for i in range(start + 1, len(lines))
                if not lines[i].strip() or lines[i].startswith(after)), len(lines))
    rows = lines[start + 1:end]
    if len(rows) > TABLE_ROWS:
        rows = rows[:TABLE_ROWS] + [f"  ... ({len(rows)} ok rows in all)"]
    text = "\n".join([lines[start], *rows, *lines[end:]])
    return text.replace(str(out), "results/matmul_add/<time>") + "\n"


def compare_output(work: Path) -> str:
    """A second run of the same command, compared with the first: an A/A comparison."""
    a, b = _run(work, "a"), _run(work, "b")
    text = _python(f"python -m suites.compare {a} {b} --out {work / 'cmp'}")
    return (text.replace(str(a), "<run A>").replace(str(b), "<run B>")
            .replace(str(work / "cmp"), "results/compare/<time>"))


def analyze_output(work: Path | None = None) -> str:
    return _python(f"python -m suites.analyze {TRACE}")


SAMPLES = {s.name: s for s in (
    Sample("run", RUN, run_output),
    Sample("compare", f"python -m suites.compare <run A> <run B>   # two runs of: {RUN}",
           compare_output),
    Sample("analyze", f"python -m suites.analyze {TRACE}", analyze_output, machine_free=True),
)}


def normalised(text: str) -> str:
    """What may differ between two runs of a machine-free command: the seconds it took."""
    return re.sub(r"(read|analysed) in [0-9.]+ s", r"\1 in - s", text)


def stamp_prefix(sample: Sample) -> str:
    return f"$ {sample.command}\n# "


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return done.stdout.strip() + (" + changes" if dirty else "") if done.returncode == 0 \
        else "unknown"


def _machine(work: Path) -> str:
    env_file = work / "a" / "env.json"
    env = json.loads(env_file.read_text()) if env_file.is_file() else {}
    cpu = env.get("cpu") or platform.processor() or platform.machine()
    threads = env.get("threads")
    return f"{cpu}, torch {env.get('torch', '?')}" + (f", {threads} thread(s)" if threads else "")


def make_all() -> dict[str, str]:
    """Every sample, made now, stamped."""
    commit = _commit()
    with tempfile.TemporaryDirectory(prefix="fusebench_docs_") as scratch:
        work = Path(scratch)
        made = {}
        for name, sample in SAMPLES.items():
            print(f"docs: running {sample.command}", file=sys.stderr)
            text = sample.produce(work)
            where = f"commit {commit}" + ("" if sample.machine_free else f", {_machine(work)}")
            made[name] = f"{stamp_prefix(sample)}{where}\n{text}"
    return made
