"""Sweeps through Hydra's submitit launcher: each job a process of its own, on this machine
(submitit_local, always tested) and through a real single-node SLURM (tests/cluster/
start_slurm.sh; skipped where none is running), with a job preempted (requeued) and one
cancelled by scancel, both resumed."""
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from suites.reports.ladder.command import main as collect
from suites.results.reader import read_state
from test_end_to_end import ROOT, assert_finished, finish_args

# Two jobs (one per dtype), small enough for CI, each several cases long.
SWEEP = ["suite.dtypes=[float32],[bfloat16]", "device=cpu", "timing=quick", "calibrate=false",
         "progress=false"]


def launch(*args, wait=True):
    cmd = [sys.executable, str(ROOT / "run_suite.py"), "-m", *args]
    if not wait:
        return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def job_folders(sweep):
    return sorted(p for p in sweep.iterdir() if p.is_dir() and p.name[0].isdigit())


def documented_sweep(launcher: str) -> list[str]:
    """docs/cluster.md's sweep with `launcher`, as a user pastes it: its arguments after
    run_suite.py, its suite list left out (minutes of work on a CPU)."""
    start = f"python run_suite.py -m hydra/launcher={launcher} "
    for line in (ROOT / "docs" / "cluster.md").read_text().splitlines():
        if line.startswith(start):
            return [a for a in shlex.split(line.split("#", 1)[0])[2:] if not a.startswith("suite=")]
    raise AssertionError(f"docs/cluster.md shows no sweep starting {start!r}")


def test_the_documented_local_sweep_times_one_job_at_a_time_and_collects(tmp_path):
    """The sweep folder's name holds `${pid:}`, which each submitit job resolves again in a
    process of its own: its run folder must still land in the folder the launching process
    planned (sweep.json) and looks in. The other tests give hydra.sweep.dir, which hides it; a
    user pasting the documented command does not. Run from a fresh folder, so `results/` is
    made there. The same sweep shows the launcher's order: submitit starts both jobs at once,
    the device lock times one after the other, and collect reads the sweep."""
    args = documented_sweep("local")
    assert args == ["-m", "hydra/launcher=local"]
    # No compile variant: its cold compiles (10-16 s a job) would be most of this test's time,
    # and the launcher's ordering is what it checks.
    small = [*SWEEP, "suite.sizes=[16,24]", "suite.variants=[eager,addmm,triton]"]
    # Each job's process imports the project from here, whatever folder it runs in.
    paths = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run([sys.executable, str(ROOT / "run_suite.py"), *args, *small],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    sweeps = list((tmp_path / "results" / "multirun").iterdir())
    assert len(sweeps) == 1, (sweeps, done.stderr[-3000:])  # no folder of a job's own pid
    sweep = sweeps[0]
    jobs = job_folders(sweep)
    assert [p.name for p in jobs] == ["0_matmul_add", "1_matmul_add"], done.stderr[-3000:]
    assert "left no run folder" not in done.stderr
    assert_finished(done, *jobs)
    assert f"sweep of 2 job(s) in results/multirun/{sweep.name}" in done.stdout
    states = [read_state(p) for p in jobs]
    assert [s["job"]["num"] for s in states] == [0, 1]
    # submitit starts both at once; the device lock has the second wait for the first.
    first, second = sorted(states, key=lambda s: s["started"])
    assert first["finished"] <= second["started"]
    waited = [json.loads((p / "env.json").read_text()).get("waited_for_device_s") for p in jobs]
    assert sum(1 for w in waited if w) == 1
    assert collect([str(sweep), "--out", str(tmp_path / "ladder")]) == 0
    ladder = pd.read_csv(tmp_path / "ladder" / "ladder.csv")
    assert sorted(set(ladder["dtype"])) == ["bfloat16", "float32"]


def test_a_stopped_sweep_resumes_its_unfinished_jobs_and_leaves_the_rest(tmp_path):
    """Ctrl-C in job 1 of a sweep (Hydra's own launcher: one process) stops the sweep; the same
    command with resume=true leaves job 0 as it is and finishes job 1."""
    sweep = tmp_path / "sweep"
    args = [*SWEEP, "suite.sizes=[16,24,32,40]", "suite.variants=[eager,addmm]"]
    proc = launch(*args, f"hydra.sweep.dir={sweep}", wait=False)
    deadline = time.monotonic() + 240
    while proc.poll() is None and time.monotonic() < deadline:
        state = read_state(sweep / "1_matmul_add") if sweep.is_dir() else None
        if state and state["done"] > 0:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the sweep finished before the signal arrived")
    assert proc.returncode == 130, err[-3000:]
    first = pd.read_csv(sweep / "0_matmul_add" / "measurements.csv")
    done = launch(*args, "resume=true", f"hydra.sweep.dir={sweep}")
    jobs = job_folders(sweep)
    assert_finished(done, *jobs)
    assert "0_matmul_add: this job's run is complete; nothing to do" in done.stdout
    assert "job 1: resuming the unfinished run in" in done.stderr
    assert pd.read_csv(jobs[0] / "measurements.csv").equals(first)  # left as it was
    for job in jobs:
        rows, state = pd.read_csv(job / "measurements.csv"), read_state(job)
        assert state["state"] == "complete" and len(rows) == state["planned"] == 8


def slurm_up() -> bool:
    if not shutil.which("sinfo") or not shutil.which("sbatch"):
        return False
    done = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
    return done.returncode == 0 and any(s in done.stdout for s in ("idle", "mixed", "alloc"))


# Two jobs on a CPU-only node, each 8 cases long: a job is still running when a signal sent
# after its first case reaches it. No compile variant: its cold compiles (twice a job, before
# and after the signal) would be most of these tests' time, and a job's stop and resume is
# what they check.
SLURM_SWEEP = ["hydra/launcher=slurm", "hydra.launcher.gpus_per_node=null",
               "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=2",
               "hydra.launcher.timeout_min=15", *SWEEP, "suite.sizes=[16,24,32,40,48,56,64,72]",
               "suite.variants=[eager,addmm,triton]"]
SLURM_ROWS = 8 * 3


@pytest.mark.skipif(not slurm_up(), reason="no SLURM here: `sudo bash tests/cluster/"
                                           "start_slurm.sh` starts one on this machine")
def test_slurm_jobs_preempted_or_cancelled_resume(tmp_path):
    """The two ways a cluster stops a job, one in each job of one sweep (the device lock times
    them one after the other). Preempted: USR2 (as a cluster sends before a time-out or
    preemption) makes submitit requeue the job and exit; the requeued job finds its own
    unfinished run and resumes it, unasked (SLURM holds a requeued job about two minutes
    before it starts: _start_requeued_now). Cancelled: scancel's SIGTERM stops the other job
    for good; the sweep says so, and its command again with resume=true finishes that job from
    where it stopped and leaves the complete one alone."""
    sweep = tmp_path / "sweep"
    proc = launch(*SLURM_SWEEP, f"hydra.sweep.dir={sweep}", wait=False)
    preempted = _first_job_with_rows(sweep, proc)
    job_id = read_state(preempted)["cluster_job"]
    subprocess.run(["scancel", "--signal=USR2", job_id], check=True)
    _start_requeued_now(job_id, proc)
    # The other job times once the preempted one has let the device go.
    cancelled = _first_job_with_rows(sweep, proc, besides=preempted)
    subprocess.run(["scancel", read_state(cancelled)["cluster_job"]], check=True)
    out, err = proc.communicate(timeout=500)
    log = "".join(p.read_text() for p in sweep.glob(".submitit/*/*.out"))
    if "Requeued job" not in log:
        pytest.skip("the job finished before the signal reached it")
    assert f"resuming the unfinished run in {preempted} (interrupted, " in log
    assert read_state(preempted)["state"] == "complete"
    state = read_state(cancelled)
    if state["state"] == "complete":
        pytest.skip("the job finished before scancel reached it")
    assert state["state"] == "interrupted" and "SIGTERM" in state["reason"], state
    last = out.strip().splitlines()[-1]
    assert proc.returncode == 1 and "1 of 2 runs did not complete" in last, err[-3000:]
    kept = {job: pd.read_csv(job / "measurements.csv").set_index(["case_id", "variant"])
            for job in (preempted, cancelled)}
    command = finish_args(last)
    assert "resume=true" in command and f"hydra.sweep.dir={sweep}" in command
    done = launch(*[a for a in command if a != "-m"])
    jobs = job_folders(sweep)
    assert_finished(done, *jobs)
    for job in jobs:
        rows = pd.read_csv(job / "measurements.csv")
        state = read_state(job)
        assert state["state"] == "complete" and len(rows) == state["planned"] == SLURM_ROWS
        assert not rows.duplicated(["case_id", "variant"]).any()
        again = rows.set_index(["case_id", "variant"])
        before = kept[job]["median_us"].fillna(-1)
        assert (again.loc[before.index, "median_us"].fillna(-1) == before).all()
    assert collect([str(sweep), "--out", str(tmp_path / "ladder")]) == 0


def _start_requeued_now(job_id: str, proc, timeout_s: float = 120) -> None:
    """SLURM holds a requeued job about two minutes (its begin time set ahead): once the job is
    pending again, its begin time is set to now, so the test does not wait those minutes. What
    is tested (the requeue, the job finding and resuming its own run) is unchanged."""
    base = job_id.split("_")[0]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        state = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True,
                               text=True).stdout.split()
        if state and state[0] == "PENDING":
            subprocess.run(["scontrol", "update", f"JobId={job_id}", "StartTime=now"],
                           capture_output=True)
            subprocess.run(["scontrol", "update", f"JobId={base}", "StartTime=now"],
                           capture_output=True)
            return
        time.sleep(0.5)


def _first_job_with_rows(sweep, proc, timeout_s=240, besides=None):
    """The job folder (but `besides`) that has written its first case (and is still running)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for job in job_folders(sweep) if sweep.is_dir() else []:
            state = read_state(job)
            if job != besides and state and state["state"] == "running" and state["done"] > 0:
                return job
        if proc.poll() is not None:
            pytest.fail(f"the sweep ended before a job wrote a row: {proc.stderr.read()[-3000:]}")
        time.sleep(0.2)
    pytest.fail("no job wrote a row in time")
