"""The runs of an A/B design, made in the plan's order, each a normal run folder under runs/ and
its console kept as its run's log (runs/<name>.log).

Resuming: a run whose run.json says complete is kept; one that was cut short is finished with
resume=true (its finished cases kept, as any run resumes); one never started is made. What a
run ended as and how long it took go into ab.json as each ends, so an interrupted design says
what it lacks, and its console names the runs still to make before it makes them.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from suites.reports.ab import checkouts, plan as plans
from suites.reports.ab.plan import Plan
from suites.results.ab_folders import A2, run_folder, run_name
from suites.results.journal import COMPLETE
from suites.results.reader import read_state

DONE = "done"


def _complete(folder: Path) -> bool:
    state = read_state(folder)
    return bool(state) and state.get("state") == COMPLETE


def _started(folder: Path) -> bool:
    return (folder / "run.json").is_file()


def missing(plan: Plan, out_dir: Path) -> list[str]:
    """The runs of the plan whose folder is not complete, by name, in order."""
    return [run_name(i, label) for i, label in plan.order()
            if not _complete(run_folder(out_dir, i, label))]


def command_of(plan: Plan, pair: int, label: str, out_dir: Path) -> list[str]:
    folder = run_folder(out_dir, pair, label)
    code = Path(plan.checkout(label).path)
    extra = ["resume=true"] if _started(folder) else []
    return [sys.executable, str(code / checkouts.ENTRY), *plan.arguments(code), *extra,
            f"hydra.run.dir={folder.resolve()}"]


def make_run(plan: Plan, pair: int, label: str, out_dir: Path) -> dict:
    """One run, its console to its log; what it ended as and its seconds."""
    folder = run_folder(out_dir, pair, label)
    folder.parent.mkdir(parents=True, exist_ok=True)
    command = command_of(plan, pair, label, out_dir)
    code = Path(plan.checkout(label).path)
    started = time.perf_counter()
    with open(folder.parent / f"{run_name(pair, label)}.log", "a", encoding="utf-8") as log:
        log.write("$ " + " ".join(command) + "\n")
        log.flush()
        returncode = _wait(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                            env=checkouts.run_environment(code)))
    seconds = time.perf_counter() - started
    if _complete(folder):
        return {"state": DONE, "seconds": round(seconds, 1)}
    return {"state": f"failed: exit {returncode}, see {folder.parent.name}/"
                     f"{run_name(pair, label)}.log", "seconds": round(seconds, 1)}


def _wait(process: subprocess.Popen, grace_s: float = 60.0) -> int:
    """The run's exit code. On Ctrl-C (which reaches the run too: one process group) the run is
    given time to write its rows and mark itself interrupted, so a resume finishes it."""
    try:
        return process.wait()
    except KeyboardInterrupt:
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        raise


def make_all(plan: Plan, out_dir: Path, say=print) -> None:
    """Every run the plan lacks, in its order; ab.json updated as each ends."""
    todo = [(i, label) for i, label in plan.order()
            if not _complete(run_folder(out_dir, i, label))]
    total = len(plan.order())
    for n, (pair, label) in enumerate(todo, 1):
        name = run_name(pair, label)
        code = plan.checkout(label).asked + (", again" if label == A2 else "")
        say(f"run {total - len(todo) + n} of {total}: {name} ({code})")
        record = make_run(plan, pair, label, out_dir)
        plan.runs[name] = record
        plans.save(plan, out_dir)
        say(f"  {name}: {record['state']} in {record['seconds']:.0f} s")
