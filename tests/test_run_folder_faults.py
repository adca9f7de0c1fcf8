"""Faults of the run folder itself: a disk that fills mid-run (one line, the rows kept whole,
a resume finishes it), two runs started into one folder (one owns it), and sweeps refused before
any work (an empty axis, a size past the device's memory)."""
import os
import subprocess
import sys

import pandas as pd
import pytest

from suites.results.reader import read_state
from test_end_to_end import ROOT, assert_finished, finish_args, run_suite
from test_run_folder import one_line_error


def test_a_case_cut_by_a_full_disk_is_taken_back_out_of_the_journal(tmp_path, monkeypatch):
    import errno
    from suites.results import journal
    path = tmp_path / "measurements.csv"
    journal.append(path, pd.DataFrame({"case_id": ["a"], "median_us": [1.0]}))
    before = path.read_bytes()
    real = os.write

    def half_then_full(fd, data):  # what a disk that fills mid-write does: a short count
        if len(data) > 4:
            return real(fd, data[:len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError) as caught:
        journal.append(path, pd.DataFrame({"case_id": ["b", "c"], "median_us": [2.0, 3.0]}))
    assert journal.disk_full(caught.value) and path.read_bytes() == before
    monkeypatch.setattr(os, "write", real)  # space again: the next case appends as before
    journal.append(path, pd.DataFrame({"case_id": ["b"], "median_us": [2.0]}))
    assert list(pd.read_csv(path)["case_id"]) == ["a", "b"]


# run_suite.py with a disk that fills after the first case's rows: from then on every append
# and every whole-file write fails with ENOSPC, as a real full disk does.
FULL_DISK = """
import errno, sys
import run_suite
from suites.results import atomic, journal
from suites.results.tables import MEASUREMENTS_CSV
cases, append, replacing = [], journal.append, atomic.replacing

def full(path):
    raise OSError(errno.ENOSPC, "No space left on device", str(path))

def appending(path, frame):
    if path.name == MEASUREMENTS_CSV:
        cases.append(path)
    if len(cases) > 1:
        full(path)
    append(path, frame)

def whole(path):
    if len(cases) > 1:
        full(path)
    return replacing(path)

journal.append, atomic.replacing = appending, whole
sys.argv = ["run_suite.py", *sys.argv[1:]]
run_suite.cli()
"""


def test_a_full_disk_stops_the_run_in_one_line_and_a_resume_finishes_it(tmp_path):
    folder = tmp_path / "run"
    args = ["device=cpu", "timing=quick", "calibrate=false", "suite.sizes=[16,24,32]",
            "suite.variants=[eager,addmm]", "suite.dtypes=[float32]", "profile.enabled=false"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("TRITON_INTERPRET", None)
    done = subprocess.run([sys.executable, "-c", FULL_DISK, *args, f"hydra.run.dir={folder}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    last = done.stderr.strip().splitlines()[-1]  # after the cases' progress lines
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert last.startswith(f"fusebench: error: {folder}: the disk is full (writing {folder}/")
    assert "2 of 6 rows are kept there, whole; once there is space, to finish it: " in last
    kept = pd.read_csv(folder / "measurements.csv")  # the first case, whole
    assert list(kept["case_id"]) == ["M16-N16-K16-fp32"] * 2
    # Once there is space, the printed command finishes it; the kept rows are not measured again.
    command = finish_args(last)
    assert command[-2:] == ["resume=true", f"hydra.run.dir={folder}"]
    resumed = run_suite(*command)
    assert_finished(resumed, folder)
    rows = pd.read_csv(folder / "measurements.csv")
    assert len(rows) == 6 and not rows.duplicated(["case_id", "variant"]).any()
    first = rows[rows["case_id"] == "M16-N16-K16-fp32"].set_index("variant")["median_us"]
    assert (first == kept.set_index("variant")["median_us"]).all()


def test_a_nearly_full_disk_is_refused_before_hydra_writes(tmp_path, monkeypatch):
    from suites.common.errors import ConfigError
    from suites.config import folder_lock
    monkeypatch.setattr(folder_lock, "MIN_FREE_BYTES", 1 << 62)  # more than any disk has free
    with pytest.raises(ConfigError, match=r"hydra.run.dir=.*: its disk has \d+ KB free"):
        folder_lock.check_space(tmp_path / "new" / "run", "hydra.run.dir")
    assert not (tmp_path / "new").exists()


def test_two_runs_started_together_into_one_folder_one_runs_one_refuses(tmp_path):
    folder = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("TRITON_INTERPRET", None)
    command = [sys.executable, str(ROOT / "run_suite.py"), "device=cpu", "timing=quick",
               "calibrate=false", "suite.sizes=[16]", "suite.variants=[eager,addmm]",
               "suite.dtypes=[float32]", f"hydra.run.dir={folder}"]
    procs = [subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    refused = [i for i, p in enumerate(procs) if p.returncode == 2]
    assert len(refused) == 1, [(p.returncode, err[-2000:]) for p, (_, err) in zip(procs, outs)]
    winner = procs[1 - refused[0]]
    err = outs[refused[0]][1].strip().splitlines()
    assert len(err) == 1 and f"hydra.run.dir={folder}: another run owns this folder (pid " \
        f"{winner.pid})" in err[0], err
    assert winner.returncode in (0, 1) and read_state(folder)["pid"] == winner.pid
    assert len(pd.read_csv(folder / "measurements.csv")) == 2  # the winner's rows alone
    # The owner has ended: its lock went with it, and the folder is the finished run's.
    one_line_error(run_suite(*command[2:], "resume=true"), "its run is complete")


def test_a_killed_owner_leaves_its_folder_free(tmp_path):
    folder = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from suites.config.folder_lock import own; own(Path(sys.argv[1]), 'x'); "
         "print('held', flush=True); time.sleep(600)", str(folder)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        taken = run_suite("device=cpu", f"hydra.run.dir={folder}")
        one_line_error(taken, f"another run owns this folder (pid {holder.pid})")
        assert sorted(p.name for p in folder.iterdir()) == [".run.lock"]  # nothing written
    finally:
        holder.kill()  # SIGKILL: the kernel drops the lock
        holder.wait()
    free = run_suite("device=cpu", "resume=true", f"hydra.run.dir={folder}")
    one_line_error(free, "holds no run.json: nothing to resume")  # past the lock: its own error


@pytest.mark.parametrize("override, message", [
    ("suite.sizes=[10000000000000]", "suite.sizes: M=10000000000000, N=10000000000000, "
                                     "K=10000000000000: its inputs and output alone take"),
    ("suite.axes=[]", "suite.axes: empty list"),
])
def test_an_empty_axis_or_a_size_past_memory_is_refused_before_any_work(tmp_path, override,
                                                                        message):
    suite = ["suite=mlp"] if override.startswith("suite.axes") else []
    folder = tmp_path / "run"
    one_line_error(run_suite("device=cpu", *suite, override, f"hydra.run.dir={folder}"),
                   message)
    assert not folder.exists()  # refused before any work: nothing left behind
