"""The results schema: every column once, each in exactly one part of the typed row; rows go
to measurements.csv and come back unchanged; the docs are generated from it."""
import math
from dataclasses import fields, replace

import pandas as pd
import pytest

from kernels import registry
from suites.common.errors import InputError
from suites.traces.op_kinds import LAUNCH_APIS
from suites.tools import docs
from suites.reports.run.build import EXPLAINED
from suites.reports.run.conventions import conventions_html
from suites.results.columns import MEASUREMENTS, Status, column, headers
from suites.results.row import PARTS, Check, ProfileStats, ResultRow, Roofline, TimingStats
from suites.results.reader import RunFolder
from suites.results.tables import measurements_frame

# A part, the params dict, Check's reason, the per-tensor gradient errors (grad_errors says them).
NOT_COLUMNS = {"params", "problem", "grad_by_tensor"} | set(PARTS)


def test_every_column_is_a_field_of_exactly_its_part_and_back():
    names = [c.name for c in MEASUREMENTS]
    assert len(names) == len(set(names))
    for c in MEASUREMENTS:
        holder = PARTS[c.part] if c.part else ResultRow
        assert c.name in {f.name for f in fields(holder)}, c.name
    for part, kind in {"": ResultRow, **PARTS}.items():
        for f in fields(kind):
            if f.name not in NOT_COLUMNS:
                assert column(f.name).part == part, f.name


def _full_row() -> ResultRow:
    return ResultRow(
        suite="norm", op="norm", case_id="T8-D4-rms-fp32", variant="triton", family="triton",
        dtype="float32", device="cpu", params={"T": 8, "D": 4, "norm": "rms"},
        roofline=Roofline(128.0, 160.0, None, 160.0, 0.8, 1e-6, 2e-6, 3.0, "memory"),
        status=Status.OK, reason="", threads=2, first_call_ms=12.5, compile_ms=math.nan,
        compile_cache=None, speedup=1.5, exposed_overhead_us=0.5,
        timing=TimingStats(10, 2.0, 1.5, 3.0, 1.0, 0.25, 2.2, 2.0, 2.4, "n/a"),
        check=Check(1e-7, 1e-8, 2e-7, 1e-5),
        profile=ProfileStats(5.0, 4.0, 0.2, 1.0, math.nan, math.nan, 3.0, None, "t.json.gz", "t.txt"))


def _skipped_and_incorrect() -> list[ResultRow]:
    ok = _full_row()
    skipped = replace(ok, variant="functional", status=Status.SKIPPED, reason="needs a unicorn",
                      timing=None, check=None, profile=None, first_call_ms=math.nan,
                      speedup=math.nan, exposed_overhead_us=math.nan,
                      roofline=replace(ok.roofline, tflops=math.nan, gbps=math.nan,
                                       pct_peak=math.nan, roofline_bound=None))
    incorrect = replace(skipped, variant="compile", status=Status.INCORRECT,
                        reason="max error too large", check=Check(1.0, 0.5, 0.9, 1e-5, "too large"))
    return [ok, skipped, incorrect]


def _same(a, b) -> bool:
    """Equal, or both empty the same way: NaN for a number, None for text."""
    if a is None or b is None:
        return a is b
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


def test_rows_survive_the_csv_whatever_their_status(tmp_path):
    rows = _skipped_and_incorrect()
    measurements_frame(rows).to_csv(tmp_path / "measurements.csv", index=False)
    frame = RunFolder(tmp_path).measurements
    assert list(frame.columns[:10]) == ["suite", "op", "case_id", "variant", "family", "dtype",
                                        "device", "T", "D", "norm"]
    for row, record in zip(rows, frame.to_dict("records")):
        back = ResultRow.from_record(record, params=["T", "D", "norm"])
        for name, value in row.record().items():
            assert _same(value, back.record()[name]), (row.status, name, value, back.record()[name])
        assert (back.timing is None) == (row.timing is None)
        assert (back.check is None) == (row.check is None)
        if row.check is not None:
            assert back.check.passed == row.check.passed


def test_reading_checks_the_schema(tmp_path):
    pd.DataFrame([{"suite": "s", "case_id": "c", "variant": "v", "status": "done",
                   "median_us": "12"}]).to_csv(tmp_path / "measurements.csv", index=False)
    with pytest.raises(InputError, match="unknown status value\\(s\\) done; accepted: ok, skipped"):
        RunFolder(tmp_path).measurements
    pd.DataFrame([{"suite": "s", "case_id": "c", "variant": "v", "status": "ok",
                   "median_us": "fast"}]).to_csv(tmp_path / "measurements.csv", index=False)
    frame = RunFolder(tmp_path).measurements
    assert math.isnan(frame["median_us"].iloc[0]) and frame["reason"].iloc[0] == ""
    pd.DataFrame([{"suite": "s", "variant": "v"}]).to_csv(tmp_path / "measurements.csv", index=False)
    with pytest.raises(InputError, match="missing column\\(s\\) case_id, status"):
        RunFolder(tmp_path).measurements


def test_a_view_naming_a_column_the_schema_lacks_fails():
    assert headers(["median_us", "n_kernels"]) == {"median_us": "median us", "n_kernels": "kernels"}
    with pytest.raises(KeyError, match="'median' is not a column"):
        headers(["median"])
    with pytest.raises(KeyError):
        _full_row().value("medain_us")


def test_the_docs_tables_and_samples_are_current():
    assert docs.main(["--check"]) == 0, "run: python -m suites.tools.docs [--samples]"
    text = "".join(path.read_text() for path in docs.doc_files())
    for op in registry.ops():
        assert op.flops_formula.text in text and op.bytes_formula.text in text
    assert all(api in text for api in LAUNCH_APIS)


def test_report_conventions_state_the_code_s_own_facts(monkeypatch):
    op = registry.get_op("attention")
    page = conventions_html(op, EXPLAINED)
    assert "4·B·H·S²·D / 2" in page and all(api in page for api in LAUNCH_APIS)
    assert "fp32 1e-05, fp16 0.001, bf16 0.008" in page
    from suites.harness import correctness
    monkeypatch.setitem(correctness.FLOOR, "float32", 3e-5)  # change the code, the text follows
    assert "fp32 3e-05" in conventions_html(op, EXPLAINED)


def test_every_finding_code_has_its_catalog_entry():
    """The docs' table of findings comes from suites/traces/findings/catalog.py: a new code without
    an entry (what it says, the post it comes from) would be missing there."""
    from suites.traces.findings.catalog import CATALOG, SERIES
    from suites.traces.findings.codes import Code

    assert set(CATALOG) == set(Code), set(Code) ^ set(CATALOG)
    assert {post for _, post in CATALOG.values()} <= set(SERIES)
