"""What is particular to the norm block: its categorical `norm` parameter (LayerNorm or
RMSNorm), its cost model, and what its forms run. Correctness of every variant, for both norms,
is in test_variants.py (generated from the registry)."""
import pytest
import torch
import torch.nn.functional as F

from kernels import registry
from kernels.base import Case
from suites.common.errors import ConfigError
from suites.harness.case_run import measure
from suites.config.shapes import axes_shapes, reference_shape, square_shapes
from specs import PROFILE, run_spec

OP = registry.get_op("norm")


def _case(norm, dtype="float32", T=8192, D=768):
    return Case.make("norm", {"T": T, "D": D, "norm": norm}, dtype, "cpu")


def test_case_ids_name_the_norm():
    assert _case("rms", "bfloat16").id == "T8192-D768-rms-bf16"
    assert [c.id for c in OP.test_cases("float32", "cpu")] == ["T37-D45-layer-fp32",
                                                               "T37-D45-rms-fp32"]


def test_cost_model_for_the_series_width():
    T, D = 8192, 768
    layer, rms = _case("layer"), _case("rms", "bfloat16")
    assert OP.flops(layer) == 7 * T * D and OP.flops(rms) == 4 * T * D
    assert OP.bytes_ideal(layer) == (2 * T * D + 2 * D) * 4  # x, y, weight, bias in fp32
    assert OP.bytes_ideal(rms) == (2 * T * D + D) * 2  # no bias; bf16
    assert OP.bytes_moved(layer, "eager") == OP.bytes_ideal(layer) + 10 * T * D * 4  # 12 passes
    assert OP.bytes_moved(rms, "eager") == OP.bytes_ideal(rms) + 5 * T * D * 2  # 7 passes
    for fused in ("functional", "compile", "triton"):
        assert OP.bytes_moved(layer, fused) == OP.bytes_ideal(layer)


def test_the_forms_compute_the_same_norm():
    for norm in ("layer", "rms"):
        case = _case(norm, T=5, D=12)
        inputs = OP.make_inputs(case, torch.Generator().manual_seed(0))
        ref = OP.reference(case, inputs)
        for name in ("eager", "functional"):
            out = registry.get_variant("norm", name).prepare(case, inputs)()
            torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-5)
    # The rows are not centred, so a LayerNorm that forgot the mean would be far off.
    layer = _case("layer", T=5, D=12)
    inputs = OP.make_inputs(layer, torch.Generator().manual_seed(0))
    assert inputs["x"].mean() > 0.5
    uncentred = F.rms_norm(inputs["x"], (12,), inputs["weight"], 1e-5) + inputs["bias"]
    assert (uncentred.double() - OP.reference(layer, inputs)).abs().max() > 0.1


def test_unfused_layer_norm_runs_op_by_op_and_functional_in_one(tmp_path):
    case = _case("layer", T=64, D=96)
    spec = run_spec(tmp_path, case, ["functional"], profile=PROFILE)
    kernels = {}
    for name in ("eager", "functional"):
        out = measure(OP, registry.get_variant("norm", name), case, spec, None)
        assert out.row.status in ("ok", "noisy"), out.row.reason  # noisy: ran, timing spoiled
        kernels[name] = {k["kernel"] for k in out.profile.kernel_rows()}
    assert {"aten::mean", "aten::sub", "aten::rsqrt"} <= kernels["eager"]
    assert "aten::native_layer_norm" in kernels["functional"] and len(kernels["functional"]) == 1


@pytest.mark.parametrize("axes, message", [
    ({"T": [8], "D": [16], "norm": ["batch"]},
     "suite.axes.norm: 'batch' is not a norm; accepted: layer, rms"),
    ({"T": [8], "D": [0], "norm": ["rms"]}, "suite.axes.D: 0 is not a positive integer"),
    ({"T": [8], "D": [16]}, "names \\['D', 'T'\\] must be exactly the op's parameters"),
])
def test_bad_axes_name_the_key_and_the_accepted_values(axes, message):
    with pytest.raises(ConfigError, match=message):
        axes_shapes(axes, OP)


def test_axes_and_reference_keep_the_choice_as_text():
    shapes = axes_shapes({"norm": ["rms", "layer"], "T": [8], "D": [16, 32]}, OP)
    assert shapes[0] == {"T": 8, "D": 16, "norm": "rms"} and len(shapes) == 4
    assert reference_shape({"T": 8192, "D": 768, "norm": "layer"}, OP) == (
        ("T", 8192), ("D", 768), ("norm", "layer"))
    with pytest.raises(ConfigError, match="give suite.axes instead"):
        square_shapes([64], OP)


def test_triton_refuses_rows_longer_than_one_program_holds():
    pytest.importorskip("triton")
    wide = Case.make("norm", {"T": 4, "D": 131072, "norm": "rms"}, "float32", "cuda")
    assert "rows up to 65536, not D=131072" in registry.get_variant("norm", "triton").supports(wide)
