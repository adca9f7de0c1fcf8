"""fusebench entry point: compose the config -> typed run spec -> run -> tables -> report.

    python run_suite.py suite=matmul_add                   # the default sweep on this machine
    python run_suite.py suite.sizes=[64,256,1024] timing=quick device=cpu
    python run_suite.py -m suite.dtypes=[float32],[bfloat16]
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from suites.cli_checks import check_group_choices
from suites.errors import ConfigError
from suites.harness.runner import run
from suites.report.build import write_report
from suites.report.summary import summary_table
from suites.spec import build_run_spec

CONF_DIR = Path(__file__).resolve().parent / "conf"


def fail(message: str, out_dir: Path | None = None) -> None:
    if out_dir is not None and {p.name for p in out_dir.iterdir()} <= {".hydra", "run_suite.log"}:
        shutil.rmtree(out_dir, ignore_errors=True)  # nothing ran: leave no empty run folder
    print(f"fusebench: error: {message}", file=sys.stderr)
    sys.exit(2)


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        spec = build_run_spec(OmegaConf.to_container(cfg, resolve=True), out_dir)
    except ConfigError as exc:
        fail(str(exc), out_dir)
    result = run(spec)
    report = write_report(out_dir)
    print(summary_table(result.frame, result.env))
    print(f"\n{len(result.frame)} rows in {result.seconds:.0f} s; report: {report}")
    print(f"run folder: {out_dir}")


if __name__ == "__main__":
    try:
        check_group_choices(sys.argv[1:], CONF_DIR)
    except ConfigError as exc:
        fail(str(exc))
    main()
