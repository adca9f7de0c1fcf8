"""matmul_add's batch axis (the series' 3-D experiment): `suite.batch` adds B to a case only
where it is not 1, so 2-D cases keep their ids; every variant takes (B, M, K) inputs."""
import pandas as pd
import pytest
import torch

from kernels import registry
from kernels.base import Case
from suites.common.errors import ConfigError
from test_config import spec_of
from test_end_to_end import assert_finished, run_suite


def test_batch_one_keeps_the_2d_ids_and_a_batch_adds_b_first():
    spec = spec_of("device=cpu", "suite.sizes=[64]", "suite.batch=[1,4]",
                   "suite.dtypes=[float32]")
    assert [c.id for c in spec.cases()] == ["M64-N64-K64-fp32", "B4-M64-N64-K64-fp32"]
    assert [dict(s) for s in spec.suite.shapes] == [{"M": 64, "N": 64, "K": 64},
                                                     {"B": 4, "M": 64, "N": 64, "K": 64}]


@pytest.mark.parametrize("override, message", [
    ("suite.batch=[0]", "suite.batch"), ("suite.batch=[2,2]", "suite.batch"),
    ("suite.batch=[]", "suite.batch: expected a non-empty list")])
def test_a_bad_batch_names_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        spec_of("device=cpu", override)


def test_only_matmul_add_has_a_batch_axis():
    with pytest.raises(ConfigError, match="suite.batch: mlp has no batch axis"):
        spec_of("device=cpu", "suite=mlp", "+suite.batch=[2]")


@pytest.mark.parametrize("variant", ["eager", "addmm", "compile", "triton", "triton_tma"])
def test_every_variant_takes_a_batched_input(variant):
    op = registry.get_op("matmul_add")
    case = Case.make("matmul_add", {"B": 3, "M": 16, "N": 24, "K": 32}, "float32", "cpu")
    inputs = op.make_inputs(case, torch.Generator().manual_seed(0))
    assert inputs["x"].shape == (3, 16, 32)
    torch._dynamo.reset()
    out = registry.get_variant("matmul_add", variant).prepare(case, inputs)()
    torch.testing.assert_close(out.double(), op.reference(case, inputs), rtol=1e-4, atol=1e-4)
    assert op.flops(case) == 3 * (2 * 16 * 24 * 32 + 16 * 24)


def test_a_batched_sweep_reports_b_as_its_own_series(tmp_path):
    out = tmp_path / "run"
    result = run_suite("suite=matmul_add", "suite.sizes=[16]", "suite.batch=[1,3]",
                       "suite.dtypes=[float32]", "suite.variants=[addmm]", "device=cpu",
                       "timing=quick", "calibrate=false", f"hydra.run.dir={out}")
    assert_finished(result, out)
    rows = pd.read_csv(out / "measurements.csv")
    assert sorted(rows["case_id"].unique()) == ["B3-M16-N16-K16-fp32", "M16-N16-K16-fp32"]
    assert rows.loc[rows["case_id"] == "B3-M16-N16-K16-fp32", "B"].eq(3).all()
    html = (out / "report.html").read_text()
    # The size-by-size answer tells the two cases apart by B (a 2-D case is B=1).
    sized = html.split("<h2>Each variant and dtype, size by size</h2>")[1].split("<h2>")[0]
    # Unless the busy machine left addmm no speedup anywhere (its rows or eager's noisy): then
    # the section says so instead.
    if rows.loc[rows["variant"] == "addmm", "speedup"].notna().any():
        assert "B1" in sized and "B3" in sized, sized
    else:
        assert "No variant has a speedup against eager" in sized, sized
