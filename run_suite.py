"""fusebench's entry point, the Hydra app: compose the config -> typed run spec -> run -> tables
-> report. What it calls lives in suites/: the checks before Hydra, the run folder and the exit
status in suites/config/, the run in suites/harness/, the report in suites/reports/.

    python run_suite.py suite=matmul_add                   # the default sweep on this machine
    python run_suite.py suite.sizes=[64,256,1024] timing=quick device=cpu
    python run_suite.py -m suite.dtypes=[float32],[bfloat16]
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from suites.common.errors import ConfigError
from suites.config import outcome
from suites.config.command_line import RUN_DIR, check_command_line, given
from suites.config.compose import CONF_DIR, CONFIG_NAME, register_resolvers, resolved
from suites.config.folder_lock import FolderTaken, own
from suites.config.run_folder import check_run_dir, fail, job_resume, note_existing
from suites.config.run_spec import build_run_spec
from suites.harness.runner import after_the_answer, run
from suites.harness.stopping import Interrupted, stop_on_signals
from suites.results.journal import disk_full
from suites.reports.run.answer import answer_section
from suites.reports.run.audit import audit_and_keep
from suites.reports.run.build import REPORT_MD, write_report
from suites.reports.run.summary import summary_table


def this_job() -> dict | None:
    """A multirun job's number and overrides, for its run.json (collect finds a missing job)."""
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode != RunMode.MULTIRUN:
        return None
    return {"num": int(hydra_cfg.job.num), "overrides": list(hydra_cfg.overrides.task)}


# An absolute config path: a relative one is resolved against the importer's file, which breaks
# when run_suite runs as the installed `fusebench-run` command (pyproject.toml).
@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name=CONFIG_NAME)
def main(cfg: DictConfig) -> None:
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        spec = replace(build_run_spec(resolved(cfg), out_dir), job=this_job())
        # A single run's folder is this process's already (the RunFolderOwner callback); a
        # sweep job's is taken here, before anything of it is looked at.
        own(out_dir, "hydra.run.dir")
        spec = job_resume(spec, out_dir)
        if spec is None:
            print(f"fusebench: {out_dir}: this job's run is complete; nothing to do")
            return
        check_run_dir(out_dir, spec)
    except FolderTaken as exc:
        fail(str(exc))  # another run's folder: nothing in it is this run's to remove
    except ConfigError as exc:
        fail(str(exc), out_dir)
    stop_on_signals()
    outcome.RUN_FOLDERS.append(out_dir)
    try:
        result = run(spec)
        report = write_report(out_dir)
    except Interrupted as exc:
        outcome.interrupted(exc, spec, out_dir, sys.argv[1:])
        return
    except Exception as exc:
        full = disk_full(exc)
        if full is None:
            raise
        outcome.disk_full(full, spec, out_dir, sys.argv[1:])
    print(summary_table(result.frame, result.env))
    print("\n" + "\n".join(answer_section((out_dir / REPORT_MD).read_text())))
    print(f"\n{len(result.frame)} rows in {result.seconds:.0f} s; report: {report} "
          f"(the answer as text: {out_dir / REPORT_MD})")
    print(f"run folder: {out_dir}")
    audited = audit_and_keep(out_dir)  # every statement of its pages against the others
    print("\n".join(audited.lines()) + ("" if audited.found else
                                           f" (python -m suites.report --check {out_dir})"),
          flush=True)
    after_the_answer(result)  # the Triton counters: after the answer, never before it


def cli() -> None:
    """`python run_suite.py ...` and `fusebench-run ...`: the checks Hydra does not make, the
    run, and the exit status (suites/results/exit_status.py)."""
    argv = sys.argv[1:]
    register_resolvers()
    note_existing(given(argv, RUN_DIR))
    try:
        check_command_line(argv)
    except ConfigError as exc:
        fail(str(exc))
    main()
    sys.exit(outcome.final_status(argv))


if __name__ == "__main__":
    cli()
