"""One vocabulary of change for the run report, the ladder and compare, from one module; one
number formatter; one plot save."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from suites.common.numbers import plain, ratio, span, times
from suites.reports.compare.joined import Rule, compare_rows
from suites.reports.compare.loading import Side
from suites.reports.kit.change import Change, classify, classify_tested, phrase

ROOT = Path(__file__).resolve().parents[1]
SHIFTS = (0.5, 0.9, 0.97, 0.99, 1.0, 1.01, 1.03, 1.1, 2.0)  # B's time over A's
SPREADS = (0.001, 0.01, 0.05)  # of the round medians, in logs


def _side(label: str, rounds: dict[tuple, np.ndarray]) -> Side:
    rows = pd.DataFrame([dict(suite=s, case_id=c, variant=v, dtype="float32", status="ok",
                              reason="", median_us=float(np.median(r)))
                         for (s, c, v), r in rounds.items()])
    clean = pd.DataFrame([dict(suite=s, case_id=c, variant=v, round=i, median_us=t,
                               mean_us=np.nan, run=label)
                          for (s, c, v), r in rounds.items() for i, t in enumerate(r)])
    return Side(label, Path(label), [Path(label)], rows, clean)


def _compared(band: float, drift: float = 0.0) -> pd.DataFrame:
    """Compare's rows for B/A shifts from 0.5 to 2 in steady and noisy rounds."""
    rng = np.random.default_rng(7)
    a, b = {}, {}
    for shift in SHIFTS:
        for spread in SPREADS:
            for seed in range(4):
                key = ("s", f"x{shift}-sd{spread}-{seed}", "v")
                a[key] = 100.0 * np.exp(rng.normal(0.0, spread, 5))
                b[key] = 100.0 * shift * np.exp(rng.normal(0.0, spread, 5))
    return compare_rows(_side("A", a), _side("B", b), Rule(floor=band, drift_sd=drift))


def test_compare_classes_its_rows_by_the_kit_in_the_four_words():
    """Compare's verdict is the kit's classify_tested on its own two intervals, turned into a
    speedup of B over A (above 1: faster), so a B at half A's time is faster, as in the report."""
    frame = _compared(0.05)
    again = [classify_tested(1 / r.ci_high, 1 / r.ci_low, 1 / r.eq_high, 1 / r.eq_low, 0.05)
             for r in frame.itertuples()]
    assert again == list(frame["verdict"])
    assert set(frame["verdict"]) == set(Change)  # every class was exercised
    by_case = frame.set_index("case_id")["verdict"]
    assert by_case["x0.5-sd0.001-0"] == Change.FASTER
    assert by_case["x2.0-sd0.001-0"] == Change.SLOWER
    assert by_case["x1.0-sd0.001-0"] == Change.EQUIVALENT


def test_compare_says_inconclusive_where_it_shows_neither():
    frame = _compared(0.05).set_index("case_id")
    wide = frame.loc["x1.03-sd0.05-0"]  # a 3% shift in rounds 5% apart
    assert wide["verdict"] == Change.INCONCLUSIVE and "more rounds" in wide["note"]
    assert wide["note"].startswith("detectable: ")
    equivalent = frame[frame["verdict"] == Change.EQUIVALENT]
    assert (equivalent["eq_low"] >= 1 / 1.05).all() and (equivalent["eq_high"] <= 1.05).all()


@pytest.mark.parametrize("low, high, band, expected", [
    (1.03, 1.2, 0.02, Change.FASTER), (1.03, 1.2, 0.1, Change.INCONCLUSIVE),
    (0.95, 0.97, 0.02, Change.SLOWER), (0.95, 0.97, 0.1, Change.EQUIVALENT),
    (1 / 1.02, 1.02, 0.02, Change.EQUIVALENT), (0.5, 2.0, 0.1, Change.INCONCLUSIVE)])
def test_the_band_is_taken_in_logs(low, high, band, expected):
    assert classify(low, high, band) == expected


@pytest.mark.parametrize("low, high, eq_low, eq_high, expected", [
    (1.01, 1.04, 1.015, 1.035, Change.EQUIVALENT),   # excludes 1, yet shown within +-5%: first
    (1.02, 1.3, 1.05, 1.25, Change.FASTER),          # a change, though not past the band
    (0.7, 0.9, 0.75, 0.85, Change.SLOWER),
    (0.9, 1.1, 0.93, 1.07, Change.INCONCLUSIVE),
    (float("nan"), float("nan"), float("nan"), float("nan"), Change.INCONCLUSIVE)])
def test_compares_order_equivalence_then_a_change(low, high, eq_low, eq_high, expected):
    assert classify_tested(low, high, eq_low, eq_high, 0.05) == expected


def test_the_classes_in_words():
    assert phrase(Change.EQUIVALENT, 0.02) == "equivalent within 2%"
    assert [phrase(c, 0.1) for c in (Change.FASTER, Change.SLOWER, Change.INCONCLUSIVE)] == \
        ["faster", "slower", "inconclusive"]


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
