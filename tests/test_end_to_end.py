"""run_suite.py as a user runs it, on a tiny grid, into a temporary folder."""
import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = ["measurements.csv", "kernels.csv", "samples.csv", "rounds.csv", "findings.csv", "env.json",
         "report.html", "report.md", "audit.txt", ".hydra/config.yaml", ".hydra/overrides.yaml"]
PLOTS = ["time_vs_size.png", "speedup.png", "where_time_goes.png", "kernels_per_call.png",
         "answer.png"]

# One tiny case of matmul_add, eager and addmm, unprofiled: a test's own run with these is a
# second run of job 0 of conftest.py's tiny_sweep.
TINY_CASE = ["suite.sizes=[16]", "suite.variants=[eager,addmm]", "device=cpu", "timing=quick",
             "calibrate=false", "profile=off"]


def run_suite(*args, cwd=ROOT):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("TRITON_INTERPRET", None)  # a user's run: Triton rows are skipped on a CPU
    return subprocess.run([sys.executable, str(ROOT / "run_suite.py"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def finish_args(text):
    """The overrides of the last "to finish it: ..." command in `text`, checked to start with
    the interpreter that ran (a bare `python` pasted may lack Hydra) and run_suite.py."""
    words = shlex.split(text.rsplit("to finish it: ", 1)[1].splitlines()[0])
    assert words[0] == sys.executable, words
    program = 2 if words[1] == "-m" else 1
    assert words[program].endswith(("run_suite.py", "run_suite")), words
    return words[program + 1:]


def assert_finished(result, *folders, allow=()):
    """A run that finished exits 0, or 1 exactly when a row is not a result (failed, incorrect,
    or noisy: on a busy machine that happens), and its last line says which."""
    rows = pd.concat([pd.read_csv(Path(f) / "measurements.csv") for f in folders])
    bad = rows["status"].isin(["failed", "incorrect", "noisy"])
    last = result.stdout.strip().splitlines()[-1]
    assert result.returncode == int(bad.any()), (result.returncode, result.stderr[-3000:])
    assert last.startswith("fusebench: ") and (f"{bad.sum()} of {len(rows)} rows are not results"
                                               in last if bad.any() else "ok or skipped" in last)
    assert_audited(result, folders, allow)


AUDIT_LINE = re.compile(r"^audit of run folder (.+?): (\d+) contradictions? in (\d+) statement",
                        re.M)


def assert_audited(result, folders=(), allow=()):
    """Every sweep a test makes is audited (issue 36): each run audits its own pages at its end,
    in its own environment (a user's block on its PYTHONPATH), prints the count and keeps it in
    its folder's audit.txt (a launched job's console is a log file: its folder is read); none
    may find a statement that contradicts another or the numbers it rests on (but the checks in
    `allow`, each contradiction printed on a line `  [check] ...`)."""
    text = result.stdout
    printed = {Path(f[0]).resolve() for f in AUDIT_LINE.findall(text)}
    for folder in folders:
        if Path(folder).resolve() not in printed:
            kept = Path(folder) / "audit.txt"
            assert kept.is_file(), (folder, text[-2000:])
            text += "\n" + kept.read_text()
    found = AUDIT_LINE.findall(text)
    assert found, text[-2000:]
    assert all(f[2] != "0" for f in found), found
    named = re.findall(r"^  \[(\w+)\]", text, re.M)
    assert sum(int(f[1]) for f in found) == len(named)
    bad = [check for check in named if check not in allow]
    assert not bad, text[text.index("audit of run folder"):][:4000]


def test_every_file_is_written(tiny_run):
    out, result = tiny_run
    for name in FILES:
        assert (out / name).is_file(), name
    # Plots are drawn from rows that are results; a busy machine can make some rows noisy.
    ok = pd.read_csv(out / "measurements.csv").query("status == 'ok'")
    assert len(ok), "every row of the tiny run was noisy: the machine was too busy to test"
    expected = PLOTS if (ok["speedup"].notna() & (ok["variant"] != "eager")).any() \
        else [p for p in PLOTS if p != "answer.png"]
    for name in expected:
        assert (out / "plots" / name).stat().st_size > 10_000, name
    assert f"run folder: {out}" in result.stdout
    if (ok["case_id"] == "M40-N40-K40-fp32").any():
        assert "M40-N40-K40-fp32" in result.stdout  # the summary table
    assert not (out / "run_suite.log").exists()  # Hydra's job log is off (conf/config.yaml)
    # The time left, once a case is done ("+ 1 re-measure" where the busy machine made a row of
    # the first case noisy: its second timing is named, not guessed).
    assert re.search(r"left( \+ \d+ re-measures?)?\] M40-N40-K40-fp32", result.stderr), \
        result.stderr


def test_every_case_and_variant_is_a_row(tiny_run):
    out, _ = tiny_run
    frame = pd.read_csv(out / "measurements.csv")
    assert len(frame) == 2 * 5
    assert set(frame["variant"]) == {"eager", "addmm", "compile", "triton", "triton_tma"}
    # A row the machine's load spoiled is `noisy` (and says why); anything else must be ok.
    triton = frame["family"] == "triton"
    ran = frame[~triton]
    assert ran["status"].isin(["ok", "noisy"]).all(), ran[["variant", "status", "reason"]]
    noisy = ran[ran["status"] == "noisy"]
    assert noisy["reason"].str.contains("rounds clean").all() and noisy["speedup"].isna().all()
    ran = ran[ran["status"] == "ok"]
    skipped = frame[triton]
    assert (skipped["status"] == "skipped").all()
    assert skipped["reason"].str.contains("CUDA GPU").all()
    for column in ["median_us", "p10_us", "p90_us", "min_us", "host_us", "device_us", "n_kernels",
                   "n_cpu_ops", "tflops", "gbps", "pct_peak", "max_abs_err", "peak_mem_mb",
                   "first_call_ms", "threads", "rounds", "rounds_dropped"]:
        assert ran[column].notna().all(), column
    # A speedup pairs rounds in which the row and an ok baseline of its case were both clean
    # (rounds.csv says which): one such round gives a speedup, two or more its interval too.
    rounds = pd.read_csv(out / "rounds.csv")
    clean = rounds[rounds["state"] == "clean"].groupby(["case_id", "variant"])["round"].agg(set)
    ok_base = set(ran.loc[ran["variant"] == "eager", "case_id"])
    for _, row in ran.iterrows():
        mine, base = (clean.get((row.case_id, v), set()) for v in (row.variant, "eager"))
        shared = mine & base if row.case_id in ok_base else set()
        where = (row.case_id, row.variant, sorted(shared))
        assert (row.speedup == row.speedup) == bool(shared), where
        if row.variant == "eager" and shared:
            assert row.speedup == row.speedup_low == row.speedup_high == 1.0, where
        elif len(shared) >= 2:
            assert row.speedup_low <= row.speedup <= row.speedup_high, where
        else:
            assert row.speedup_low != row.speedup_low, where  # no interval from one round
    assert ran.loc[ran["variant"] == "compile", "compile_ms"].notna().all()
    assert list(frame.columns[:10]) == ["suite", "op", "case_id", "variant", "family", "dtype",
                                        "device", "M", "N", "K"]


def test_traces_tables_kernels_and_samples_match_the_rows(tiny_run):
    out, _ = tiny_run
    frame = pd.read_csv(out / "measurements.csv")
    ran = frame[frame["status"] == "ok"]
    for _, row in ran.iterrows():
        with gzip.open(out / row["trace"], "rt") as f:
            assert any(e.get("name") == row["variant"] for e in json.load(f)["traceEvents"])
        assert (out / row["table"]).read_text().startswith(row["variant"])
    kernels = pd.read_csv(out / "kernels.csv")
    eager = kernels[(kernels["variant"] == "eager") & (kernels["case_id"] == "M40-N40-K40-fp32")]
    assert set(eager["kernel"]) == {"aten::mm", "aten::add"}
    # Every timed call of every round is kept; a row's figures come from its clean rounds.
    samples = pd.read_csv(out / "samples.csv")
    rounds = pd.read_csv(out / "rounds.csv")
    key = ["case_id", "variant", "round"]
    counted = samples.groupby(key).size()
    assert counted.to_dict() == rounds.set_index(key)["n_samples"].to_dict()
    clean = samples.merge(rounds[rounds["state"] == "clean"][key], on=key)
    counts = clean.groupby(["case_id", "variant"]).size()
    for _, row in ran.iterrows():
        assert counts[(row["case_id"], row["variant"])] == row["n_samples"]
        # Interleaved: the case's variants share round numbers, in a rotated order.
        mine = rounds[(rounds["case_id"] == row["case_id"]) & (rounds["variant"] == row["variant"])]
        assert len(mine) == row["rounds"] + row["rounds_dropped"]
    positions = rounds.groupby(["case_id", "variant"])["position"].nunique()
    assert (positions > 1).all()  # no variant always first


def test_env_has_measured_peaks_probed_twice_and_the_thread_rule(tiny_run):
    env = json.loads((tiny_run[0] / "env.json").read_text())
    assert env["device"] == "cpu" and env["threads"] >= 1
    assert env["threads_rule"].startswith("auto: ")
    assert env["peaks"]["matmul_tflops"]["float32"] > 0 and env["peaks"]["copy_gbps"] > 0
    probes = env["peak_probes"]
    assert len(probes) == 2 and env["peaks"]["copy_gbps"] == max(p["copy_gbps"] for p in probes)
    assert env["rounds"]["shares"] > 0


def test_report_states_bound_and_fusion_per_size(tiny_run):
    out, _ = tiny_run
    html = (out / "report.html").read_text()
    for case_id in ("M16-N16-K16-fp32", "M40-N40-K40-fp32"):
        assert case_id in html
    said = html.split("<h2>What the profile says</h2>")[1].split("<h2>")[0]
    # Findings are stated of clean rows: a case whose eager row the machine made noisy says so.
    rows = pd.read_csv(out / "measurements.csv").set_index(["case_id", "variant"])["status"]
    clean = [c for c in ("M16-N16-K16-fp32", "M40-N40-K40-fp32") if rows[(c, "eager")] == "ok"]
    # Each clean case's verdict is said once: on its own line, or in a line across cases that
    # names eager and the cases it holds for (suites/reports/run/shared_findings.py).
    per_case = sum(said.count(f"eager: {b}-bound") for b in ("overhead", "compute", "memory"))
    across = [li for li in re.findall(r"<li>(.*?)</li>", said, re.S)
              if re.match(r"(overhead|compute|memory)-bound", li) and "eager" in li]
    # "(in eager, at M16 fp32; in compile and addmm, every case)": eager's own part counts.
    covered = 0
    for li in across:
        for part in re.search(r"\((in [^()]*)\)\s*$", li).group(1).split("; "):
            who, at = re.match(r"in (.*?), (every case|at .*|\d+ of .*)$", part).groups()
            if "eager" in re.split(r", | and ", who):
                covered += 2 if at == "every case" else at.count("M16") + at.count("M40")
    assert per_case + covered == len(clean), (per_case, across)
    assert said.count("eager: noisy (too few clean timing rounds)") == 2 - len(clean)
    if (rows.loc[:, "addmm"] == "ok").any():
        assert "aten::addmm replaced aten::mm + aten::add" in said
    assert "data:image/png;base64," in html and "http" not in html.split("<h2>How to read")[0]
    assert (out / "optree.csv").is_file() and "<h2>Op tree per call, against eager</h2>" in html \
        and "<h2>Hotspots: the top 15 ops per call by self time</h2>" in html
    findings = pd.read_csv(out / "findings.csv")
    bounds = findings[findings["code"].str.endswith("_bound") & (findings["variant"] == "eager")]
    assert len(bounds) == len(clean)


def test_multirun_over_dtypes(tiny_sweep, tmp_path):
    sweep, result = tiny_sweep  # conftest.py: -m suite.dtypes=[float32],[bfloat16]
    jobs = sorted(p for p in sweep.iterdir() if p.is_dir() and p.name[0].isdigit())
    assert [p.name for p in jobs] == ["0_matmul_add", "1_matmul_add"]
    dtypes = [pd.read_csv(p / "measurements.csv")["dtype"].tolist() for p in jobs]
    assert dtypes == [["float32"] * 2, ["bfloat16"] * 2]  # eager and addmm
    # sweep.json plans the jobs; each run.json names its job; a job gone is named by collect.
    planned = json.loads((sweep / "sweep.json").read_text())["jobs"]
    assert [j["num"] for j in planned] == [0, 1]
    assert [json.loads((p / "run.json").read_text())["job"]["num"] for p in jobs] == [0, 1]
    assert "sweep of 2 job(s)" in result.stdout.strip().splitlines()[-1]
    copy = tmp_path / "sweep"
    shutil.copytree(sweep, copy)
    shutil.rmtree(copy / jobs[1].name)
    from suites.reports.ladder.command import main as collect
    assert collect([str(copy), "--out", str(tmp_path / "ladder")]) == 0
    page = (tmp_path / "ladder" / "ladder.html").read_text()
    assert "multirun job 1 of 2 (suite.dtypes=[bfloat16]" in page and "left no run folder" in page


@pytest.mark.parametrize("args, message", [
    (["suite=nope"], "suite=nope: unknown suite; accepted: "),
    (["suite.sizes=[0]"], "suite.sizes: 0 is not a positive integer"),
    (["suite.variants=[eager,nope]"], "suite.variants: unknown variant 'nope'"),
    (["suite.sizes=[64"], "suite.sizes=[64: not a valid override"),
])
def test_bad_input_is_one_line_and_leaves_no_run_folder(tmp_path, args, message):
    out = tmp_path / "never"
    result = run_suite(*args, "device=cpu", f"hydra.run.dir={out}")
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("fusebench: error: ") and message in lines[0]
    assert not out.exists()
