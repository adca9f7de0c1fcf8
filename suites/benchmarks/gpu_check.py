"""Everything to run when a GPU machine is lent, in one call:

    python -m suites.benchmarks.gpu_check [--out DIR]

1. the GPU-marked tests and the registry-generated variant tests, on CUDA;
2. every suite of the suite table at its YAML's reference shape (the series' shape; matmul_add
   also at 64 and 1024, the overhead-bound end), default timing;
3. a table of kernels per call and speed per variant, written to DIR/summary.txt and printed.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from suites.results.tables import MEASUREMENTS_CSV, read_measurements, with_columns
from suites.suite_table import Suite, suites

ROOT = Path(__file__).resolve().parents[2]
# Beyond each suite's reference shape in bf16: where the series looked at more.
EXTRA = {
    "matmul_add": ["suite.sizes=[64,1024,4096]", "suite.dtypes=[bfloat16,float32]"],
    "linear": ["suite.dtypes=[bfloat16,float32]"],
    "norm": ["suite.axes={T:[8192],D:[768,4096],norm:[layer,rms]}"],  # and an LLM width, RMSNorm
}
COLUMNS = ["suite", "case_id", "variant", "status", "median_us", "speedup", "n_kernels",
           "device_us", "host_us", "tflops", "backend", "reason"]


def series_overrides(suite: Suite) -> list[str]:
    """Hydra overrides that sweep `suite` at its YAML's reference shape, in bfloat16."""
    config = yaml.safe_load(suite.conf.read_text())
    reference = config["reference"]
    if "sizes" in config:  # every parameter takes the one size (matmul_add: M = N = K)
        shape = f"suite.sizes=[{next(iter(reference.values()))}]"
    else:
        shape = "suite.axes={" + ",".join(f"{p}:[{v}]" for p, v in reference.items()) + "}"
    defaults = [shape, "suite.dtypes=[bfloat16]"]
    extra = EXTRA.get(suite.name, [])
    keys = {o.split("=", 1)[0] for o in extra}
    return [o for o in defaults if o.split("=", 1)[0] not in keys] + extra


def run(cmd: list[str], log: Path) -> int:
    print("+", " ".join(cmd), flush=True)
    with open(log, "a") as f:
        return subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT).returncode


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "results/gpu_check")))
    table = {s.name: s for s in suites()}
    parser.add_argument("--suites", nargs="+", default=list(table), choices=list(table))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "log.txt"
    codes = {"tests": run([sys.executable, "-m", "pytest", "-q", "-x", "tests/test_gpu.py",
                           "tests/test_variants.py", "tests/test_triton_flash_attention.py",
                           "tests/test_triton_layernorm.py"], log)}
    frames = []
    for suite in args.suites:
        run_dir = args.out / "runs" / suite
        codes[suite] = run([sys.executable, "run_suite.py", f"suite={suite}", "device=cuda",
                            *series_overrides(table[suite]), f"hydra.run.dir={run_dir}"], log)
        if (run_dir / MEASUREMENTS_CSV).is_file():
            frame = with_columns(read_measurements(run_dir), COLUMNS)
            # Only ok rows' figures are results; a noisy row's reason says what it saw.
            numbers = ["median_us", "speedup", "n_kernels", "device_us", "host_us", "tflops"]
            frame.loc[frame["status"] != "ok", numbers] = float("nan")
            frames.append(frame)
    table = pd.concat(frames)[COLUMNS] if frames else pd.DataFrame(columns=COLUMNS)
    text = table.to_string(index=False, float_format=lambda v: f"{v:.4g}", na_rep="-")
    text += "\n\nexit codes: " + ", ".join(f"{k}={v}" for k, v in codes.items())
    (args.out / "summary.txt").write_text(text)
    print(text)
    return max(codes.values())


if __name__ == "__main__":
    sys.exit(main())
