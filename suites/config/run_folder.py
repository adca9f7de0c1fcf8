"""The run folder a job runs in: checked (a folder of its own, writable, no other run in it, or
the interrupted run of the same config to resume), a sweep job's own earlier attempt found, and
what a failed start leaves behind cleaned up.

A run folder the user named may exist already, with Hydra's files from another run or tool in
it: what existed before Hydra started is never removed. `note_existing` records it from the
command line before Hydra runs; `fail` removes only what this run created.
"""
from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

from suites.common.errors import ConfigError
from suites.config.folder_lock import LOCK_FILE
from suites.config.run_spec import resume_problem, same_config
from suites.harness.spec import RunSpec
from suites.results.journal import COMPLETE
from suites.results.reader import read_state

# Files Hydra writes in a run folder before the job runs, and the lock of the run that owns it
# (folder_lock.py); a folder holding nothing else has no run in it yet.
HYDRA_FILES = {".hydra", "run_suite.log"}
STARTUP_FILES = HYDRA_FILES | {LOCK_FILE}


class _Before:
    """What the command line named, and what was in that folder before Hydra started."""
    named: Path | None = None
    existed: dict[Path, set[str]] = {}


def note_existing(run_dir: str | None) -> None:
    """Before Hydra runs: the `hydra.run.dir` given (if any) and the Hydra files already in it."""
    _Before.named = Path(run_dir) if run_dir else None
    _Before.existed = ({Path(run_dir).resolve(): {n for n in STARTUP_FILES
                                                  if (Path(run_dir) / n).exists()}}
                       if run_dir and Path(run_dir).is_dir() else {})


def fail(message: str, out_dir: Path | None = None) -> NoReturn:
    """One line, exit 2. What this run created goes (Hydra's files, its lock, and the folder
    if it made it); nothing else is ever deleted. Without `out_dir` nothing is removed: a folder
    another run owns (folder_lock.FolderTaken), or a run that stopped with rows to keep."""
    if out_dir is not None and out_dir.is_dir():
        for name in STARTUP_FILES - _Before.existed.get(out_dir.resolve(), set()):
            _remove(out_dir / name)
        if out_dir.resolve() not in _Before.existed:
            # Only if now empty; a default folder's results/<suite>/ parent too, if empty.
            for folder in [out_dir] + ([out_dir.parent] if _Before.named is None else []):
                try:
                    folder.rmdir()
                except OSError:
                    break
    print(f"fusebench: error: {message}", file=sys.stderr)
    sys.exit(2)


def _remove(path: Path) -> None:
    if path.is_dir():
        for child in path.iterdir():
            child.unlink(missing_ok=True)
        path.rmdir()
    else:
        path.unlink(missing_ok=True)


def resume_args(folder: Path, args: list[str], key: str = "hydra.run.dir") -> list[str]:
    """`args` with resume=true and the run (or sweep) folder, quoted for a shell; the folder
    absolute, as the command is pasted in any folder (a relative one named another there)."""
    kept = [a for a in args if not a.startswith((f"{key}=", "resume="))]
    return [shlex.quote(a) for a in kept + ["resume=true", f"{key}={Path(folder).absolute()}"]]


def check_run_dir(out_dir: Path, spec: RunSpec) -> None:
    """The run folder must be a folder of its own, writable, and hold no other run (or, to
    resume, the interrupted run of the same config)."""
    if spec.resume:
        problem = resume_problem(read_state(out_dir), spec.config)
        if problem:
            raise ConfigError(f"resume=true: {out_dir} {problem}")
    left = sorted(p.name for p in out_dir.iterdir() if p.name not in STARTUP_FILES)
    if left and not spec.resume:
        raise ConfigError(f"hydra.run.dir={out_dir}: the folder is not empty ({', '.join(left[:4])}"
                          f"{' ...' if len(left) > 4 else ''}); give a new folder (a run never "
                          "mixes its files with another's), or resume=true to finish the run in it")
    probe = out_dir / ".write_probe"
    try:
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"hydra.run.dir={out_dir}: cannot write there ({exc.strerror})") from None


def job_resume(spec: RunSpec, out_dir: Path) -> RunSpec | None:
    """A multirun job that finds its own earlier attempt in its folder: requeued by the cluster
    (preempted or out of time, with the same overrides) or a sweep run again with resume=true.
    An unfinished attempt is resumed, without being asked (a requeue cannot ask); a complete
    one of the same config is left as it is (None: nothing to do); a job that never wrote a
    run.json starts afresh. A single run is resumed only when asked; a sweep's job resumed
    alone stays in its sweep."""
    state = read_state(out_dir)
    if spec.job is None:
        if spec.resume:
            return replace(spec, job=(state or {}).get("job"))
        return spec
    if state is None or (state.get("job") or {}).get("num") != spec.job["num"]:
        return replace(spec, resume=False)
    if state.get("state") == COMPLETE:  # another config's run is refused by check_run_dir
        return None if same_config(state, spec.config) else spec
    print(f"fusebench: job {spec.job['num']}: resuming the unfinished run in {out_dir} "
          f"({state.get('state')}, {state.get('done')} of {state.get('planned')} rows)",
          file=sys.stderr)
    return replace(spec, resume=True)
