"""The ladder's training rungs (suites/reports/ladder/training.py) on run folders with known
answers: each mode its own ladder rows and fits, the backward share and its interval, where a
fused form pays, and the activations it saves."""
import math

import numpy as np
import pandas as pd
import pytest

from suites.reports.ladder.training import backward_share, pays_where
from test_collect import _collect, _row, _write_run

SHAPE = {"T": 2048, "D": 768}


def _trained(variant, family, mode, mean_us, half_width, speedup=None, act=None, saved=None):
    """A norm row in a training mode: mean and its 95% half-width, speedup and interval."""
    row = _row("norm", SHAPE, variant, family, mean_us, mode=mode,
               mean_low_us=mean_us - half_width, mean_high_us=mean_us + half_width,
               activation_mb=act, saved_tensors=saved)
    row["case_id"] = row["case_id"] + f"-{mode}"
    if speedup is not None:
        row.update(speedup=speedup[0], speedup_low=speedup[1], speedup_high=speedup[2])
    return row


def _run(tmp_path, rows):
    _write_run(tmp_path / "runs" / "a", "norm", rows, reference={"T": 8192, "D": 768})
    return tmp_path / "runs"


ROWS = [
    _trained("eager", "eager", "fwd", 400.0, 20.0, act=12.0, saved=3),
    _trained("eager", "eager", "bwd", 900.0, 45.0, act=12.0, saved=3),
    _trained("eager", "eager", "fwd_bwd", 1200.0, 60.0, act=12.0, saved=3),
    _trained("compile", "compile", "fwd", 200.0, 10.0, (2.0, 1.8, 2.2), act=4.0, saved=2),
    _trained("compile", "compile", "bwd", 880.0, 40.0, (1.02, 0.9, 1.1), act=4.0, saved=2),
    _trained("compile", "compile", "fwd_bwd", 1000.0, 50.0, (1.2, 1.1, 1.3), act=4.0, saved=2),
    _trained("fused", "library", "fwd_bwd", 600.0, 30.0, (2.0, 1.9, 2.1), act=0.0156, saved=2),
]


def test_training_rungs_share_speedups_and_activations(tmp_path, capsys):
    printed = _collect(_run(tmp_path, ROWS), tmp_path / "out", capsys)
    table = pd.read_csv(tmp_path / "out" / "training.csv").set_index("variant")
    eager, compile_, fused = table.loc["eager"], table.loc["compile"], table.loc["fused"]
    assert eager["backward_share"] == pytest.approx(0.75)
    assert eager["share_from"] == "bwd" and eager["step_us"] == 1200
    assert compile_["backward_share"] == pytest.approx(0.88)
    assert compile_["speedup_step"] == 1.2 and compile_["speedup_fwd_low"] == 1.8
    assert compile_["pays"] == "forward only"
    assert compile_["activation_saved_mb"] == pytest.approx(8.0)
    # Only the step ran for the library form: no share, no halves to say where it pays.
    assert math.isnan(fused["backward_share"]) and pd.isna(fused["pays"])
    assert fused["activation_saved_mb"] == pytest.approx(12.0 - 0.0156)
    assert ("- training, norm fp32 at T2048-D768: backward is 75% (70-80%) of eager's step; "
            "compile 1.2x (1.1-1.3) on the step, pays in forward only, keeps 2 tensor(s), 4 "
            "MiB: 8 MiB less than the baseline; fused 2x (1.9-2.1) on the step, keeps 2 "
            "tensor(s), 0.0156 MiB: 12 MiB less than the baseline") in printed
    # Each mode is its own ladder row set and its own fit: a step is not a forward.
    ladder = pd.read_csv(tmp_path / "out" / "ladder.csv")
    assert sorted(set(ladder["mode"])) == ["bwd", "fwd", "fwd_bwd"]
    assert ladder.groupby("mode").size().to_dict() == {"bwd": 2, "fwd": 2, "fwd_bwd": 3}
    fits = pd.read_csv(tmp_path / "out" / "fits.csv")
    assert set(fits["choice"]) == {"fwd", "bwd", "fwd_bwd"}
    html = (tmp_path / "out" / "ladder.html").read_text()
    assert "Training: each block&#x27;s step at its reference shape" in html or \
        "Training: each block's step at its reference shape" in html
    assert "norm fp32 fwd_bwd at T2048-D768" in printed  # the answer names the mode


def test_the_share_interval_agrees_with_a_simulation():
    """The delta-method interval of bwd / fwd_bwd against the 2.5 and 97.5 percentiles of the
    ratio of two independent normal means with the rows' standard errors."""
    step = {"status": "ok", "mean_us": 1000.0, "mean_low_us": 880.0, "mean_high_us": 1120.0}
    bwd = {"status": "ok", "mean_us": 700.0, "mean_low_us": 630.0, "mean_high_us": 770.0}
    share, low, high, source = backward_share(step, bwd, None)
    rng = np.random.default_rng(0)
    z = 1.959964
    ratios = rng.normal(700, 70 / z, 400_000) / rng.normal(1000, 120 / z, 400_000)
    assert share == pytest.approx(0.7) and source == "bwd"
    assert low == pytest.approx(np.percentile(ratios, 2.5), rel=0.02)
    assert high == pytest.approx(np.percentile(ratios, 97.5), rel=0.02)
    # Without a bwd row: 1 - fwd / fwd_bwd, its interval from the forward share's.
    fwd = {"status": "ok", "mean_us": 300.0, "mean_low_us": 270.0, "mean_high_us": 330.0}
    share, low, high, source = backward_share(step, None, fwd)
    forward = rng.normal(300, 30 / z, 400_000) / rng.normal(1000, 120 / z, 400_000)
    assert share == pytest.approx(0.7) and source == "fwd_bwd - fwd"
    assert low == pytest.approx(1 - np.percentile(forward, 97.5), rel=0.02)
    assert high == pytest.approx(1 - np.percentile(forward, 2.5), rel=0.02)
    # A step that is not a result has no share.
    assert math.isnan(backward_share({**step, "status": "noisy"}, bwd, None)[0])


def test_where_fusion_pays_by_its_intervals():
    nan = (math.nan, math.nan, math.nan)
    assert pays_where((2, 1.8, 2.2), (1.5, 1.3, 1.7)) == "forward and backward"
    assert pays_where((1.0, 0.9, 1.1), (1.5, 1.3, 1.7)) == "backward only"
    assert pays_where((1.0, 0.9, 1.1), (0.8, 0.7, 0.9)) == "neither half"
    assert pays_where((1.01, 1.005, 1.015), (2, 1.9, 2.1)) == "backward only"  # inside the band
    assert pays_where(nan, (2, 1.9, 2.1)) == ""
