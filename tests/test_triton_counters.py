"""A run's Triton counters (suites/tools/triton_counters.py, the runner's last step): what its
Triton rows launch, compiled ahead of time for sm_80 and sm_90 on this GPU-less machine, with
the compiler's registers, spills and shared memory per kernel and kept config, in the run
folder's triton_counters.csv; cached, so the next run compiles nothing; read by history as
exact counters; a failure of the step is a line in env.json, never a failed run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_suite(out: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "FUSEBENCH_CACHE": str(cache)}
    env.pop("FUSEBENCH_TRITON_COUNTERS", None)  # conf/config.yaml's own default: auto
    return subprocess.run(
        [sys.executable, str(ROOT / "run_suite.py"), "suite=matmul_add", "suite.sizes=[48]",
         "suite.dtypes=[float32]", "suite.variants=[eager,triton]",
         "suite.modes=[fwd_nograd,fwd_bwd]", "device=cpu", "timing=quick", "calibrate=false",
         "profile.enabled=false", "progress=false", f"hydra.run.dir={out}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


KEPT = """
import json
from kernels.triton import targets
from suites.tools import triton_launches as planned
configs = planned.tuner("gemm").configs
print(json.dumps({f"sm_{arch}": [" ".join(map(str, targets.config_key(c))) for c in configs
                                 if targets.gemm_keeps("gemm", c, "float32", arch, True, False)]
                  for arch in planned.ARCHS}))
"""


def kept_gemm_configs() -> dict[str, set]:
    """The GEMM's fp32 configs its pruning keeps per target, asked in a process without
    TRITON_INTERPRET (here the kernels carry the interpreter's configs)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", KEPT], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=True)
    return {arch: set(keys) for arch, keys in json.loads(done.stdout).items()}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("triton_counters")
    cache = root / "cache"
    done = [run_suite(root / f"run_{i}", cache) for i in range(2)]
    for result in done:
        assert result.returncode in (0, 1), result.stderr[-3000:]
    return root, done


def test_a_run_writes_the_counters_of_what_its_triton_rows_launch(two_runs):
    root, done = two_runs
    run = root / "run_0"
    counters = pd.read_csv(run / "triton_counters.csv")
    rows = pd.read_csv(run / "measurements.csv")
    triton_ids = set(rows.loc[rows["variant"] == "triton", "case_id"])
    assert set(counters["case_id"]) == triton_ids == {"M48-N48-K48-fp32",
                                                      "M48-N48-K48-fp32-fwd_bwd"}
    assert set(counters["variant"]) == {"triton"} and set(counters["suite"]) == {"matmul_add"}
    assert set(counters["arch"]) == {"sm_80", "sm_90"}
    assert counters["error"].isna().all(), counters["error"].dropna().tolist()
    assert (counters["registers"] > 0).all() and (counters["shared_bytes"] >= 0).all()
    assert (counters["spill_bytes"] >= 0).all()
    # Inference launches the GEMM with its bias epilogue; the training step adds dx and dw
    # (no epilogue, two builds told apart) and the bias gradient's column sum.
    forward = counters[counters["case_id"] == "M48-N48-K48-fp32"]
    assert set(forward["kernel"]) == {"gemm"}
    assert forward["specialisation"].str.contains("HAS_BIAS=True").all()
    step = counters[counters["case_id"] == "M48-N48-K48-fp32-fwd_bwd"]
    assert {"gemm", "column_sum"} <= set(step["kernel"])
    assert step["specialisation"].str.contains("HAS_BIAS=False").any()
    # Only configs the pruning keeps on each target: an autotuner never runs the others.
    kept = kept_gemm_configs()
    for arch, configs in forward.groupby("arch")["config"]:
        assert set(configs) == kept[arch], (arch, set(configs), kept[arch])
    env = json.loads((run / "env.json").read_text())
    assert env["triton_counters"]["rows"] == len(counters)
    assert env["triton_counters"]["compiled_now"] > 0
    assert "Triton counters:" in done[0].stderr


def test_the_next_run_compiles_nothing_and_history_tracks_the_counters(two_runs):
    from suites.reports.history import command

    root, _ = two_runs
    first, second = (pd.read_csv(root / f"run_{i}" / "triton_counters.csv") for i in (0, 1))
    env = json.loads((root / "run_1" / "env.json").read_text())
    assert env["triton_counters"]["compiled_now"] == 0  # all from the cache
    pd.testing.assert_frame_equal(first, second)
    out = root / "history"
    code = command.main([str(root / "run_0"), str(root / "run_1"), "--out", str(out)])
    assert code in (0, 1)
    frame = pd.read_csv(out / "series.csv")
    report = json.loads((out / "regressions.json").read_text())
    triton = frame[frame["variant"] == "triton"]
    assert len(triton) == 2
    assert not [c for c in report.get("changes", []) if c.get("counters")]


def test_a_failing_compile_step_is_a_line_in_env_never_a_failed_run(tmp_path, monkeypatch):
    from suites.harness import triton_counters_step as step

    spec = SimpleNamespace(out_dir=tmp_path, triton_counters="auto",
                           suite=SimpleNamespace(name="matmul_add", variants=["eager", "triton"]),
                           cases=lambda: [SimpleNamespace(id="M48-N48-K48-fp32",
                                                          values={"M": 48, "N": 48, "K": 48},
                                                          dtype="float32", mode="fwd_nograd")])
    monkeypatch.setattr(step.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a, 1, stdout="", stderr="Traceback ...\nRuntimeError: ptxas not found"))
    assert step.record(spec, sys.stderr) == {"error": "exit 1: RuntimeError: ptxas not found"}
    assert json.loads((tmp_path / step.CASES_JSON).read_text())[0]["variant"] == "triton"
    spec.triton_counters = "off"
    assert step.record(spec, sys.stderr) is None
    spec.triton_counters, spec.suite.variants = "auto", ["eager"]
    assert step.record(spec, sys.stderr) is None  # no Triton row: nothing to compile
