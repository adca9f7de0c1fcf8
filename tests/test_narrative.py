"""The report's per-case line on the fastest variant: the baseline against itself has no
interval to print (a 1-1 is no measurement); any other variant has its paired interval."""
import pandas as pd

from suites.reports.run.narrative import _fastest


def _rows(eager_us, addmm_us, addmm_speedup):
    return pd.DataFrame([
        {"variant": "eager", "status": "ok", "mean_us": eager_us, "speedup": 1.0,
         "speedup_low": 1.0, "speedup_high": 1.0},
        {"variant": "addmm", "status": "ok", "mean_us": addmm_us, "speedup": addmm_speedup,
         "speedup_low": addmm_speedup * 0.95, "speedup_high": addmm_speedup * 1.05}])


def test_the_baseline_as_fastest_has_no_zero_width_interval():
    line = _fastest(_rows(3969.0, 4100.0, 0.968))
    assert line == ("fastest: eager at 3969 us, the baseline (no other variant was faster "
                    "per call)")
    assert "1-1" not in line


def test_another_variant_as_fastest_has_its_paired_interval():
    line = _fastest(_rows(100.0, 80.0, 1.25))
    assert line == ("fastest: addmm at 80 us (1.25x the baseline, paired per round, 95% "
                    "interval 1.19-1.31)")
