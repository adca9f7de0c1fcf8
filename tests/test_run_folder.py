"""The run folder: bad ones are one line before any work, a folder holding anything but Hydra's
files is refused, nothing the run did not create is ever deleted, and a report links only to
files inside its run folder."""
import pandas as pd

from suites.report.html_page import inside_run, table
from test_end_to_end import run_suite

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


def test_reports_link_only_to_files_inside_the_run_folder():
    for bad in ["javascript:alert(1)", "JAVASCRIPT:x", "https://example.com/t.json",
                "/etc/passwd", "../other_run/traces/x.json.gz", "traces\\..\\..\\x"]:
        assert not inside_run(bad), bad
    assert inside_run("traces/M64__eager.json.gz")
    frame = pd.DataFrame({"case_id": ["a", "b"], "trace": ["traces/a.json.gz",
                                                            "javascript:alert(1)"]})
    page = table(frame, {"case_id": "case", "trace": "trace"}, links={"trace": "trace"})
    assert 'href="traces/a.json.gz"' in page and "href=\"javascript" not in page
