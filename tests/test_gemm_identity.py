"""GEMM kernels: what their names say (on names from the real fixtures and on made-up ones in
the libraries' schemes), their shapes from the launching op, their achieved TFLOP/s, the
equal-FLOPs finding, and kernels.csv's new columns (old files still read)."""
import gzip
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from suites.traces.findings import FindingContext, run_detectors
from suites.traces.call_profile import CallProfile
from suites.traces.gemm_names import GemmIdentity, gemm_identity
from suites.traces.findings.gemms import kernel_label
from suites.traces.gemm_rates import element_bytes, equal_flop_rates, gemm_shape
from suites.traces.kernel_details import COLUMNS
from suites.traces.steps import analyze
from suites.traces.events import read_trace
from suites.results.columns import KERNEL_COLUMNS, KERNEL_DETAIL_COLUMNS, KEY
from suites.results.reader import RunFolder
from trace_builders import event, write

FIXTURES = Path(__file__).parent / "fixtures"
H100_BERT = FIXTURES / "real_traces" / "h100_bert_small.json.gz"

# (fixture, a kernel name in it, what the name says)
REAL = [
    ("real_traces/h100_bert_small", "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_"
     "bf16_256x128_64x3_tn_align2>(cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_tn_"
     "align2::Params)",
     GemmIdentity("CUTLASS", "sm80", "tn", "bf16", "256x128x64", "3", "yes")),
    ("real_traces/h100_bert_small", "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_"
     "s161616gemm_bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_"
     "32x32_128x2_tn_align8::Params)",
     GemmIdentity("CUTLASS", "sm80", "tn", "bf16", "32x32x128", "2", "yes")),
    ("real_traces/h100_bert_small", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_"
     "warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
     GemmIdentity("cuBLAS", "sm90", "tn", "bf16", "64x64x64", "", "yes")),
    ("real_traces/h100_qwen1.5_0.5b", "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_"
     "align1>(cutlass_80_simt_sgemm_128x32_8x5_nn_align1::Params)",
     GemmIdentity("CUTLASS", "sm80", "nn", "f32", "128x32x8", "5", "no")),
    ("gpu_traces/a100_alexnet_fp32", "ampere_sgemm_32x32_sliced1x4_tn",
     GemmIdentity("cuBLAS", "ampere", "tn", "f32", "32x32", "", "no")),
    ("gpu_traces/a100_alexnet_fp32", "ampere_gcgemm_64x64_nt",
     GemmIdentity("cuBLAS", "ampere", "nt", "c64", "64x64", "", "no")),
    ("gpu_traces/a100_alexnet_fp32", "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_"
     "nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_alignc4_execute_kernel_"
     "cudnn", GemmIdentity("cuDNN", "sm80", "", "tf32", "128x128x16", "4", "yes")),
    ("real_traces/b200_eager", "nvjet_tst_144x128_64x6_2x1_v_bz_bias_TNN",
     GemmIdentity("nvjet (cuBLAS)", "", "tn", "bf16", "144x128x64", "6", "yes")),
    ("real_traces/b200_eager", "bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_"
     "m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_schedP2x1x2x3_biasM_bN_tmaOpt_clmp_dynBatch_"
     "sm100f",
     GemmIdentity("TensorRT-LLM", "sm100", "tn", "mxe2m1/mxe4m3", "128x16x256", "3", "yes")),
    ("real_traces/mi300_bert_small", "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x128_"
     "MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_"
     "GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA256_LBSPPB256_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_"
     "MIAV0_MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_"
     "SIA3_SS1_SPO0_SRVW0_SSO0_SVW1_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_"
     "VWB1_WSGRA0_WSGRB0_WS64_WG16_4_4",
     GemmIdentity("hipBLASLt", "gfx942", "tn", "bf16", "16x16x128", "", "yes")),
    ("real_traces/mi210_gpu_only", "Cijk_Ailk_Bjlk_BBS_BH_Bias_HAS_SAV_UserArgs_MT128x64x32_"
     "MI32x32x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_"
     "GRVWB8_GSUAMB_GLS0_ISA90a_IU1_K1_LBSPPA0_LBSPPB0_LBSPPM0_LPA0_LPB0_LPM0_LRVW4_LWPMn1_MIAV0_"
     "MIWT2_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS2_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_"
     "SPO1_SRVW0_SSO0_SVW1_SK0_SKXCCM0_TLDS0_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA2_VWB1_WSGRA0_"
     "WSGRB0_WS64_WG64_4_1", GemmIdentity("hipBLASLt", "gfx90a", "nt", "bf16", "128x64x32", "",
                                          "yes")),
    ("real_traces/mi210_gpu_only", "igemm_fwd_gtcx2_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_"
     "wr2x2_ta1x8x2x1_1x4x1x64_tb1x8x2x1_1x4x1x64_gkgs",
     GemmIdentity("MIOpen", "", "", "bf16", "128x128x32", "", "yes")),
    ("real_traces/vllm_decode_cuda_graphs", "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1",
     GemmIdentity("Triton (triton_kernels)", "", "", "bf16/mxfp4", "16x128x256", "", "")),
]


def _kernel_names(fixture: str) -> set[str]:
    with gzip.open(FIXTURES / f"{fixture}.json.gz", "rt") as f:
        return {e["name"] for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"}


@pytest.mark.parametrize("fixture, name, expected", REAL, ids=[r[2].library + " " + r[2].tile
                                                               for r in REAL])
def test_real_kernel_names(fixture, name, expected):
    assert name in _kernel_names(fixture)  # the name is a real one, as written in the trace
    assert gemm_identity(name) == expected


MADE_UP = [
    ("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn",
     GemmIdentity("cuBLAS", "ampere", "tn", "bf16", "128x64x64", "4", "yes")),
    ("volta_h884gemm_64x64_ldg8_nn",
     GemmIdentity("cuBLAS", "volta", "nn", "f16", "64x64", "", "yes")),
    ("sm80_xmma_gemm_f16f16_f16f32_f32_nt_n_tilesize128x256x32_stage3_warpsize2x4x1_tensor16x8x16_"
     "kernel", GemmIdentity("cuBLAS", "sm80", "nt", "f16", "128x256x32", "3", "yes")),
    ("cutlass_80_tensorop_s1688gemm_tf32_128x128_16x3_tt_align4",
     GemmIdentity("CUTLASS", "sm80", "tt", "tf32", "128x128x16", "3", "yes")),
    ("cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_"
     "warpspecialized_cooperative_epi_tma",
     GemmIdentity("CUTLASS", "sm90", "tn", "bf16", "128x256x64", "", "yes")),
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, "
     "int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarp"
     "SpecializedCooperative<4, cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> > >, cute::tuple<"
     "cute::C<128>, cute::C<256>, cute::C<64> >, cutlass::half_t> > >(Params)",
     GemmIdentity("CUTLASS", "sm90", "", "f16", "128x256x64", "", "yes")),
    ("nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NNN",
     GemmIdentity("nvjet (cuBLAS)", "", "nn", "f16", "256x128x64", "4", "yes")),
    ("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SE_ISA90a_GRVW4",
     GemmIdentity("rocBLAS", "gfx90a", "nn", "f16", "128x128x32", "", "yes")),
    ("triton_tem_fused_addmm_0", GemmIdentity("Inductor (Triton)")),
    ("_matmul_bias_act_kernel", GemmIdentity("Triton")),  # the suite's own Triton GEMM
]


@pytest.mark.parametrize("name, expected", MADE_UP, ids=[m[0][:30] for m in MADE_UP])
def test_made_up_kernel_names(name, expected):
    assert gemm_identity(name) == expected


@pytest.mark.parametrize("name", [
    "triton_poi_fused_addmm_gelu_0",  # an mm's epilogue, fused by Inductor: not a GEMM
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >()",
    "splitKreduce_kernel", "fmha_cutlassF_bf16_aligned_64x64_rf_sm80",
    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, "
    "false, false, cutlass::bfloat16_t> >(pytorch_flash::Flash_fwd_params)",
    "cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1"])
def test_other_kernels_are_not_gemms(name):
    assert gemm_identity(name) is None


def test_shapes_from_input_dims():
    assert gemm_shape("aten::addmm", ((512,), (141, 512), (512, 2048), (), ())) == (141, 2048, 512)
    assert gemm_shape("aten::mm", ((8, 16), (16, 4))) == (8, 4, 16)
    assert gemm_shape("aten::bmm", ((3, 8, 16), (3, 16, 4))) == (3, 8, 4, 16)
    assert gemm_shape("aten::linear", ((2, 141, 512), (2048, 512), (2048,))) == (282, 2048, 512)
    assert gemm_shape("aten::matmul", ((2, 8, 16), (16, 4))) == (16, 4, 16)
    assert gemm_shape("aten::mm", ((8, 16), (15, 4))) is None  # K disagrees: not read as a GEMM
    assert gemm_shape("aten::matmul", ((2, 8, 16), (2, 16, 4))) is None  # batched: bmm says it


def test_h100_gemm_rates_from_the_launching_addmm():
    """Each addmm's Input Dims reach its one GEMM kernel through the launch's correlation id;
    the rate is FLOPs over the kernel's own device time."""
    rows = {r["kernel"]: r for r in CallProfile(analyze(read_trace(H100_BERT))).kernel_rows()}
    xmma = rows["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_"
                "execute_segment_k_off_kernel__5x_cublas"]
    assert xmma["gemm_shapes"] == "141x512x2048" and xmma["calls_per_call"] == 4
    by_hand = 4 * 2 * 141 * 512 * 2048 / xmma["total_us_per_call"] / 1e6  # one step: per call
    assert xmma["gemm_tflops"] == pytest.approx(by_hand) and by_hand == pytest.approx(35.75, 0.01)
    lm_head = next(r for name, r in rows.items() if "256x128_64x3" in name)
    assert lm_head["gemm_shapes"] == "141x30522x512" and lm_head["gemm_tflops"] > 100
    flash = next(r for name, r in rows.items() if "flash_fwd" in name)
    assert flash["gemm_library"] is None and math.isnan(flash["gemm_tflops"])


def test_equal_flops_on_the_h100_trace():
    profile = CallProfile(analyze(read_trace(H100_BERT)))
    [pair] = [rates for rates in equal_flop_rates(profile.gemm_launches())
              if rates[0].tflops >= 1.25 * rates[-1].tflops]
    fast, slow = pair[0], pair[-1]
    assert (fast.shape, slow.shape) == ("141x2048x512", "141x512x2048")
    assert fast.tflops == pytest.approx(48.26, 0.01)
    assert fast.tflops / slow.tflops == pytest.approx(1.35, 0.01)
    assert "CUTLASS sm80 tile 64x64x64" in kernel_label(fast.kernels)
    assert "cuBLAS sm90" in kernel_label(slow.kernels)
    # The step waits for the host 93% of the time: the saving would be the device's, not the
    # step's, so no advice is given.
    assert [f for f in run_detectors(FindingContext(profile))
            if f.code == "gemm_rates_differ"] == []


def _gemm_trace(tmp_path, gemms, name="g.json"):
    """gemms: [(op, input dims or None, kernel name, kernel us)], one launch each, in order."""
    events, ts = [], 0.0
    for corr, (op, dims, kernel, dur) in enumerate(gemms, start=1):
        args = {"Input Dims": dims} if dims is not None else {}
        events.append(event(op, "cpu_op", ts, 20, **args))
        events.append(event("cudaLaunchKernel", "cuda_runtime", ts + 2, 5, correlation=corr))
        events.append(event(kernel, "kernel", ts + 30, dur, tid=7, correlation=corr, stream=7))
        ts += 100
    return CallProfile(analyze(read_trace(write({"traceEvents": events}, tmp_path / name))))


def _rate_findings(profile):
    return [f for f in run_detectors(FindingContext(profile)) if f.code == "gemm_rates_differ"]


def test_equal_flops_at_different_rates_on_built_events(tmp_path):
    wide = ("aten::mm", [[128, 1024], [1024, 512]], "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_"
                                                    "stages_64x4_tn", 200.0)
    tall = ("aten::mm", [[128, 512], [512, 1024]], "ampere_bf16_s16816gemm_bf16_64x64_ldg8_f2f_"
                                                   "stages_64x3_tn", 400.0)
    # Launched every 100 us, kernels of 200 and 400 us keep the device busy: a notice.
    found = _rate_findings(_gemm_trace(tmp_path, [wide, tall]))
    assert [f.severity for f in found] == ["notice"]
    e = found[0].evidence
    gflop = 2 * 128 * 512 * 1024 / 1e9
    assert e["gflop"] == pytest.approx(gflop) and e["ratio"] == pytest.approx(2.0)
    assert (e["fast_shape"], e["slow_shape"]) == ("128x512x1024", "128x1024x512")
    assert e["fast_tflops"] == pytest.approx(gflop * 1e9 / 200 / 1e6)
    assert "tile 128x64x64" in e["fast_kernel"] and "different kernel" in found[0].statement
    # Within 25% of each other: no finding; one shape alone: nothing to compare.
    close = (*tall[:3], 220.0)
    assert _rate_findings(_gemm_trace(tmp_path, [wide, close], "c.json")) == []
    assert _rate_findings(_gemm_trace(tmp_path, [wide, wide], "w.json")) == []
    # 10 and 20 us kernels leave the device waiting for the host: the saving would not
    # shorten the step, and no advice is given.
    short = [(*wide[:3], 10.0), (*tall[:3], 20.0)]
    assert _rate_findings(_gemm_trace(tmp_path, short, "s.json")) == []


def test_shapes_from_a_known_list_and_ambiguous_ops(tmp_path):
    # A Triton GEMM with no aten op: its shape only from the caller's list of the call's GEMMs.
    triton = [("triton_launcher", None, "_matmul_bias_act_kernel", 8.0)]
    assert math.isnan(_gemm_trace(tmp_path, triton).kernel_rows()[0]["gemm_tflops"])
    profile = _gemm_trace(tmp_path, triton, "t.json")
    profile.gemm_shapes = ((256, 256, 256),)
    row = profile.kernel_rows()[0]
    assert row["gemm_shapes"] == "256x256x256"
    assert row["gemm_tflops"] == pytest.approx(2 * 256 ** 3 / 8.0 / 1e6)
    # One aten::mm that launched two GEMM kernels: which did the work is not known, so neither
    # gets the op's FLOPs.
    events = [event("aten::mm", "cpu_op", 0, 50, **{"Input Dims": [[64, 64], [64, 64]]})]
    for corr, kernel in ((1, "ampere_sgemm_32x32_sliced1x4_tn"), (2, "ampere_sgemm_64x64_tn")):
        events += [event("cudaLaunchKernel", "cuda_runtime", corr * 10, 5, correlation=corr),
                   event(kernel, "kernel", 60 + corr * 10, 5, tid=7, correlation=corr)]
    split = CallProfile(analyze(read_trace(write({"traceEvents": events}, tmp_path / "s.json"))))
    assert split.gemm_launches() == []
    assert all(math.isnan(r["gemm_tflops"]) for r in split.kernel_rows())


def test_kernel_columns_match_the_schema_and_old_files_still_read(tmp_path):
    assert KERNEL_DETAIL_COLUMNS == COLUMNS
    rows = CallProfile(analyze(read_trace(H100_BERT))).kernel_rows()
    assert list(rows[0]) == list(KERNEL_COLUMNS[len(KEY) + 1:])  # after the key and dtype
    old = pd.DataFrame([{"suite": "s", "case_id": "c", "variant": "v", "dtype": "bfloat16",
                         "kernel": "k", "kind": "kernel", "calls_per_call": 1,
                         "total_us_per_call": 2.0, "mean_us": 2.0}])
    old.to_csv(tmp_path / "kernels.csv", index=False)
    frame = RunFolder(tmp_path).kernels  # no run.json: a run before versions, upgraded
    assert len(frame) == 1 and set(KERNEL_COLUMNS) <= set(frame.columns)
    assert frame["gemm_tflops"].isna().all() and frame["total_us_per_call"].iloc[0] == 2.0


def test_a_gemms_flops_per_byte_and_bandwidth():
    """vLLM's decode: its lm_head GEMM (M = 32 tokens) does 32 FLOP per byte it must move,
    under any GPU's ridge point: 4.2 TB/s, memory-bound though its 134 TFLOP/s reads high."""
    profile = CallProfile(analyze(read_trace(
        Path(__file__).parent / "fixtures" / "real_traces" / "vllm_decode_cuda_graphs.json.gz")))
    [row] = [r for r in profile.kernel_rows() if r.get("gemm_shapes") == "32x201088x2880"]
    m, n, k = 32, 201088, 2880
    assert row["gemm_flop_per_byte"] == pytest.approx(2 * m * n * k / (2 * (m * k + k * n + m * n)))
    assert row["gemm_flop_per_byte"] == pytest.approx(31.6, abs=0.1)
    assert row["gemm_gbps"] == pytest.approx(row["gemm_tflops"] * 1e3 / row["gemm_flop_per_byte"])
    # A name that gives no input type: no bytes, so neither figure.
    assert element_bytes("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1") == 2
    assert element_bytes("my_gemm_kernel") is None
