"""The first screen of the reports (the answer per family and block, where the time goes),
findings stated once across cases, and the per-op plot, on built tables."""
import pandas as pd
import pytest

from suites.reports.ladder import answer as ladder_answer
from suites.reports.run import answer, op_plot
from suites.reports.run import shared_findings as sf
from suites.reports.kit.banner import banner_html
from suites.common.numbers import plain

PARAMS = ["M", "N", "K"]


def _row(variant, family, m, dtype="float32", status="ok", speedup=1.0, low=None, high=None,
         median=100.0, overhead=10.0, compile_ms=float("nan")):
    return {"case_id": f"M{m}-N{m}-K{m}-{'fp32' if dtype == 'float32' else 'bf16'}",
            "variant": variant, "family": family, "dtype": dtype, "M": m, "N": m, "K": m,
            "status": status, "speedup": speedup, "speedup_low": low if low else speedup * 0.98,
            "speedup_high": high if high else speedup * 1.02, "median_us": median, "mean_us": median,
            "exposed_overhead_us": overhead, "compile_ms": compile_ms, "flops": 2.0 * m ** 3,
            "reason": "" if status == "ok" else "Triton kernels need a CUDA GPU to be timed"}


def _frame():
    rows = []
    for m, (lib, comp) in zip((64, 256, 1024), ((1.3, 0.5), (1.1, 0.9), (1.0, 1.2))):
        rows += [_row("eager", "eager", m, median=100.0 * m, overhead=50.0 if m == 64 else 1.0),
                 _row("addmm", "library", m, speedup=lib, median=100.0 * m / lib,
                      low=lib * 0.99, high=lib * 1.01),
                 _row("compile", "compile", m, speedup=comp, median=100.0 * m / comp,
                      compile_ms=150.0),
                 _row("triton", "triton", m, status="skipped", speedup=float("nan"))]
    return pd.DataFrame(rows)


def test_family_lines_count_classes_and_say_why_a_family_has_none():
    frame = _frame()
    name = answer.case_namer(frame, "M", PARAMS)
    lines = answer.family_lines(frame, "eager", name)
    assert lines[0] == ("the fused library call (addmm): faster in 2 of 3 rows (1.1x-1.3x), "
                        "equivalent within 2% in 1 (1x)")
    assert lines[1].startswith("torch.compile (compile): faster in 1 of 3 rows (1.2x), "
                               "slower in 2 (0.5x-0.9x); repays its first call (150 ms) after ")
    assert lines[1].endswith("at M1024; it repays it at 1 of 3 cases")
    assert lines[2] == ("the hand-written Triton kernels (triton): no speedup measured (skipped "
                        "on 3 rows: Triton kernels need a CUDA GPU to be timed)")
    assert answer.pays_off(frame, "eager", name) == (
        "Fusion pays off in 3 of 3 cases; the largest gain: addmm at M64, 1.3x (1.29-1.31).")


def test_where_the_time_goes_names_the_bound_stretches_and_the_overhead():
    frame = _frame()
    bounds = {64: "overhead", 256: "compute", 1024: "compute"}
    frame["roofline_bound"] = [bounds[m] for m in frame["M"]]  # the row's one bound
    name = answer.case_namer(frame, "M", PARAMS)
    assert answer.where_time_goes(frame, "eager", name) == (
        "Where the time goes: eager is overhead-bound at M64 and compute-bound at M256 to M1024;"
        " exposed overhead (host and launch work the device waits on) is 1% at M64, 0% at M1024"
        " of a call.")
    # Not profiled: the bounds are the model's alone, and the page names profile=off; a profile
    # that was not clean gives no bound and no overhead share.
    assert "profile=off" in answer.where_time_goes(frame, "eager", name, profiled=False)
    frame.loc[frame["M"] == 64, "profile_state"] = "contended"
    said = answer.where_time_goes(frame, "eager", name)
    assert "unjudged (its profile contended) at M64" in said and "at M64," not in said


def test_a_finding_repeated_across_cases_is_said_once_with_its_ranges():
    findings = pd.DataFrame({
        "case_id": ["c1", "c1", "c2", "c2", "c3"], "variant": ["addmm", "compile"] * 2 + ["addmm"],
        "code": ["hidden_copy"] * 4 + ["kernels_fell"],
        "statement": ["aten::copy_ inside aten::addmm, 1 per call, 6.1 us: sm90 kernel",
                      "aten::copy_ inside aten::addmm, 1 per call, 4.0 us: sm90 kernel",
                      "aten::copy_ inside aten::addmm, 1 per call, 2433.5 us: sm90 kernel",
                      "aten::copy_ inside aten::addmm, 1 per call, 0.9 us: sm90 kernel",
                      "kernels per call fell from 2 to 1"]})
    groups = sf.group(findings, ["hidden_copy", "kernels_fell"])
    assert [len(g.keys) for g in groups] == [4, 1]
    assert groups[0].text() == "aten::copy_ inside aten::addmm, 1 per call, 0.9-2,434 us: sm90 kernel"
    assert sf.where(groups[0], ["c1", "c2"], {"c1": "M64"}) == "in addmm and compile, every case"
    assert sf.where(groups[0], ["c1", "c2", "c3"], {"c1": "M64"}) == \
        "in addmm and compile, at M64, c2"
    # Variants are named together only where they hold for the same cases.
    uneven = sf.group(findings.drop(index=3), ["hidden_copy"])[0]
    assert sf.where(uneven, ["c1", "c2"], {"c1": "M64"}) == \
        "in addmm, every case; in compile, at M64"


def test_plain_numbers_have_no_exponent():
    assert [plain(v) for v in (0.000123, 7.05, 46.67, 2302.4, 207057.0)] == \
        ["0.000123", "7.05", "46.7", "2,302", "207,057"]
    assert plain(float("nan")) == "-"


def test_op_shares_split_the_device_part_by_op_and_add_the_overhead():
    frame = pd.DataFrame([_row("eager", "eager", 64, median=100.0, overhead=20.0)])
    kernels = pd.DataFrame({"case_id": frame["case_id"][0], "variant": "eager",
                            "kernel": ["aten::mm", "aten::add"], "total_us_per_call": [30.0, 10.0]})
    shares = op_plot.op_shares(frame, kernels).set_index("op")["share"]
    assert shares.to_dict() == pytest.approx({"aten::mm": 0.6, "aten::add": 0.2,
                                              "exposed overhead": 0.2})


def test_the_ladder_answer_names_the_blocks_where_fusion_pays():
    table = pd.DataFrame([
        {"suite": "attention", "dtype": "float32", "machine": "", "shape": "S1024", "family": f,
         "variant": v, "status": s, "speedup": x, "speedup_low": x * 0.95, "speedup_high": x * 1.05,
         "n_kernels": 6, "device_us": 300.0, "host_us": 350.0}
        for f, v, s, x in (("eager", "naive", "ok", 1.0), ("library", "sdpa", "ok", 5.0),
                           ("triton", "triton_flash", "skipped", float("nan")))])
    head, lines = ladder_answer.lines(table)
    assert head == ("A fused form is faster, by its 95% interval, at the reference shape of 1 of "
                    "1 block(s) and dtype(s): attention fp32 (sdpa 5x, 4.75-5.25).")
    assert lines == ["attention fp32 at S1024: library sdpa faster, 5x (4.75-5.25); triton "
                     "skipped; naive: 6 kernels per call, device work 300 us in a 350 us host "
                     "span"]


def test_a_long_banner_keeps_three_lines_in_view():
    page = banner_html([f"line {i}" for i in range(5)])
    assert page.count("<li>") == 5 and "<details><summary>2 more</summary>" in page
    assert page.index("line 2") < page.index("<details>") < page.index("line 3")


def test_crowded_tick_labels_are_turned_then_thinned_until_none_overlap():
    import matplotlib.pyplot as plt

    from suites.reports.kit.label_fit import fit_ticks, overlapping

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_xticks(range(30))
    ax.set_xticklabels([f"M{2 ** i}-N{2 ** i}-K{2 ** i}" for i in range(30)])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert overlapping(ax.get_xticklabels(), renderer)  # the premise: they run into each other
    fit_ticks(fig)
    labels = ax.get_xticklabels()
    assert not overlapping(labels, renderer)
    assert labels[0].get_rotation() == 30 and labels[0].get_visible()
    assert 1 < sum(label.get_visible() for label in labels) < 30
    plt.close(fig)


def test_the_ladder_headline_counts_only_intervals_that_clear_and_names_the_dtype():
    def rows(dtype, low, high):
        return [{"suite": "attention", "dtype": dtype, "machine": "", "shape": "S1024",
                 "family": f, "variant": v, "status": "ok", "speedup": x, "speedup_low": lo,
                 "speedup_high": hi, "n_kernels": 6, "device_us": 300.0, "host_us": 350.0}
                for f, v, x, lo, hi in (("eager", "naive", 1.0, 1.0, 1.0),
                                        ("compile", "compile", 1.6, low, high))]
    # bf16: 1.6x with an interval that clears; fp32: 1.6x by its point, but the interval
    # reaches below 1: not a win.
    table = pd.DataFrame(rows("bfloat16", 1.4, 1.8) + rows("float32", 0.8, 3.2))
    head, _ = ladder_answer.lines(table)
    assert "at the reference shape of 1 of 2 block(s) and dtype(s): attention bf16 (compile " \
           "1.6x, 1.4-1.8)." in head and "fp32" not in head
