"""The report's HTML helpers: numbers, headers, the results table's markup, trace links, and
(where Chromium is installed) that the default results table fits a 1400 px window."""
from __future__ import annotations

import html
import json
import math
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from suites.reports.kit import page as hp
from suites.reports.run.build import RESULT_COLUMNS
from suites.results.columns import headers

CASES = [f"M{n}-N{n}-K{n}-{d}" for d in ("fp32", "bf16") for n in (64, 128, 256, 512, 1024, 2048)]


def _significant(text: str) -> int:
    digits = re.sub(r"[^0-9]", "", text.split("e")[0]).lstrip("0")
    return len(digits.rstrip("0")) if "." not in text else len(digits)


def test_numbers_read_plainly_to_three_or_four_significant_figures():
    assert [hp.num(v) for v in (11710.3, 8.743, 1.1396, 2666.4, 0.0662, 1.0, 3.0)] == [
        "11.71k", "8.743", "1.14", "2,666", "0.0662", "1", "3"]
    assert hp.num(12_345_678) == "12.35M" and hp.num(1.074e9) == "1.074G"
    assert hp.num(9999.9) == "10k" and hp.num(99.996) == "100"  # rounding moves the magnitude
    assert hp.num(2.297e-7) == "2.297e-7"  # an error: far below anything a time reaches
    for missing in (float("nan"), np.float32("nan"), None, pd.NA):
        assert hp.num(missing) == "-"
    assert hp.num(np.int64(5)) == "5" and hp.num("ab") == "ab" and hp.num("") == ""
    for value in np.geomspace(1e-3, 1e12, 200):
        text = hp.num(value)
        assert "e" not in text and _significant(text) <= 4, (value, text)
        assert math.isclose(float(hp.num(value).rstrip("kMGT").replace(",", "")), value /
                            {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}.get(text[-1], 1),
                            rel_tol=1e-3), (value, text)


def test_headers_carry_the_columns_unit_once():
    frame = pd.DataFrame({"case_id": ["M64-N64-K64-fp32"], "variant": ["eager"],
                          "median_us": [7.9], "mean_us": [8.1], "p10_us": [7.5], "speedup": [1.1],
                          "bytes_moved": [49408.0], "tflops": [0.06]})
    head = hp.table(frame, headers(list(frame))).split("</thead>")[0]
    assert "p10<small>us</small>" in head and "speedup<small>x</small>" in head
    assert "bytes (model)<small>B</small>" in head
    assert "median us</th>" in head and "TFLOP/s</th>" in head  # the label says it already


def _results(rows=CASES, variants=("eager", "addmm", "compile"), gpu=False) -> pd.DataFrame:
    """What a default CPU matmul_add run's ok rows hold, at plausible magnitudes; `gpu`: with
    the columns only a CUDA run fills (kernel time, launches, the SDPA backend) too."""
    out = []
    for i, case in enumerate(rows):
        n = int(case.split("-")[0][1:])
        for j, variant in enumerate(variants):
            median = 8.0 * (n / 64) ** 3 * (1 + 0.1 * j)
            out.append({
                "case_id": case, "variant": variant, "status": "ok", "median_us": median * 0.99,
                "mean_us": median, "mean_low_us": median * 0.97, "mean_high_us": median * 1.1,
                "p10_us": median * 0.97, "p90_us": median * 1.1, "rounds": 3.0,
                "speedup": 1 / (1 + 0.1 * j), "speedup_low": 0.9 / (1 + 0.1 * j),
                "speedup_high": 1.1 / (1 + 0.1 * j), "device_ratio": 1.0 + 0.01 * i,
                "host_us": median * 1.2, "device_us": median * 0.9,
                "exposed_overhead_us": median * 0.05, "n_kernels": 2.0, "tflops": 0.0912,
                "gbps": 4.007, "pct_peak": 85.52, "bytes_moved": 3 * 4 * n * n if j == 0 else
                math.nan, "first_call_ms": 181.2, "scaled_err": 3.972e-7,
                "trace": f"traces/{case}__{variant}.json.gz", "peak_mem_mb": 12.5 * i,
                **({"kernel_us": median * 0.8, "kernel_low_us": median * 0.79,
                    "kernel_high_us": median * 0.81, "kernel_speedup": 1.04,
                    "kernel_speedup_low": 1.031, "kernel_speedup_high": 1.052,
                    "launch_api_us": 5.21, "backend": "flash"} if gpu else {})})
    return pd.DataFrame(out).reindex(columns=[*RESULT_COLUMNS, "status"])


def _results_table(frame: pd.DataFrame) -> str:
    """The results table as build.py asks for it (suites/reports/run/build.py: write_report)."""
    return hp.table(frame, RESULT_COLUMNS, links={"trace": "Perfetto"},
                    ranges=hp.RANGES, drop_empty=True, sortable=True)


def test_results_table_sorts_sticks_folds_spreads_and_shortens_case_ids():
    markup = _results_table(_results())
    assert "<table data-sortable>" in markup and '<thead class="sticky">' in markup
    assert 'class="tw"' in markup  # its own scroll box, never the page's
    head = markup.split("</thead>")[0]
    # Each interval folded under its figure: us/call's and the speedup's.
    assert head.count("95% CI") == 2 and "us/call low" not in head
    assert "speedup low" not in head
    assert "launch us" not in head and "SDPA backend" not in head  # empty on a CPU: left out
    assert "M\u00b7N\u00b7K" in head
    assert ('title="M2048-N2048-K2048-bf16"><span class="nw">2048\u00b72048\u00b72048</span>'
            " bf16") in markup
    assert 'data-v="512.0"' in markup and "512<small>497\u2013563</small>" in markup
    assert "e+" not in markup.split("<tbody>")[1]
    plain = hp.table(_results(), headers(["case_id", "variant", "median_us"]))
    assert "data-sortable" not in plain and "<small>" not in plain.split("<tbody>")[1]


def test_case_ids_of_different_axes_stay_whole():
    frame = pd.DataFrame({"case_id": ["M64-N64-K64-fp32", "T1024-D768-rms-fp32"]})
    assert hp.short_cases(frame["case_id"]) == ("", {})
    axes, short = hp.short_cases(pd.Series(["T1024-D768-rms-fp32", "T64-D768-layer-bf16"]))
    assert axes == "T\u00b7D" and short["T1024-D768-rms-fp32"] == "1024\u00b7768 rms fp32"
    markup = hp.table(frame, headers(["case_id"]))
    assert ">M64-N64-K64-fp32<" in markup and ">T1024-D768-rms-fp32<" in markup


def test_a_trace_opens_in_perfetto_with_its_download_link_as_the_fallback():
    markup = _results_table(_results(CASES[:1], ("eager",)))
    path = "traces/M64-N64-K64-fp32__eager.json.gz"
    assert f'<a href="{path}" data-perfetto="{path}">Perfetto</a>' in markup
    assert 'class="trace-note"' in markup
    page = hp.page("t", [("Results", markup)], "meta")
    script = page.split("<script>")[1]
    assert "ui.perfetto.dev" in script and '"PING"' in script and "perfetto: {buffer" in script
    # The page loads nothing: the one address it names is in the script, opened on a click.
    assert "http" not in page.split("<script>")[0]


def test_no_link_leaves_the_run_folder():
    bad = ["javascript:alert(1)", "JAVASCRIPT:x.json.gz", "../other/traces/t.json.gz",
           "/etc/passwd", "https://example.com/t.json.gz", "traces\\..\\x.json.gz"]
    frame = pd.DataFrame({"case_id": ["a"] * len(bad), "trace": bad})
    markup = hp.table(frame, {"case_id": "case", "trace": "trace"}, links={"trace": "open"})
    assert "<a " not in markup and "data-perfetto" not in markup and "trace-note" not in markup


def test_a_page_without_sorting_or_traces_carries_no_script():
    markup = hp.table(_results(CASES[:1]), headers(["case_id", "variant", "median_us"]))
    assert "<script" not in hp.page("t", [("Results", markup)], "meta")
    said = pd.DataFrame({"statement": ['<table data-sortable> <a data-perfetto="x.json">']})
    assert "<script" not in hp.page("t", [("Text", hp.table(said, {"statement": "s"}))], "m")
    assert "<script>" in hp.page("t", [("Results", _results_table(_results()))], "meta")


# Before the page's script: record any script error; after it: the page's and the results
# box's widths, then a sort by the median (header 3), both ways.
CATCH = """<body><script>
var errors = [];
addEventListener("error", function (e) { errors.push(e.message); });
</script>"""
PROBE = """<script>
var d = document.documentElement, b = document.body;
var box = document.querySelector(".tw"), th = box.querySelectorAll("thead th")[2];
function medians() {
  return Array.from(box.querySelectorAll("tbody tr")).map(function (r) {
    return Number(r.cells[2].dataset.v); });
}
function sorted(a, dir) {
  return a.every(function (v, i) { return !i || dir * (v - a[i - 1]) >= 0; });
}
th.click(); var up = sorted(medians(), 1); th.click(); var down = sorted(medians(), -1);
b.dataset.probe = JSON.stringify({page: d.scrollWidth, view: d.clientWidth, box: box.scrollWidth,
  boxView: box.clientWidth, up: up, down: down, errors: errors});
</script></body>"""


@pytest.mark.skipif(not shutil.which("chromium"),
                    reason="chromium not installed (Debian: apt-get install chromium)")
@pytest.mark.parametrize("gpu", [False, True], ids=["cpu_columns", "cuda_columns"])
def test_results_table_fits_a_1400_px_window_and_sorts(tmp_path, gpu):
    page = hp.page("fusebench: matmul_add on cpu", [("Results (status ok)",
                                                       _results_table(_results(gpu=gpu)))], "meta")
    path = tmp_path / "report.html"
    path.write_text(page.replace("<body>", CATCH, 1).replace("</body>", PROBE))
    dom = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,900",
         "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=120).stdout
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, dom[-2000:]
    probe = json.loads(html.unescape(found[1]))
    assert probe["errors"] == [] and probe["up"] and probe["down"], probe
    assert probe["view"] > 1300 and probe["page"] <= probe["view"], probe  # no page scroll
    assert probe["box"] <= probe["boxView"], probe  # the table itself fits, no scroll box
