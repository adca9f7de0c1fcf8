"""report.html and ladder.html as a reader sees them at 1400x900 in headless Chromium: no
console errors, every image loads, nothing wider than the window, and the verdict on the first
screen. Skipped, saying so, where Debian's `chromium` is not installed."""
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from browser import chromium, measure
from test_end_to_end import ROOT

pytestmark = pytest.mark.skipif(chromium() is None,
                                reason="no chromium here (Debian package `chromium`): the "
                                       "reports are not rendered")
WIDTH, HEIGHT = 1400, 900


@pytest.fixture(scope="module")
def pages(tiny_run, tmp_path_factory):
    """The tiny run's report.html (conftest.py), and the ladder.html that collect makes of it."""
    root = tmp_path_factory.mktemp("browser")
    run, _ = tiny_run
    collect = subprocess.run([sys.executable, "-m", "suites.collect", str(run.parent),
                              "--out", str(root / "ladder")], cwd=ROOT, capture_output=True,
                             text=True, timeout=300)
    assert collect.returncode == 0, collect.stderr[-2000:]
    return {"report": run / "report.html", "ladder": root / "ladder" / "ladder.html",
            "busy": _busy_copy(run, root / "busy")}


def _busy_copy(run, out):
    """The run's report as the busiest machine leaves it: every row of the fused variants and
    one case's eager row noisy, with a long reason; the banner says so too (and that the row
    counts no longer match run.json). The answer must still fit the first screen."""
    shutil.copytree(run, out)
    frame = pd.read_csv(out / "measurements.csv")
    busy = frame["variant"].isin(["addmm", "compile"]) | (
        (frame["variant"] == "eager") & (frame["case_id"] == frame["case_id"].iloc[0]))
    frame.loc[busy, "status"] = "noisy"
    # The rest ok, whatever the real run's machine made of them: the page must show their plots.
    frame.loc[~busy, ["status", "reason"]] = ["ok", ""]
    frame.loc[busy, "reason"] = "1 of 3 rounds clean (3 needed): " + "; ".join(
        f"round {i} contended (other processes kept 1.{i} of 2 cores busy; threads waited "
        f"{10 + i}% of the time for a CPU)" for i in range(6))
    frame.loc[busy, ["speedup", "speedup_low", "speedup_high"]] = float("nan")
    frame.to_csv(out / "measurements.csv", index=False)
    rebuilt = subprocess.run([sys.executable, "-m", "suites.report", str(out)], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
    assert rebuilt.returncode == 0, rebuilt.stderr[-2000:]
    return out / "report.html"


def test_the_probe_sees_a_page_wider_than_the_window(tmp_path):
    page = tmp_path / "wide.html"
    page.write_text("<!doctype html><html><head></head><body>"
                    "<div style='width:2000px'>wide</div><script>console.error('x')</script>"
                    "</body></html>")
    seen = measure(page, WIDTH, HEIGHT)
    assert seen["width"] > WIDTH and seen["errors"] == ["x"]


@pytest.mark.parametrize("name", ["report", "ladder", "busy"])
def test_the_page_reads_at_1400_by_900(pages, name):
    seen = measure(pages[name], WIDTH, HEIGHT)
    assert seen["errors"] == [], seen
    assert seen["images"] > 0 and seen["broken"] == [], seen
    assert seen["width"] <= WIDTH, f"{name} is {seen['width']} px wide at {WIDTH} px"
    assert all(over <= 0 for over in seen["box_overflow"]), \
        f"{name}: a table scrolls sideways in its box: {seen['box_overflow']}"
    assert seen["verdict_bottom"] is not None and seen["verdict_bottom"] <= HEIGHT, \
        f"{name}: the verdict ends {seen['verdict_bottom']} px down, below the first screen"
    # The whole answer (family lines, where the time goes, the small plot) on the first screen.
    assert seen["answer_bottom"] <= HEIGHT, f"{name}: the answer ends {seen['answer_bottom']} px"
