"""One classifier of change for the run report, the ladder and compare; one number formatter;
one plot save. The report and compare must never class the same interval differently."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from suites.common.numbers import plain, ratio, span, times
from suites.reports.compare.joined import Rule, compare_rows
from suites.reports.compare.loading import Side
from suites.reports.kit.change import SAME_WITHIN, Change, classify, phrase, row_changes

ROOT = Path(__file__).resolve().parents[1]
SHIFTS = (0.5, 0.9, 0.97, 0.99, 1.0, 1.01, 1.03, 1.1, 2.0)  # B's time over A's
SPREADS = (0.001, 0.01, 0.05)  # of the round medians, in logs


def _side(label: str, rounds: dict[tuple, np.ndarray]) -> Side:
    rows = pd.DataFrame([dict(suite=s, case_id=c, variant=v, dtype="float32", status="ok",
                              reason="", median_us=float(np.median(r)))
                         for (s, c, v), r in rounds.items()])
    return Side(label, Path(label), [], rows, rounds)


def _compared(band: float) -> pd.DataFrame:
    """Compare's rows for B/A shifts from 0.5 to 2 in steady and noisy rounds."""
    rng = np.random.default_rng(7)
    a, b = {}, {}
    for shift in SHIFTS:
        for spread in SPREADS:
            for seed in range(4):
                key = ("s", f"x{shift}-sd{spread}-{seed}", "v")
                a[key] = 100.0 * np.exp(rng.normal(0.0, spread, 5))
                b[key] = 100.0 * shift * np.exp(rng.normal(0.0, spread, 5))
    return compare_rows(_side("A", a), _side("B", b), Rule(noise_floor=band))


def test_the_report_and_compare_class_the_same_interval_alike():
    """Compare's interval of B/A, turned into the report's speedup of B over A (A/B), is classed
    the same by the report's path as by compare's, with the same band; above 1 is faster in
    both, so a B at half A's time is faster in both."""
    frame = _compared(SAME_WITHIN)
    as_report = pd.DataFrame({"status": "ok", "speedup": 1 / frame["ratio"],
                              "speedup_low": 1 / frame["ci_high"],
                              "speedup_high": 1 / frame["ci_low"]})
    assert list(row_changes(as_report)) == list(frame["verdict"])
    assert set(frame["verdict"]) == set(Change)  # every class was exercised
    by_case = frame.set_index("case_id")["verdict"]
    assert by_case["x0.5-sd0.001-0"] == Change.FASTER
    assert by_case["x2.0-sd0.001-0"] == Change.SLOWER
    assert by_case["x1.0-sd0.001-0"] == Change.SAME


def test_compare_says_unclear_where_the_interval_reaches_across_the_floor():
    frame = _compared(0.10).set_index("case_id")
    wide = frame.loc["x1.1-sd0.05-0"]  # a 10% shift in rounds 5% apart
    assert wide["verdict"] == Change.UNCLEAR and "more rounds" in wide["note"]
    same = frame[frame["verdict"] == Change.SAME]
    assert (same["ci_low"] >= 1 / 1.1).all() and (same["ci_high"] <= 1.1).all()


@pytest.mark.parametrize("low, high, band, expected", [
    (1.03, 1.2, 0.02, Change.FASTER), (1.03, 1.2, 0.1, Change.UNCLEAR),
    (0.95, 0.97, 0.02, Change.SLOWER), (0.95, 0.97, 0.1, Change.SAME),
    (1 / 1.02, 1.02, 0.02, Change.SAME), (0.5, 2.0, 0.1, Change.UNCLEAR)])
def test_the_band_is_taken_in_logs(low, high, band, expected):
    assert classify(low, high, band) == expected


def test_the_classes_in_words():
    assert phrase(Change.SAME, 0.02) == "the same within 2%"
    assert [phrase(c, 0.1) for c in (Change.FASTER, Change.SLOWER, Change.UNCLEAR)] == \
        ["faster", "slower", "unclear"]


def test_named_number_formats():
    assert [ratio(v) for v in (1.0149, 0.05, 123.4, 2345.6, float("nan"))] == \
        ["1.015", "0.05", "123", "2,346", "-"]
    assert [times(v) for v in (1.14, 0.5234, 1234.0, float("nan"))] == \
        ["1.14x", "0.523x", "1,234x", "-"]
    assert span(0.494, 0.553) == "0.494-0.553" and span(0.52, 0.6, "x") == "0.52x-0.6x"
    assert plain(999.7) == "1,000"  # not 1e+03


def test_every_plot_is_saved_through_save_png():
    """The kit's save_png is the one place a figure is written (ticks fitted, the file whole)."""
    saving = [p.relative_to(ROOT).as_posix() for p in (ROOT / "suites").rglob("*.py")
              if ".savefig(" in p.read_text()]
    assert saving == ["suites/reports/kit/plots.py"]
