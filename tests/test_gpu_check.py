"""gpu_check's plumbing, on a CPU: every plan composes into a run spec, it writes each result
as a JSON line when it is known, runs each section in a process of its own that is killed at
the end of its window, packs every run folder into one archive, turns a passed deadline into
`deadline` rows, exits 1 only for failed/noisy/deadline rows, and forces every autotune config
of a kernel (under Triton's interpreter here, with its one config per kernel)."""
import tarfile
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


def _gpu_check(out: Path, *args: str, env_extra: dict | None = None
               ) -> tuple[int, list[dict], str]:
    """gpu_check in a fresh interpreter, as on the lent machine (no TRITON_INTERPRET there).
    Its device lock in a temporary folder of its own: a plumbing run need not wait for
    another run on this machine to end (harness/device_lock.py); its run folders beside OUT,
    as a lease's would be beside $OUT."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    (out.parent / f"{out.name}-tmp").mkdir(parents=True)
    env["TMPDIR"] = str(out.parent / f"{out.name}-tmp")
    env.update(env_extra or {})
    runs = out.parent / f"{out.name}-runs"
    done = subprocess.run([sys.executable, "-c", SCRIPT, "--allow-cpu", "--out", str(out),
                           "--runs-dir", str(runs), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
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
    """The whole deadline: the sections share all but the time kept for the archive and the
    summary; the default fits a 590 s command."""
    assert sum(gpu_check.budgets(["300"]).values()) + gpu_check.FINISH_S == pytest.approx(300)
    assert gpu_check.DEADLINE_S <= 590 - 25  # interpreter start-up and imports to spare
    assert gpu_check.budgets(["suites=10"])["suites"] == 10
    for bad in (["nosuch=10"], ["suites=-1"], ["soon"]):
        with pytest.raises(SystemExit):
            gpu_check.budgets(bad)


def test_windows_hold_the_deadline_by_construction():
    """Unused time goes forward; an overrun is taken back from the sections after it; the
    windows never pass what is left."""
    from suites.tools.gpu_check_schedule import window

    assert window(30, 500, 530) == 30               # on time: its budget
    assert window(75, 440, 600) == 160              # earlier ones left 85 s: it may use them
    short = window(75, 440, 400)                    # earlier ones overran by 115 s
    assert short == pytest.approx(400 * 75 / 515) and short < 75
    assert window(155, 0, 40) == 40 and window(10, 100, 0) == 0
    left = 545.0
    budgets = list(gpu_check.BUDGET_S.values())
    for index, budget in enumerate(budgets):  # every section runs to the end of its window
        left -= window(budget, sum(budgets[index + 1:]), left)
    assert left == pytest.approx(0) or left > 0

@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's path, on a CPU")
def test_each_kept_config_is_forced_and_checked(tmp_path, monkeypatch):
    """Under the interpreter, with three configs of which the pruning keeps two, and a fake
    benchmark (the interpreter cannot time): the pick is checked, then each kept config alone
    on each specialisation it compiles to (the test shape's masked K loop, the extra shape's
    unmasked and aligned one), and the pruned one is a skipped row for each. fp32 through
    tf32x3 (the TMA GEMM) is held to the tf32x3 floor, the exact fp32 GEMM to fp32's."""
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
    assert [r["status"] for r in forced] == ["ok"] * 4 + ["skipped"] * 2
    assert [r["item"].rsplit("[", 1)[1] for r in forced] == [
        "M32 N32 K32 GM4 w4 s1]", "M32 N32 K32 GM4 w4 s1]", "M16 N32 K16 GM2 w4 s1]",
        "M16 N32 K16 GM2 w4 s1]", "M64 N16 K32 GM8 w4 s1]", "M64 N16 K32 GM8 w4 s1]"]
    assert [r.get("via") for r in forced[:2]] == ["matmul_add/triton M37-N45-K29-fp32",
                                                  "matmul_add/triton M48-N80-K64-fp32"]
    masked, even = forced[0]["item"], forced[1]["item"]
    assert " EVEN_K;" not in masked and "not /16: M N K" in masked
    assert " EVEN_K;" in even and even.endswith("; aligned) [M32 N32 K32 GM4 w4 s1]")
    assert all(r["scaled_err"] <= r["tolerance"] for r in forced[:4])
    assert all("pruned" in r["error"] for r in forced[4:])
    assert "floor" not in picked
    tma = rows["matmul_add/triton_tma M48-N80-K64-fp32 autotuned"]
    assert tma["status"] == "ok" and tma["floor"] == "tf32x3 %.1e" % gpu_check_configs.TF32X3_FLOOR


def _traced_calls(monkeypatch, configs, prune) -> gpu_check_configs.Tracer:
    """Pass 1's calls of the GEMM ops on every float32 check case, with these configs and
    pruning for the GEMM kernels: recorded by the Tracer, never run (nothing compiles)."""
    from triton.runtime.autotuner import Autotuner

    tuners, _ = gpu_check_configs.find_autotuners()
    for name in ("gemm._matmul_bias_act_kernel", "gemm_geglu._matmul_geglu_kernel"):
        monkeypatch.setattr(tuners[name], "configs", configs)
        monkeypatch.setattr(tuners[name], "early_config_prune", prune)
    monkeypatch.setattr(Autotuner, "run", lambda self, *args, **kwargs: None)
    tracer = gpu_check_configs.Tracer(tuners)
    with tracer:
        for op_name, variant_name in (("matmul_add", "triton"), ("linear", "triton"),
                                      ("mlp", "triton_fused")):
            op, variant = registry.get_op(op_name), registry.get_variant(op_name, variant_name)
            for case in gpu_check_configs.cases(op, "float32", "cpu"):
                tracer.current = (op_name, variant_name, case)
                variant.prepare(case, op.make_inputs(case, torch.Generator().manual_seed(0)))()
    return tracer


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's kernels, on a CPU")
def test_pass_two_checks_every_specialisation_of_every_kept_config(monkeypatch):
    """Pass 2's plan, from pass 1's calls (not run): with block depths 32 and 64, each GEMM
    config is forced on the unmasked (EVEN_K) and the masked K loop with B row-major
    (matmul_add) and as a weight.t() view (linear), once aligned as the suites run; GeGLU on
    both K loops; every specialisation once (the item names say them apart), each by a call
    whose pruning keeps the config, and a config pruned for every call of a specialisation
    is planned as skipped."""
    from kernels.triton.gemm_common import config

    deep, shallow = config(64, 64, 64, 4, 4), config(64, 32, 32, 4, 4)
    # The shallow config is pruned for the masked K loop only.
    tracer = _traced_calls(monkeypatch, [deep, shallow], lambda cs, named, **kw: [
        c for c in cs if c is deep or named["K"] % c.kwargs["BLOCK_SIZE_K"] == 0])
    plan = list(gpu_check_configs.plan_two(tracer, "float32"))
    names = [gpu_check_configs.item_name(tracer, *row[:3]) for row in plan]
    assert len(set(names)) == len(names)
    for kernel, layouts in (("gemm._matmul_bias_act_kernel", {"row-major", "w.t()"}),
                            ("gemm_geglu._matmul_geglu_kernel", {"w.t()"})):
        for c in (deep, shallow):
            rows = [(spec, use, kept) for k, spec, cfg, use, kept in plan
                    if k == kernel and cfg is c]
            paths = set()
            for spec, use, kept in rows:
                value = {name: v for name, _, v in spec}
                unit = {name for name, kind, v in spec if kind == "constexpr" and v == 1
                        and name.startswith("stride_")}
                weight_t = bool(unit & {"stride_bk", "stride_gk"})  # B's K stride is 1
                paths.add((value["EVEN_K"], "w.t()" if weight_t else "row-major"))
                assert tracer.spec(kernel, use.named, c) == spec  # the call compiles to it
                assert kept == (c is deep or value["EVEN_K"])
                assert kept == any(c is k for k in use.kept)
            assert paths == {(even, layout) for even in (True, False) for layout in layouts}
            assert any(not gpu_check_configs.odd_arguments(spec) for spec, _, _ in rows)


def test_the_tf32x3_floor_covers_the_checks_and_stays_under_tf32():
    """The tf32x3 floor is derived for the longest reduction the checks run (flash's keys and
    head dims, the TMA GEMM's K) and is between fp32's floor and plain TF32's error."""
    from suites.harness.correctness import FLOOR

    longest = max(max(s["S"], s["D"]) for s in gpu_check_configs.EXTRA_SHAPES["attention"])
    longest = max(longest, *(s["K"] for s in gpu_check_configs.EXTRA_SHAPES["matmul_add"]))
    assert longest <= gpu_check_configs.TF32X3_REDUCTION
    assert FLOOR["float32"] < gpu_check_configs.TF32X3_FLOOR < 2 ** -11 / 4


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU plumbing")
def test_cpu_plumbing_end_to_end(tmp_path):
    """The dry run of a whole lease on a CPU: each section in a process of its own, the whole
    within its deadline, every run folder's tables in the archive, exit status and summary
    right."""
    out = tmp_path / "out"
    started = time.monotonic()
    code, rows, output = _gpu_check(out, "--deadline-s", "300")
    took = time.monotonic() - started
    assert took < 300 + 10, output  # the deadline, and the interpreter's start-up
    # A row the busy machine made noisy is its own status (exit 1, as the harness's), not failed.
    noisy = [r for r in rows if r["status"] == "noisy"]
    assert all(r["harness_status"] == "noisy" for r in noisy)
    assert code == (1 if noisy else 0), output
    sections = list(dict.fromkeys(r["section"] for r in rows))
    assert sections == [*gpu_check.SECTIONS, "archive"]
    pids = {s: {r["pid"] for r in rows if r["section"] == s and r["item"] != "run"}
            for s in gpu_check.SECTIONS}  # the check's own row of its arguments aside
    assert all(len(p) == 1 for p in pids.values()) and len(set.union(*pids.values())) == 4
    assert [r["t_s"] for r in rows] == sorted(r["t_s"] for r in rows)
    by_item = {(r["section"], r["item"]): r for r in rows}
    configs = [r for r in rows if r["section"] == "configs" and r["item"] != "autotune picks"]
    assert configs and all(r["status"] == "skipped" for r in configs)
    assert any(r["item"].startswith("gemm._matmul_bias_act_kernel [") for r in configs)
    assert by_item[("kernels", "gemm_bf16_4096 target")]["status"] == "skipped"
    for probe in ("cupti probe", "sm clock", "l2 flush kinds"):
        assert by_item[("environment", probe)]["status"] == "skipped"
    run = by_item[("suites", "matmul_add")]
    assert run["status"] == "ok" and run["reproduce"].startswith("python run_suite.py")
    eager = by_item[("suites", "matmul_add M64-N64-K64-fp32 eager")]
    assert eager["status"] in ("ok", "noisy") and eager["series_kernels"] == "2" \
        and eager["n_kernels"] > 0
    assert by_item[("suites", "matmul_add M64-N64-K64-fp32 triton")]["status"] == "skipped"
    assert by_item[("suites", "attention")]["status"] == "skipped"  # its spec built, not run
    assert (Path(run["folder"]) / "measurements.csv").is_file()
    summary = (out / "summary.txt").read_text()
    assert "kernels per call" in summary and "archive: " in summary
    assert "whole check" in summary and f"exit {code}" in summary

    archive = by_item[("archive", "runs.tar.gz")]
    assert archive["status"] == "ok" and archive["run_folders"] == ["matmul_add"]
    assert sorted(p.name for p in out.iterdir()) == ["log.txt", "results.jsonl",
                                                     "runs.tar.gz", "summary.txt"]
    with tarfile.open(out / "runs.tar.gz") as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    folder = next((tmp_path / "unpacked").glob("*/matmul_add"))
    from suites.results.reader import RunFolder
    read = RunFolder(folder)
    assert len(read.measurements) == 3  # eager, addmm, triton at M64
    for table in ("env.json", "rounds.csv", "kernels.csv", "findings.csv", "optree.csv"):
        assert (folder / table).is_file(), table
    assert any((folder / "traces").iterdir())


def test_a_stuck_section_is_killed_at_its_window_and_the_next_one_runs(tmp_path):
    """A section that never returns (as a kernel blocked in a device sync would) is killed at
    the end of its window with every stack dumped to log.txt; the section after it runs."""
    out = tmp_path / "out"
    started = time.monotonic()
    # The stuck window is all this test waits for: long enough for the section's process to
    # start (3 s on a quiet machine) and set its stack dump, STACKS_BEFORE_S before the kill.
    code, rows, output = _gpu_check(
        out, "--sections", "environment", "kernels", "--deadline-s", "environment=12",
        "kernels=25", env_extra={"GPU_CHECK_STALL_SECTION": "environment"})
    assert time.monotonic() - started < 12 + 25 + gpu_check.FINISH_S + 15, output
    assert code == 1, output
    killed = [r for r in rows if (r["section"], r["item"]) == ("environment", "section")]
    assert killed and killed[0]["status"] == "deadline" and "killed" in killed[0]["error"]
    assert any(r["section"] == "kernels" and r["item"] == "gemm_bf16_4096 target" for r in rows)
    log = (out / "log.txt").read_text()
    assert "Thread" in log and "_child" in log  # faulthandler's dump of the stuck process
    archive = [r for r in rows if r["section"] == "archive"]
    assert archive[0]["status"] == "skipped"  # no suite ran: nothing to pack, said so


def test_an_archive_over_the_limit_leaves_the_traces_out(tmp_path):
    from suites.tools.gpu_check_archive import pack

    run = tmp_path / "runs" / "matmul_add"
    (run / "traces").mkdir(parents=True)
    (run / "measurements.csv").write_text("a,b\n1,2\n")
    (run / "traces" / "t.json").write_bytes(os.urandom(200_000))  # does not compress
    out = tmp_path / "out"
    out.mkdir()
    row = pack(tmp_path / "runs", out, limit=100_000)
    assert "traces left out (1 files)" in row["note"] and row["files"] == 1
    with tarfile.open(out / "runs.tar.gz") as tar:
        assert tar.getnames() == ["runs/matmul_add/measurements.csv"]
    row = pack(tmp_path / "runs", out)
    assert "note" not in row and row["files"] == 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU plumbing")
def test_a_passed_deadline_is_rows_and_exit_1(tmp_path):
    code, rows, output = _gpu_check(tmp_path / "out", "--sections", "suites", "--deadline-s",
                                    "suites=0")
    suites = [r for r in rows if r["section"] == "suites"]
    assert code == 1, output
    assert [(r["item"], r["status"]) for r in suites] == [("section", "deadline")]
    assert "not started" in suites[0]["error"]
    assert "deadline" in (tmp_path / "out" / "summary.txt").read_text()


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
