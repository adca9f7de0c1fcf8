"""fusebench entry point: compose the config -> typed run spec -> run -> tables -> report.

    python run_suite.py suite=matmul_add                   # the default sweep on this machine
    python run_suite.py suite.sizes=[64,256,1024] timing=quick device=cpu
    python run_suite.py -m suite.dtypes=[float32],[bfloat16]
"""
from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import replace
from pathlib import Path

import hydra
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from suites.config.group_choices import check_group_choices
from suites.config.hydra_sweep import (SweepManifest, check_syntax, fixed_overrides,
                                       is_hydra_override, planned_jobs, sweep_params)
from suites.common.errors import ConfigError
from suites.harness.runner import run
from suites.harness.stopping import Interrupted, preempted, stop_on_signals
from suites.reports.run.build import write_report
from suites.reports.run.summary import summary_table
from suites.results.exit_status import exit_status
from suites.results.journal import COMPLETE
from suites.results.reader import read_state
from suites.results.run_folders import sweep_jobs, sweep_problems
from suites.config.run_spec import build_run_spec, resume_problem, same_config

CONF_DIR = Path(__file__).resolve().parent / "conf"


# Every job of a multirun is checked before the first one runs. Hydra runs a sweep's jobs one
# after another and composes each job's config only when its turn comes, so a bad value in job 3
# used to show up after jobs 0-2 had run for minutes. The sweep is expanded the way Hydra's basic
# sweeper does (the product of the swept values), and each job's config is composed and turned
# into a run spec; the first bad job is one line naming it.
MULTIRUN_FLAGS = ("-m", "--multirun")


def compose_problem(exc: Exception) -> str:
    """Hydra's compose error in one line: an override of a key the config lacks names the key
    (Hydra's text suggests `+key=...`, which the strict config then refuses)."""
    text = str(exc).strip()
    missing = re.match(r"Could not override '([^']+)'", text)
    if missing:
        return f"{missing.group(1)}: unknown key: not in the config (conf/)"
    cause = str(exc.__cause__ or "").strip()  # "Cannot merge DictConfig with ListConfig"
    first = text.splitlines()[0] if text else repr(exc)
    return f"{first}: {cause.splitlines()[0]}" if cause else first


def check_overrides(argv: list[str], conf_dir: Path) -> None:
    """A single run's overrides compose, or one line before Hydra (its own error is a block of
    text and exit 1). A multirun's are checked job by job (check_multirun)."""
    if any(flag in argv for flag in MULTIRUN_FLAGS):
        return
    args = [a for a in argv if not a.startswith("-") and "=" in a and not is_hydra_override(a)]
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir)):
        try:
            compose("config", overrides=args)
        except (HydraException, OmegaConfBaseException) as exc:
            raise ConfigError(compose_problem(exc)) from None


def check_multirun(argv: list[str], conf_dir: Path) -> None:
    if not any(flag in argv for flag in MULTIRUN_FLAGS):
        return
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir)):
        try:  # the sweep an experiment preset sets in hydra.sweeper.params
            primary = compose("config", overrides=fixed_overrides(argv),
                              return_hydra_config=True)
            jobs = planned_jobs(argv, sweep_params(primary))
        except (HydraException, OmegaConfBaseException) as exc:
            raise ConfigError(f"multirun: {compose_problem(exc)}") from None
        for number, overrides in enumerate(jobs):
            try:
                cfg = compose("config", overrides=overrides)
                build_run_spec(OmegaConf.to_container(cfg, resolve=True), Path("unused"))
            except ConfigError as exc:
                raise ConfigError(f"multirun job {number} of {len(jobs)} "
                                  f"({' '.join(overrides)}): {exc}") from None
            except (HydraException, OmegaConfBaseException) as exc:
                first = compose_problem(exc)
                raise ConfigError(f"multirun job {number} of {len(jobs)} "
                                  f"({' '.join(overrides)}): {first}") from None


# Files Hydra writes in a run folder before main() runs; a folder holding nothing else has no
# run in it yet.
HYDRA_FILES = {".hydra", "run_suite.log"}


def fail(message: str, out_dir: Path | None = None) -> None:
    """One line, exit 2. What this run created goes (Hydra's files, and the folder if it made
    it); nothing else is ever deleted."""
    if out_dir is not None and out_dir.is_dir():
        for name in HYDRA_FILES - EXISTED.get(out_dir.resolve(), set()):
            _remove(out_dir / name)
        if out_dir.resolve() not in EXISTED:
            # Only if now empty; a default folder's results/<suite>/ parent too, if empty.
            for folder in [out_dir] + ([out_dir.parent] if RUN_DIR_GIVEN is None else []):
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


def _given_run_dir(argv: list[str], key: str = "hydra.run.dir") -> str | None:
    """The value of a `hydra.run.dir=` (or `key=`) override, if the command line has one; the
    last one where it has several, as Hydra takes it."""
    given = [arg.partition("=")[2] for arg in argv if arg.startswith(f"{key}=")]
    return given[-1] if given else None


def resume_args(folder: Path, args: list[str], key: str = "hydra.run.dir") -> list[str]:
    """`args` with resume=true and the run (or sweep) folder, quoted for a shell."""
    kept = [a for a in args if not a.startswith((f"{key}=", "resume="))]
    return [shlex.quote(a) for a in kept + ["resume=true", f"{key}={folder}"]]


def check_run_dir_creatable(given: str | None, key: str = "hydra.run.dir") -> None:
    """Before Hydra makes the folder (its own error is a traceback): the nearest existing
    folder above it must be a writable folder. `key`: hydra.run.dir or hydra.sweep.dir."""
    if given is None:
        return
    if not given.strip():  # Hydra would put the run in the current folder, among its files
        raise ConfigError(f"{key}: empty; give a folder for the run (or leave it out for "
                          "results/<suite>/<time>)")
    path = Path(given).absolute()
    while not path.exists():
        path = path.parent
    if not path.is_dir():
        raise ConfigError(f"{key}={given}: {path} is a file, not a folder")
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"{key}={given}: cannot write under {path}")
    if str(path).startswith(("/proc", "/sys")):
        raise ConfigError(f"{key}={given}: {path} is a kernel filesystem, not a folder "
                          "for results")


def check_run_dir(out_dir: Path, spec) -> None:
    """The run folder must be a folder of its own, writable, and hold no other run (or, to
    resume, the interrupted run of the same config)."""
    if spec.resume:
        problem = resume_problem(read_state(out_dir), spec.config)
        if problem:
            raise ConfigError(f"resume=true: {out_dir} {problem}")
    left = sorted(p.name for p in out_dir.iterdir() if p.name not in HYDRA_FILES)
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


def this_job() -> dict | None:
    """A multirun job's number and overrides, for its run.json (collect finds a missing job)."""
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode != RunMode.MULTIRUN:
        return None
    return {"num": int(hydra_cfg.job.num), "overrides": list(hydra_cfg.overrides.task)}


def job_resume(spec, out_dir: Path):
    """A multirun job that finds its own earlier attempt in its folder: requeued by the cluster
    (preempted or out of time, with the same overrides) or a sweep run again with resume=true.
    An unfinished attempt is resumed, without being asked (a requeue cannot ask); a complete
    one of the same config is left as it is (None: nothing to do); a job that never wrote a
    run.json starts afresh. A single run is resumed only when asked, as before."""
    if spec.job is None:
        return spec
    state = read_state(out_dir)
    if state is None or (state.get("job") or {}).get("num") != spec.job["num"]:
        return replace(spec, resume=False)
    if state.get("state") == COMPLETE:  # another config's run is refused by check_run_dir
        return None if same_config(state, spec.config) else spec
    print(f"fusebench: job {spec.job['num']}: resuming the unfinished run in {out_dir} "
          f"({state.get('state')}, {state.get('done')} of {state.get('planned')} rows)",
          file=sys.stderr)
    return replace(spec, resume=True)


RUN_FOLDERS: list[Path] = []  # the folders this process's jobs ran in, for the exit status


# An absolute path: a relative one is resolved against the importer's file, which breaks when
# run_suite runs as the installed `fusebench-run` command (pyproject.toml).
@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> None:
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        spec = job_resume(replace(build_run_spec(OmegaConf.to_container(cfg, resolve=True),
                                                 out_dir), job=this_job()), out_dir)
        if spec is None:
            print(f"fusebench: {out_dir}: this job's run is complete; nothing to do")
            return
        if spec.resume and spec.job is None:  # a sweep's job resumed alone stays in its sweep
            spec = replace(spec, job=(read_state(out_dir) or {}).get("job"))
        check_run_dir(out_dir, spec)
    except ConfigError as exc:
        fail(str(exc), out_dir)
    stop_on_signals()
    RUN_FOLDERS.append(out_dir)
    try:
        result = run(spec)
    except Interrupted as exc:
        state = read_state(out_dir) or {}
        # A sweep job's own overrides (a cluster job's argv is the launcher's, not ours).
        args = sys.argv[1:] if spec.job is None else spec.job["overrides"]
        print(f"fusebench: interrupted by {exc.name}: {state.get('done', '?')} of "
              f"{state.get('planned', '?')} rows are in {out_dir}; to finish it: python "
              f"run_suite.py {' '.join(resume_args(out_dir, args))}", file=sys.stderr)
        if os.environ.get("SUBMITIT_EXECUTOR"):
            if preempted():  # requeued: no result, so the launcher waits for the job's rerun
                raise SystemExit(-1)
            # A job in a process of its own (submitit): its launcher waits for the job's
            # result, which only a return gives; the launcher's exit status says it stopped.
            return
        sys.exit(128 + exc.signum)
    report = write_report(out_dir)
    print(summary_table(result.frame, result.env))
    print(f"\n{len(result.frame)} rows in {result.seconds:.0f} s; report: {report}")
    print(f"run folder: {out_dir}")


def final_status() -> int:
    """After every job: the exit code, and a last line saying what is not a result. A sweep is
    judged by its sweep.json and the run.json of each job, wherever the launcher ran them."""
    sweep = SweepManifest.folder
    if sweep is not None:
        jobs, problems = sweep_jobs(sweep), sweep_problems(sweep)
        for line in problems:
            print(f"fusebench: {line}", file=sys.stderr)
        code, line = exit_status([j.state for j in jobs if j.state is not None], problems)
        unfinished = any(j.state is None or j.state.get("state") != COMPLETE for j in jobs)
        then = (f"to finish it: python run_suite.py "
                f"{' '.join(resume_args(sweep, sys.argv[1:], 'hydra.sweep.dir'))}" if unfinished
                else f"to merge its jobs: python -m suites.collect {sweep}")
        print(f"{line}; sweep of {len(jobs)} job(s) in {sweep}; {then}")
    elif RUN_FOLDERS:
        code, line = exit_status([read_state(folder) for folder in RUN_FOLDERS])
        print(line)
    else:  # nothing ran (--cfg, --help)
        code = 0
    return code


# A run folder the user named may exist already, with Hydra's files from another run or tool in
# it: what existed before Hydra started is never removed (folder -> its Hydra files then).
RUN_DIR_GIVEN = _given_run_dir(sys.argv[1:])
EXISTED = ({Path(RUN_DIR_GIVEN).resolve(): {n for n in HYDRA_FILES
                                            if (Path(RUN_DIR_GIVEN) / n).exists()}}
           if RUN_DIR_GIVEN and Path(RUN_DIR_GIVEN).is_dir() else {})
# Two runs started in the same second get different default folders.
OmegaConf.register_new_resolver("pid", os.getpid, replace=True)

def cli() -> None:
    """`python run_suite.py ...` and `fusebench-run ...`: the checks Hydra does not make, the
    run, and the exit status (suites/results/exit_status.py)."""
    try:
        check_syntax(sys.argv[1:])
        check_group_choices(sys.argv[1:], CONF_DIR)
        check_overrides(sys.argv[1:], CONF_DIR)
        check_run_dir_creatable(RUN_DIR_GIVEN)
        check_run_dir_creatable(_given_run_dir(sys.argv[1:], "hydra.sweep.dir"),
                                "hydra.sweep.dir")
        check_multirun(sys.argv[1:], CONF_DIR)
    except ConfigError as exc:
        fail(str(exc))
    main()
    sys.exit(final_status())


if __name__ == "__main__":
    cli()
