"""The run folder: bad ones are one line before any work, a folder holding anything but Hydra's
files is refused, nothing the run did not create is ever deleted, and a report links only to
files inside its run folder."""
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from suites.reports.run.build import write_report
from suites.reports.kit.page import inside_run, table
from suites.results.reader import read_state
from test_end_to_end import ROOT, assert_finished, finish_args, run_suite

BAD_VALUE = "profile.wait=-1"  # any bad config value: the run stops before any work


def one_line_error(result, text):
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and text in lines[0], result.stderr[-2000:]


def test_an_empty_run_dir_is_refused_before_hydra_writes_anything(tmp_path):
    one_line_error(run_suite("hydra.run.dir=", cwd=tmp_path), "hydra.run.dir: empty")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_holding_another_run_is_refused_and_kept(tmp_path):
    folder = tmp_path / "mine"
    (folder / ".hydra").mkdir(parents=True)
    (folder / ".hydra" / "config.yaml").write_text("another tool's\n")
    (folder / "notes.txt").write_text("keep me\n")
    one_line_error(run_suite("device=cpu", f"hydra.run.dir={folder}"), "the folder is not empty")
    assert (folder / "notes.txt").read_text() == "keep me\n" and (folder / ".hydra").is_dir()


def test_a_config_error_removes_only_what_the_run_created(tmp_path):
    folder = tmp_path / "theirs"
    (folder / ".hydra").mkdir(parents=True)  # another tool's Hydra folder, nothing else
    one_line_error(run_suite("device=cpu", BAD_VALUE, f"hydra.run.dir={folder}"), "profile.wait")
    assert (folder / ".hydra").is_dir()
    new = tmp_path / "new"
    one_line_error(run_suite("device=cpu", BAD_VALUE, f"hydra.run.dir={new}"), "profile.wait")
    assert not new.exists()  # made by this run, and nothing ran: gone


def test_a_run_dir_under_a_file_or_proc_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    one_line_error(run_suite(f"hydra.run.dir={tmp_path / 'file' / 'run'}"), "is a file")
    one_line_error(run_suite("hydra.run.dir=/proc/fusebench"), "kernel filesystem")
    # Given twice, Hydra takes the last: so does the check.
    one_line_error(run_suite(f"hydra.run.dir={tmp_path / 'fine'}", "hydra.run.dir=/proc/x"),
                   "kernel filesystem")
    one_line_error(run_suite("-m", "device=cpu", f"hydra.sweep.dir={tmp_path / 'file'}"),
                   "hydra.sweep.dir=")


def test_reports_link_only_to_files_inside_the_run_folder():
    for bad in ["javascript:alert(1)", "JAVASCRIPT:x", "https://example.com/t.json",
                "/etc/passwd", "../other_run/traces/x.json.gz", "traces\\..\\..\\x"]:
        assert not inside_run(bad), bad
    assert inside_run("traces/M64__eager.json.gz")
    frame = pd.DataFrame({"case_id": ["a", "b"], "trace": ["traces/a.json.gz",
                                                            "javascript:alert(1)"]})
    page = table(frame, {"case_id": "case", "trace": "trace"}, links={"trace": "trace"})
    assert 'href="traces/a.json.gz"' in page and "href=\"javascript" not in page


# 8 cases, 16 rows: long enough that a signal sent after the first case lands mid-run.
SIZES = ",".join(str(n) for n in range(16, 16 + 8 * 8, 8))
PLANNED = 16


SWEEP = ["device=cpu", "timing=quick", "calibrate=false", f"suite.sizes=[{SIZES}]",
         "suite.variants=[eager,addmm]", "suite.dtypes=[float32]"]


def _start_sweep(folder):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("TRITON_INTERPRET", None)
    return subprocess.Popen(
        [sys.executable, str(ROOT / "run_suite.py"), *SWEEP, f"hydra.run.dir={folder}"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_rows(folder, proc, rows=2, timeout=120):
    """Until the journal holds `rows` rows (header excluded), or the run ended."""
    file, deadline = folder / "measurements.csv", time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if file.exists() and len(file.read_text().splitlines()) > rows:
            return
        time.sleep(0.05)


# Each stopped run is then resumed, but SIGTERM's: it stops a run as SIGINT does (the run says
# how to finish it). After SIGKILL nothing was said and run.json still says running.
@pytest.mark.parametrize("sig, code, resume", [(signal.SIGINT, 130, True),
                                               (signal.SIGTERM, 143, False),
                                               (signal.SIGKILL, -9, True)])
def test_a_stopped_run_keeps_every_finished_row_and_resumes_to_the_planned_rows(tmp_path, sig,
                                                                                code, resume):
    folder = tmp_path / "run"
    proc = _start_sweep(folder)
    _wait_for_rows(folder, proc)
    if proc.poll() is not None:
        pytest.skip("the sweep finished before the signal could be sent")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the sweep finished before the signal arrived")
    state = read_state(folder)
    rows = pd.read_csv(folder / "measurements.csv")
    assert proc.returncode == code, (proc.returncode, err[-3000:])
    assert 2 <= len(rows) < PLANNED and not rows.duplicated(["case_id", "variant"]).any()
    assert state["planned"] == PLANNED
    # A kill can land between a case's rows reaching the tables and run.json counting them.
    assert state["done"] <= len(rows) <= state["done"] + (2 if sig == signal.SIGKILL else 0)
    samples = pd.read_csv(folder / "samples.csv")  # whole lines only, every row's samples
    assert set(samples["case_id"]) == set(rows["case_id"])
    # The report over what finished says the run is incomplete, and why.
    page = write_report(folder).read_text()
    assert "is incomplete" in page and f"{state['done']} of its {PLANNED} planned rows" in page
    if sig == signal.SIGKILL:
        assert state["state"] == "running"  # nobody could say otherwise: the pid is gone
        assert "stopped without a word" in page
    else:
        assert state["state"] == "interrupted" and signal.Signals(sig).name in state["reason"]
        assert f"interrupted by {signal.Signals(sig).name}: {len(rows)} of {PLANNED} rows" in err
        assert "Traceback" not in err
    if resume:
        _resumes_to_exactly_the_planned_rows(folder, sig, err, kept=rows)


def _resumes_to_exactly_the_planned_rows(folder, sig, err, kept):
    if sig == signal.SIGINT:  # the run says how to finish it, with the interpreter that ran
        command = finish_args(err.strip().splitlines()[-1])
        assert "resume=true" in command and f"hydra.run.dir={folder}" in command
    else:  # killed: nothing was said, and run.json still says running
        command = [*SWEEP, "resume=true", f"hydra.run.dir={folder}"]
    # Another config is refused by name; then the same one finishes the run.
    other = run_suite("device=cpu", "timing=quick", "calibrate=false", "suite.sizes=[16]",
                      "resume=true", f"hydra.run.dir={folder}")
    one_line_error(other, "suite.sizes=[16, 24")
    done = run_suite(*command)
    assert_finished(done, folder)
    rows = pd.read_csv(folder / "measurements.csv")
    assert len(rows) == PLANNED and not rows.duplicated(["case_id", "variant"]).any()
    assert read_state(folder)["state"] == "complete"
    before = kept.set_index(["case_id", "variant"])["median_us"]
    after = rows.set_index(["case_id", "variant"]).loc[before.index, "median_us"]
    assert (after == before).all()  # the finished rows were kept, not measured again
    samples = pd.read_csv(folder / "samples.csv")
    assert set(samples["case_id"]) == set(rows["case_id"])
    again = run_suite(*command)
    one_line_error(again, "its run is complete: nothing to resume")


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("small") / "run"
    done = run_suite("device=cpu", "timing=quick", "calibrate=false", "suite.sizes=[16]",
                     "suite.variants=[eager,addmm]", "suite.dtypes=[float32]",
                     f"hydra.run.dir={folder}")
    assert_finished(done, folder)
    return folder


def test_a_report_builds_without_findings_or_env_and_says_so(small_run, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(small_run, folder)
    (folder / "findings.csv").unlink()
    (folder / "env.json").unlink()
    page = write_report(folder).read_text()
    assert "no findings.csv: no findings to show" in page and "no env.json" in page


def test_readers_name_a_cut_table(small_run, tmp_path, capsys):
    folder = tmp_path / "cut"
    shutil.copytree(small_run, folder)
    lines = (folder / "measurements.csv").read_text().splitlines(keepends=True)
    (folder / "measurements.csv").write_text("".join(lines[:-1]))  # the last row lost
    from suites.reports.compare.command import main as compare
    assert compare([str(small_run), str(folder), "--out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out
    assert f"B: {folder / 'measurements.csv'}: holds 1 rows where run.json counted 2 written" in out
    assert "holds 1 rows where run.json counted 2" in write_report(folder).read_text()


def test_readers_name_a_sample_table_cut_or_garbled(small_run, tmp_path):
    from suites.results.reader import read_run
    assert read_run(small_run).problems == []
    cut = tmp_path / "cut"  # cut inside its last row: pandas alone reads it without a word
    shutil.copytree(small_run, cut)
    text = (cut / "samples.csv").read_bytes()
    (cut / "samples.csv").write_bytes(text[:-4])
    assert any("samples.csv: cut inside its last row" in p for p in read_run(cut).problems)
    short = tmp_path / "short"  # cut at a row's end: only run.json's count tells
    shutil.copytree(small_run, short)
    lines = (short / "rounds.csv").read_text().splitlines(keepends=True)
    (short / "rounds.csv").write_text("".join(lines[:-2]))
    assert any(f"rounds.csv: holds {len(lines) - 3} rows where run.json counted {len(lines) - 1}"
               in p for p in read_run(short).problems)
    garbled = tmp_path / "garbled"
    shutil.copytree(small_run, garbled)
    samples = pd.read_csv(garbled / "samples.csv")
    samples["time_us"] = samples["time_us"].astype(object)
    samples.loc[[0, 3], "time_us"] = "12,5us"
    samples.to_csv(garbled / "samples.csv", index=False)
    files = read_run(garbled)
    assert any("samples.csv: 2 value(s) in numeric columns are not numbers" in p
               for p in files.problems)
    assert files.samples["time_us"].isna().sum() == 2  # left out, never read as a time
    assert not read_run(garbled, samples=False).problems  # not read: not judged
    rows = pd.read_csv(garbled / "measurements.csv")
    rows["median_us"] = rows["median_us"].astype(object)
    rows.loc[0, "median_us"] = "fast"
    rows.to_csv(garbled / "measurements.csv", index=False)
    assert any("measurements.csv: 1 value(s) in numeric columns are not numbers" in p
               for p in read_run(garbled, samples=False).problems)


def _damaged(small_run, folder, damage):
    shutil.copytree(small_run, folder)
    damage(folder)
    return folder


def _edit_rows(change):
    def damage(folder):
        rows = pd.read_csv(folder / "measurements.csv")
        change(rows)
        rows.to_csv(folder / "measurements.csv", index=False)
    return damage


def _append_first_row(file):
    text = file.read_text()
    file.write_text(text + text.splitlines(keepends=True)[1])


# Damage a reader must name in the banner, never crash on nor show as a number.
DAMAGE = {
    "env.json a list": (lambda f: (f / "env.json").write_text("[1, 2]"),
                        "env.json: a JSON list, not an object"),
    "env.json cut": (lambda f: (f / "env.json").write_text('{"device": "cp'),
                     "env.json: not readable JSON"),
    "env timing a string": (lambda f: (f / "env.json").write_text('{"timing": "quick", '
                                                                   '"rounds": [1]}'),
                            "env.json: timing, rounds of the wrong type"),
    "run.json a list": (lambda f: (f / "run.json").write_text("[]"),
                        "run.json: garbled (not a JSON object)"),
    "run.json gone": (lambda f: (f / "run.json").unlink(), "no run.json"),
    "negative median": (_edit_rows(lambda r: r.__setitem__("median_us", -5.0)),
                        "2 impossible value(s) in median_us"),
    # Both ends set: a row the busy machine made noisy has no interval of its own to turn.
    "interval upside down": (_edit_rows(lambda r: r.loc.__setitem__(
                                 (slice(None), ["speedup_low", "speedup_high"]), [9.0, 8.0])),
                             "speedup interval upside down in 2 row(s)"),
    "a row twice": (lambda f: _append_first_row(f / "measurements.csv"),
                    "1 row(s) of measurements.csv are there twice"),
    "findings of another tool": (lambda f: (f / "findings.csv").write_text("a,b\n1,2\n"),
                                 "findings.csv: no column(s) suite, case_id"),
    "kernels.csv gone": (lambda f: (f / "kernels.csv").unlink(), None),
    "a variant this version lacks": (_edit_rows(lambda r: r.__setitem__("variant", ["eager",
                                                                                   "zzz"])),
                                     None),
}


@pytest.mark.parametrize("name", list(DAMAGE))
def test_a_damaged_run_folder_is_reported_with_the_damage_named(small_run, tmp_path, name):
    damage, said = DAMAGE[name]
    folder = _damaged(small_run, tmp_path / "run", damage)
    page = write_report(folder).read_text()
    assert said is None or said in page, said
    assert "-5" not in page.split("Results (status ok)")[1].split("</table>")[0]


@pytest.mark.parametrize("column, message", [("M", "missing column(s) M of matmul_add"),
                                             ("median_us", "missing column(s) median_us")])
def test_a_run_folder_without_a_column_it_needs_is_one_line(small_run, tmp_path, column,
                                                            message):
    from suites.common.errors import InputError
    folder = _damaged(small_run, tmp_path / "run",
                      _edit_rows(lambda r: r.pop(column)))
    with pytest.raises(InputError, match=re.escape(message)):
        write_report(folder)


def test_a_bad_input_file_is_one_line_from_every_reader_command(small_run, tmp_path, capsys):
    from suites.reports.compare.command import main as compare
    from suites.reports.ladder.command import main as collect
    from suites.reports.run.command import main as report
    folder = _damaged(small_run, tmp_path / "run",
                      _edit_rows(lambda r: r.__setitem__("status", "done")))
    said = f"{folder / 'measurements.csv'}: unknown status value(s) done; accepted: ok"
    for command, argv in ((report, [folder]), (compare, [small_run, folder]),
                          (collect, [folder, "--out", tmp_path / "ladder"])):
        assert command([str(a) for a in argv]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("fusebench: error: ") and said in lines[0]


def test_compare_refuses_one_folder_as_both_sides(small_run, capsys):
    from suites.reports.compare.command import main as compare
    assert compare([str(small_run), str(small_run) + "/"]) == 2
    assert "A and B are the same folder" in capsys.readouterr().err


def test_a_case_past_its_time_limit_is_failed_rows_and_exit_1(tmp_path):
    folder = tmp_path / "slow"
    done = run_suite("device=cpu", "timing=quick", "calibrate=false", "suite.sizes=[16]",
                     "suite.variants=[eager,addmm]", "suite.dtypes=[float32]",
                     "timing.case_timeout_s=0.000001", f"hydra.run.dir={folder}")
    rows = pd.read_csv(folder / "measurements.csv")
    assert (rows["status"] == "failed").all()
    assert rows["reason"].str.contains("ran past timing.case_timeout_s=1e-06 s").all()
    assert done.returncode == 1 and "2 of 2 rows are not results (2 failed" in done.stdout
    assert read_state(folder)["statuses"] == {"failed": 2}


def test_the_exit_status_counts_rows_that_are_not_results():
    from suites.results.exit_status import exit_status
    ok = {"state": "complete", "statuses": {"ok": 3, "skipped": 1}}
    assert exit_status([ok]) == (0, "fusebench: all 4 rows ok or skipped")
    noisy = {"state": "complete", "statuses": {"ok": 2, "noisy": 1, "incorrect": 1}}
    code, line = exit_status([ok, noisy])
    assert code == 1 and "2 of 8 rows are not results (1 incorrect, 1 noisy" in line
    code, line = exit_status([ok, {"state": "failed", "statuses": {}}], ["job 2 left no rows"])
    assert code == 1 and "1 of 2 runs did not complete" in line and "1 job(s) left no rows" in line


@pytest.mark.parametrize("text", ['{"jobs": "many"}', "[1, 2]", '{"jobs": [', '{"jobs": []}'])
def test_a_garbled_sweep_manifest_is_named(tmp_path, text):
    from suites.results.run_folders import sweep_problems
    (tmp_path / "sweep.json").write_text(text)
    assert sweep_problems(tmp_path) == [
        f"{tmp_path / 'sweep.json'}: garbled (no list of jobs): whether every job of this "
        "multirun left its rows cannot be told"]


def test_the_exit_1_line_reads_as_a_finished_run():
    """Exit 1 for rows that are not results is a run that finished: its last line says so first,
    so neither it nor `make run` reads as a crash."""
    from suites.results.exit_status import exit_status
    code, line = exit_status([{"state": "complete", "statuses": {"ok": 5, "failed": 1}}])
    assert code == 1 and line.startswith("fusebench: finished, but 1 of 6 rows are not results")
    assert line.endswith("exit 1 marks that, not a crash")


@pytest.mark.parametrize("code", [0, 1, 2, 130])
def test_make_run_takes_exit_1_as_finished(tmp_path, code):
    venv = tmp_path / "venv"  # a stand-in interpreter that exits with `code`
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text(f"#!/bin/sh\nexit {code}\n")
    (venv / "bin" / "python").chmod(0o755)
    (venv / ".installed").touch()  # newer than requirements.txt: no install
    done = subprocess.run(["make", "-s", "-C", str(ROOT), "run", f"VENV={venv}"],
                          capture_output=True, text=True, timeout=60)
    if code in (0, 1):  # finished: make says nothing of its own
        assert done.returncode == 0 and "Error" not in done.stderr, done.stderr
    else:  # make fails, naming the run's own code
        assert done.returncode == 2 and f"Error {code}" in done.stderr, done.stderr


def test_the_printed_commands_use_the_interpreter_that_ran(monkeypatch, tmp_path):
    """However the run started, the command names this interpreter and run_suite.py by absolute
    paths, and the folder absolute (tests/test_console.py pastes it in another folder)."""
    from suites.config.outcome import finish_command
    folder = tmp_path / "a run"
    monkeypatch.chdir(tmp_path)
    for argv0 in ("run_suite.py", "/somewhere/bin/fusebench-run", "-m"):
        monkeypatch.setattr(sys, "argv", [argv0, "suite.sizes=[16]"])
        words = shlex.split(finish_command(folder.relative_to(tmp_path), ["suite.sizes=[16]"]))
        assert words == [sys.executable, str(ROOT / "run_suite.py"), "suite.sizes=[16]",
                         "resume=true", f"hydra.run.dir={folder}"], argv0
