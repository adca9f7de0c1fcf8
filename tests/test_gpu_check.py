"""gpu_check's plumbing, on a CPU: every plan composes into a run spec, it writes each result
as a JSON line when it is known, turns a passed deadline into `deadline` rows, exits 1 only for failed/deadline rows, and forces every autotune config of a kernel
(under Triton's interpreter here, with its one config per kernel)."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from kernels import registry
from suites.tools import (gpu_check, gpu_check_configs, gpu_check_kernels,
                          gpu_check_record, gpu_check_suites)
from suites.tools.gpu_check_record import Clock, Recorder, run_items
from suites.harness import device_lock, stopping
from suites.config.compose import compose, override_args, resolved
from suites.config.run_spec import build_run_spec

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ("import sys\n"
          "from suites.tools import gpu_check\n"
          "sys.exit(gpu_check.main(sys.argv[1:]))\n")


def _gpu_check(out: Path, *args: str) -> tuple[int, list[dict], str]:
    """gpu_check in a fresh interpreter, as on the lent machine (no TRITON_INTERPRET there).
    Its device lock in a temporary folder of its own: a plumbing run need not wait for
    another run on this machine to end (harness/device_lock.py)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    (out / "tmp").mkdir(parents=True)
    env["TMPDIR"] = str(out / "tmp")
    done = subprocess.run([sys.executable, "-c", SCRIPT, "--allow-cpu", "--out", str(out), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return done.returncode, rows, done.stdout + done.stderr


def _plans():
    for index, plan in enumerate(gpu_check_suites.plans()):
        yield pytest.param(plan, index == 0, id=plan.name)


@pytest.mark.parametrize("plan, first", list(_plans()))
def test_every_plan_composes_into_a_spec(plan, first, tmp_path):
    """The mapping gpu_check composes from and the command line it reports (`reproduce`) give
    the same run spec."""
    given = gpu_check_suites.overrides(plan, "cpu", cpu_plumbing=first, case_timeout_s=90.0)
    from_mapping = build_run_spec(resolved(compose(given)), tmp_path)
    assert from_mapping == build_run_spec(resolved(compose(override_args(given))), tmp_path)
    assert from_mapping.suite.name == plan.suite


def test_series_facts_name_registered_variants():
    for suite, variant in gpu_check_suites.SERIES:
        assert variant in registry.variant_names(suite), (suite, variant)


def test_rows_are_on_disk_as_they_come_and_deadlines_are_rows(tmp_path):
    rec = Recorder(tmp_path / "results.jsonl", echo=lambda line: None)
    path = rec.path

    def second():  # the first row must already be readable from the file
        assert json.loads(path.read_text().splitlines()[0])["item"] == "first"
        raise RuntimeError("boom")

    items = [("first", lambda: {"value": float("nan")}), ("second", second),
             ("third", lambda: {"status": "skipped", "error": "no CUDA"})]
    run_items(rec, "s", Clock(60), items)
    run_items(rec, "late", Clock(0), [("never", lambda: pytest.fail("ran past its deadline"))])
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["item"], r["status"]) for r in rows] == [
        ("first", "ok"), ("second", "failed"), ("third", "skipped"), ("never", "deadline")]
    assert rows[0]["value"] is None and "boom" in rows[1]["error"]  # NaN is no JSON
    assert rec.exit_code() == 1


def test_deadline_argument():
    assert sum(gpu_check.budgets(["300"]).values()) == pytest.approx(300)
    assert gpu_check.budgets(["suites=10"])["suites"] == 10
    with pytest.raises(SystemExit):
        gpu_check.budgets(["nosuch=10"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's path, on a CPU")
def test_each_kept_config_is_forced_and_checked(tmp_path, monkeypatch):
    """Under the interpreter, with three configs of which the pruning keeps two, and a fake
    benchmark (the interpreter cannot time): the pick is checked, then each kept config alone,
    and the pruned one is a skipped row."""
    from triton.runtime.autotuner import Autotuner

    from kernels.triton import gemm
    from kernels.triton.gemm_common import config

    tuner = gemm._matmul_bias_act_kernel
    configs = [config(32, 32, 32, 1, 4, group=4), config(16, 32, 16, 1, 4, group=2),
               config(64, 16, 32, 1, 4)]
    monkeypatch.setattr(tuner, "configs", configs)
    monkeypatch.setattr(tuner, "early_config_prune", lambda cs, named, **kw: cs[:2])
    monkeypatch.setattr(Autotuner, "_bench",  # the smallest BLOCK_SIZE_M "wins"
                        lambda self, *a, config, **k: [float(config.kwargs["BLOCK_SIZE_M"])] * 3)
    rec = Recorder(tmp_path / "results.jsonl", echo=lambda line: None)
    run_items(rec, "configs", Clock(120),
              gpu_check_configs.items("cpu", ("float32",), ops=("matmul_add",)))
    rows = {r["item"]: r for r in rec.rows}
    picked = rows["matmul_add/triton M37-N45-K29-fp32 autotuned"]
    assert picked["status"] == "ok"
    assert picked["kernels"][0].startswith("gemm._matmul_bias_act_kernel (float32 ")
    assert picked["kernels"][0].endswith("picked M16 N32 K16 GM2 w4 s1")
    forced = [r for r in rec.rows if r["item"].startswith("gemm._matmul_bias_act_kernel (")]
    assert [r["status"] for r in forced] == ["ok", "ok", "skipped"]
    assert [r["item"].rsplit("[", 1)[1] for r in forced] == [
        "M32 N32 K32 GM4 w4 s1]", "M16 N32 K16 GM2 w4 s1]", "M64 N16 K32 GM8 w4 s1]"]
    assert all(r["scaled_err"] <= r["tolerance"] for r in forced[:2])
    assert "pruned" in forced[2]["error"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU plumbing")
def test_cpu_plumbing_end_to_end(tmp_path):
    code, rows, output = _gpu_check(tmp_path)
    # A row the busy machine made noisy is its own status (exit 1, as the harness's), not failed.
    noisy = [r for r in rows if r["status"] == "noisy"]
    assert all(r["harness_status"] == "noisy" for r in noisy)
    assert code == (1 if noisy else 0), output
    sections = list(dict.fromkeys(r["section"] for r in rows))
    assert sections == list(gpu_check.SECTIONS)
    assert [r["t_s"] for r in rows] == sorted(r["t_s"] for r in rows)
    by_item = {(r["section"], r["item"]): r for r in rows}
    configs = [r for r in rows if r["section"] == "configs"]
    assert configs and all(r["status"] == "skipped" for r in configs)
    assert any(r["item"].startswith("gemm._matmul_bias_act_kernel [") for r in configs)
    assert by_item[("kernels", "gemm_bf16_4096 target")]["status"] == "skipped"
    run = by_item[("suites", "matmul_add")]
    assert run["status"] == "ok" and run["reproduce"].startswith("python run_suite.py")
    eager = by_item[("suites", "matmul_add M64-N64-K64-fp32 eager")]
    assert eager["status"] in ("ok", "noisy") and eager["series_kernels"] == "2" \
        and eager["n_kernels"] > 0
    assert by_item[("suites", "matmul_add M64-N64-K64-fp32 triton")]["status"] == "skipped"
    assert by_item[("suites", "attention")]["status"] == "skipped"  # its spec built, not run
    assert (Path(run["folder"]) / "measurements.csv").is_file()
    assert "kernels per call" in (tmp_path / "summary.txt").read_text()


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU plumbing")
def test_a_passed_deadline_is_rows_and_exit_1(tmp_path):
    code, rows, output = _gpu_check(tmp_path, "--sections", "suites", "--deadline-s",
                                    "suites=0")
    suites = [r for r in rows if r["section"] == "suites"]
    assert code == 1, output
    assert len(suites) == len(gpu_check_suites.plans())
    assert all(r["status"] == "deadline" for r in suites)
    assert "deadline" in (tmp_path / "summary.txt").read_text()


def test_no_cuda_without_allow_cpu_is_exit_2(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_check.main(["--out", str(tmp_path)]) == 2


def test_a_deadline_stops_a_run_after_the_case_in_flight(tmp_path, monkeypatch):
    # A lock of its own: another run on this machine holding the CPU's would stop it earlier.
    monkeypatch.setattr(device_lock, "lock_path", lambda device: tmp_path / "device.lock")
    plan = gpu_check_suites.Plan("matmul_add", "matmul_add")
    cfg = resolved(compose({"suite": "matmul_add", "timing": "quick", "device": "cpu",
                            "suite.sizes": [32, 48], "suite.dtypes": ["float32"],
                            "suite.variants": ["eager"], "calibrate": False}))
    spec = build_run_spec(cfg, tmp_path / "run")
    rec = Recorder(tmp_path / "results.jsonl", echo=lambda line: None)
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with open(tmp_path / "log.txt", "w") as log:  # past its deadline when it starts
        row = gpu_check_suites.run_plan(plan, spec, Clock(0), rec, log)
    assert row["status"] == "deadline" and (row["rows"], row["planned"]) == (1, 2)
    assert [r["item"] for r in rec.rows] == ["matmul_add M32-N32-K32-fp32 eager"]
    # The deadline's SIGINT is spent: the handlers from before are back, nothing is noted.
    assert {sig: signal.getsignal(sig) for sig in before} == before
    stopping.stop_if_asked()


def test_an_item_past_its_deadline_and_the_grace_is_stopped_where_it_is(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_check_record, "GRACE_S", 0.2)
    rec = Recorder(tmp_path / "results.jsonl", echo=lambda line: None)
    alarm_before = signal.getsignal(signal.SIGALRM)
    items = [("slow", lambda: time.sleep(5) or {}), ("next", lambda: {"value": 1})]
    started = time.monotonic()
    run_items(rec, "kernels", Clock(0.5), iter(items), hard=True)
    assert time.monotonic() - started < 2
    assert [(r["item"], r["status"]) for r in rec.rows] == [("slow", "deadline"),
                                                            ("next", "deadline")]
    assert "stopped after running" in rec.rows[0]["error"]
    assert signal.getsignal(signal.SIGALRM) == alarm_before  # and no alarm left running
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CPU clock for the kernel-time logic")
def test_kernel_section_ratios_and_targets(tmp_path, monkeypatch):
    def cpu_share(call, budget, flush=None):
        out = []
        for _ in range(budget.min_samples):
            start = time.perf_counter()
            call()
            out.append((time.perf_counter() - start) * 1e6)
        return gpu_check_kernels.timing.Samples(out)

    monkeypatch.setattr(gpu_check_kernels.timing, "kernel_share", cpu_share)
    monkeypatch.setattr(gpu_check_kernels, "SAMPLES", (10, 15))
    monkeypatch.setattr(gpu_check_kernels, "BENCHES", (gpu_check_kernels.Bench(
        "gemm", "matmul_add", {"M": 40, "N": 48, "K": 64}, "addmm", ("triton", "nosuch"), 0.9),))
    rec = Recorder(tmp_path / "results.jsonl", echo=lambda line: None)
    run_items(rec, "kernels", Clock(60), gpu_check_kernels.items("cpu"))
    rows = {r["item"]: r for r in rec.rows}
    library = rows["gemm addmm"]
    assert library["status"] == "ok" and library["kernel_low_us"] < library["kernel_us"]
    triton = rows["gemm triton"]
    assert triton["status"] == "ok" and triton["diff_vs_library"] < 0.05
    # Paired in interleaved rounds: a ratio with its interval, the point inside it.
    assert triton["ratio_low"] < triton["ratio"] < triton["ratio_high"]
    assert rows["gemm nosuch"]["status"] == "skipped"
    target = rows["gemm target"]  # the interpreter is slow: below the target, said so
    assert target["best"] == "triton" and target["ratio"] == triton["ratio"]
    assert target["ratio_low"] == triton["ratio_low"]
    assert target["status"] == ("ok" if triton["ratio_low"] >= 0.9 else "failed")
    if target["status"] == "failed":
        assert "low end is under the target 0.9x" in target["error"]


def test_a_target_is_judged_on_the_interval_not_the_best_point():
    bench = gpu_check_kernels.Bench("b", "matmul_add", {}, "addmm", ("t1", "t2"), 0.9)
    # t1's point is higher but its interval reaches under the target; t2's clears it.
    state = {"ratios": {"t1": (1.05, 0.85, 1.30), "t2": (0.98, 0.92, 1.04)}}
    row = gpu_check_kernels._target(bench, state, "cuda")
    assert (row["status"], row["best"]) == ("ok", "t2")
    state = {"ratios": {"t1": (1.05, 0.85, 1.30)}}
    row = gpu_check_kernels._target(bench, state, "cuda")
    assert row["status"] == "failed" and "0.85x-1.3x" in row["error"]
