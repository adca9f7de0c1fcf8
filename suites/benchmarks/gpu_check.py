"""Everything to run when a GPU machine is lent, in one call:

    python -m suites.benchmarks.gpu_check [--out DIR]

1. the GPU-marked tests and the registry-generated variant tests, on CUDA;
2. each suite at the Hugging Face series' shape (and matmul_add at 4096), default timing;
3. a table of kernels per call and speed per variant, written to DIR/summary.txt and printed.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from suites.results.columns import headers
from suites.results.tables import MEASUREMENTS_CSV, read_measurements, with_columns

ROOT = Path(__file__).resolve().parents[2]
# The series' shapes, as overrides of each suite's grid.
SERIES = {
    "matmul_add": ["suite.sizes=[64,1024,4096]", "suite.dtypes=[bfloat16,float32]"],
    "linear": ["suite.axes={T:[1024],IN:[32],OUT:[64]}", "suite.dtypes=[bfloat16,float32]"],
    "mlp": ["suite.axes={T:[8192],D:[768],I:[3072]}", "suite.dtypes=[bfloat16]"],
    "attention": ["suite.axes={B:[8],H:[16],S:[1024],D:[64]}", "suite.dtypes=[bfloat16]"],
    "block": ["suite.axes={B:[8],S:[1024],D:[768],H:[12],I:[3072]}", "suite.dtypes=[bfloat16]"],
}
COLUMNS = list(headers(["suite", "case_id", "variant", "status", "median_us", "speedup",
                        "n_kernels", "device_us", "host_us", "tflops", "backend", "reason"]))


def run(cmd: list[str], log: Path) -> int:
    print("+", " ".join(cmd), flush=True)
    with open(log, "a") as f:
        return subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT).returncode


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "results/gpu_check")))
    parser.add_argument("--suites", nargs="+", default=list(SERIES))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "log.txt"
    codes = {"tests": run([sys.executable, "-m", "pytest", "-q", "-x", "tests/test_gpu.py",
                           "tests/test_variants.py", "tests/test_triton_flash_attention.py"], log)}
    frames = []
    for suite in args.suites:
        run_dir = args.out / "runs" / suite
        codes[suite] = run([sys.executable, "run_suite.py", f"suite={suite}", "device=cuda",
                            *SERIES[suite], f"hydra.run.dir={run_dir}"], log)
        if (run_dir / MEASUREMENTS_CSV).is_file():
            frames.append(with_columns(read_measurements(run_dir), COLUMNS))
    table = pd.concat(frames)[COLUMNS] if frames else pd.DataFrame(columns=COLUMNS)
    text = table.to_string(index=False, float_format=lambda v: f"{v:.4g}", na_rep="-")
    text += "\n\nexit codes: " + ", ".join(f"{k}={v}" for k, v in codes.items())
    (args.out / "summary.txt").write_text(text)
    print(text)
    return max(codes.values())


if __name__ == "__main__":
    sys.exit(main())
