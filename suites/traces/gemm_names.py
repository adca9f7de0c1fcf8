"""What a GEMM kernel's name says about it: library, architecture, layout, dtype, tile, stages,
and whether it runs on tensor cores (matrix cores on AMD).

Libraries write these into their kernel names, each in its own shape; the series reads them off
the profiler table (part 1: `sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64...`
against `ampere_sgemm_...`). Each parser below takes one family of names, as found in real
traces (tests/fixtures) and in the libraries' naming schemes; a field the name does not show
stays empty (""), never guessed. `tile` is M x N (x K where the name has it): the output block
one CTA computes, and the K slice it loads per step.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class GemmIdentity:
    library: str = ""  # cuBLAS, CUTLASS, cuDNN, nvjet (cuBLAS), hipBLASLt, rocBLAS, Triton...
    arch: str = ""  # sm80, sm90, sm100, gfx90a, gfx942; or cuBLAS's ampere/volta/turing
    layout: str = ""  # tn, nn, nt, tt: op(A), op(B) in BLAS's column-major terms
    dtype: str = ""  # input type: bf16, f16, f32, tf32, e4m3...; "a/b" when A and B differ
    tile: str = ""  # e.g. 128x128x64
    stages: str = ""  # software pipeline depth, where the name has it
    tensor_core: str = ""  # yes, no, or "" when the name does not say

    def row(self) -> dict:
        """kernels.csv's columns: text, empty as None; stages a number."""
        row = {f"gemm_{f.name}": getattr(self, f.name) or None for f in fields(self)}
        row["gemm_stages"] = int(self.stages) if self.stages else float("nan")
        return row


EMPTY_ROW = GemmIdentity().row()
COLUMNS = tuple(EMPTY_ROW)

_DTYPES = {"bf16": "bf16", "fp16": "f16", "f16": "f16", "half": "f16", "tf32": "tf32",
           "fp32": "f32", "f32": "f32", "fp64": "f64", "f64": "f64", "e4m3": "e4m3",
           "e5m2": "e5m2", "i8": "i8", "s8": "i8", "int8": "i8"}
# A BLAS precision letter in front of `gemm` (sgemm, hgemm, h884gemm, gcgemm).
_BLAS_LETTER = {"s": "f32", "d": "f64", "h": "f16", "c": "c64", "z": "c128", "gc": "c64"}
_DTYPE_TOKEN = re.compile(r"(?<![a-z0-9])(bf16|fp16|f16|tf32|fp32|f32|fp64|f64|e4m3|e5m2|"
                          r"int8|i8|s8)(?![0-9])", re.I)


def _dtype_in(text: str) -> str:
    """The first type token in a name (tf32 wins: it names the math, f32 the storage)."""
    if re.search(r"tf32", text, re.I):
        return "tf32"
    found = _DTYPE_TOKEN.search(text)
    return _DTYPES[found.group(1).lower()] if found else ""


def _tile(*dims) -> str:
    return "x".join(str(int(d)) for d in dims if d)


# cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8 (CUTLASS 2 naming, also the
# kernels cuBLAS ships): arch, op class, instruction, epilogue, tile MxN, K x stages, layout.
_CUTLASS2 = re.compile(r"cutlass_(\d+)_(wmma_tensorop|tensorop|simt)_(\w*?)gemm\w*?_(\d+)x(\d+)_"
                       r"(\d+)x(\d+)_([nt]{2})_align")
# cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_...
_CUTLASS3 = re.compile(r"cutlass3x_(sm\d+)_(tensorop|simt|wmma)\w*?gemm_([a-z0-9_]+?)_"
                       r"(\d+)x(\d+)x(\d+)_\d+x\d+x\d+_\d+_([nt]{2})[nt]?_align")
# CUTLASS's C++ template names (cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<...>>)
_CUTE_TILE = re.compile(r"cute::C<(\d+)>, cute::C<(\d+)>, cute::C<(\d+)>")
_CUTLASS_ARCH = re.compile(r"(?:arch::|Mainloop)Sm(\d+)")
_CUTLASS_TYPE = re.compile(r"cutlass::(bfloat16_t|half_t|tfloat32_t|float_e4m3_t|float_e5m2_t)")
_CUTLASS_TYPES = {"bfloat16_t": "bf16", "half_t": "f16", "tfloat32_t": "tf32",
                  "float_e4m3_t": "e4m3", "float_e5m2_t": "e5m2"}
# sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_..._cublas (cuBLAS, cuDNN: xmma)
_XMMA = re.compile(r"(sm\d+)_xmma_\w*?tilesize(\d+)x(\d+)x(\d+)")
# ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn, ampere_sgemm_32x32_sliced1x4_tn
_CUBLAS_ARCH = re.compile(r"^(?:void )?(maxwell|pascal|volta|turing|ampere|hopper|blackwell)_"
                          r"(?:(\w+?)_)?([a-z]*?)(\d*)gemm\w*?_(\d+)x(\d+)(\w*?)_([nt]{2})(?:_|$)")
_STAGES = re.compile(r"stages?_?(\d+)x(\d+)")
# nvjet_tst_144x128_64x6_2x1_v_bz_bias_TNN (cuBLAS's Hopper/Blackwell kernels: tile MxN, K x
# stages, cluster; the letters after nvjet_ are A/compute/output types: t bf16, as the bf16
# addmm of b200_eager runs nvjet_tst; h f16, s f32)
_NVJET = re.compile(r"nvjet_(?:sm\d+_)?([a-z]{3,5})_(\d+)x(\d+)_(\d+)x(\d+)_\w*?_([TN]{2})[TN]?$")
_NVJET_TYPES = {"t": "bf16", "h": "f16", "s": "f32", "d": "f64"}
# bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_..._TN_..._sm100f (TensorRT-LLM's trtllm-gen:
# output type, A and B types, accumulator, tile, stages, layout, arch)
_TRTLLM = re.compile(r"^(?:bmm|gemm)_([A-Za-z0-9]+)_([A-Za-z0-9]+?)_(?:Fp32|Fp16)_"
                     r"t(\d+)x(\d+)x(\d+)\w*?_s(\d+)_\w*?_([TN]{2})_\w*?(sm\d+)")
_TRT_TYPE = re.compile(r"(Mx)?(E\dm\d|Bfloat16|Fp16|Fp32|Int8)")
_TRT_TYPES = {"bfloat16": "bf16", "fp16": "f16", "fp32": "f32", "int8": "i8"}
# Tensile (rocBLAS, hipBLASLt): Cijk_Alik_Bljk_BBS_BH_..._MT32x32x64_MI16x16x1_..._ISA942_...
_TENSILE = re.compile(r"Cijk_(A[a-z]{3})_(B[a-z]{3})_([A-Z0-9]+)_")
_TENSILE_TILE = re.compile(r"_MT(\d+)x(\d+)x(\d+)_")
_TENSILE_MFMA = re.compile(r"_MI(\d+)x(\d+)x(\d+)")
_TENSILE_ISA = re.compile(r"_ISA(\d+[a-z]?)_")
# Tensile's index order (fastest first; C[i,j] = sum over l of A B): A led by its free index i
# (Ailk) is not transposed, led by the summed index l (Alik) it is; B likewise (Bljk, Bjlk).
_TENSILE_A = {"Ailk": "n", "Alik": "t"}
_TENSILE_B = {"Bljk": "n", "Bjlk": "t"}
_TENSILE_TYPES = (("B8", "e5m2"), ("F8", "e4m3"), ("I8", "i8"), ("S", "f32"), ("D", "f64"),
                  ("H", "f16"), ("B", "bf16"), ("X", "tf32"), ("C", "c64"), ("Z", "c128"))
# MIOpen's implicit-GEMM convolutions: igemm_fwd_gtcx2_nhwc_bf16_..._bt256x128x16_...
_MIOPEN = re.compile(r"igemm_(?:fwd|bwd|wrw)_gtc(x?)\d*_(?:nchw|nhwc|nchwc)_([a-z0-9]+)_\w*?"
                     r"_bt(\d+)x(\d+)x(\d+)_")
# Triton: Inductor's GEMM templates, and hand-written matmul kernels (the suite's own included).
_INDUCTOR_MM = re.compile(r"triton_tem_fused_\w*?(mm|bmm|addmm)")
_TRITON_MM = re.compile(r"(^|_)(matmul|gemm|mm)(_|$)", re.I)
# The first element type among a C++ kernel's template arguments (gemv2T_kernel_val<int, int,
# float, ...>).
_CPP_TYPE = re.compile(r"[<, ](__nv_bfloat16|c10::BFloat16|__half|c10::Half|float|double)[,> ]")
_CPP_TYPES = {"__nv_bfloat16": "bf16", "c10::BFloat16": "bf16", "__half": "f16",
              "c10::Half": "f16", "float": "f32", "double": "f64"}
# _matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1: layouts and types of Y, X, W, then the blocks
# and split-K (triton_kernels' matmul_repr); its N/T letters are strides, not BLAS's ops.
_OGS = re.compile(r"matmul_ogs_[NT]{3}_([a-z0-9]+)_(\d+)x(\d+)x(\d+)x\d+")
_OGS_SPLIT = re.compile(r"x(?!fp)")  # between types, not inside mxfp4
_INDUCTOR_OTHER = re.compile(r"triton_(poi|red|per)_")
_CK = re.compile(r"ck::\w*?(gemm|Gemm)|kernel_gemm_xdl|device_gemm", re.I)


def _cutlass2(name: str) -> GemmIdentity | None:
    m = _CUTLASS2.search(name)
    if not m:
        return None
    arch, kind, instr, tm, tn, tk, stages, layout = m.groups()
    tc = "no" if kind == "simt" else "yes"
    # The type after the instruction (s1688gemm_tf32) or before it (bf16_s16816gemm); else
    # the BLAS letter (sgemm).
    dtype = _dtype_in(m.group(0)) or _BLAS_LETTER.get(instr.split("_")[-1][:1], "")
    return GemmIdentity("CUTLASS", f"sm{arch}", layout, dtype, _tile(tm, tn, tk), stages, tc)


def _cutlass3(name: str) -> GemmIdentity | None:
    m = _CUTLASS3.search(name)
    if not m:
        return None
    arch, kind, types, tm, tn, tk, layout = m.groups()
    return GemmIdentity("CUTLASS", arch, layout, _dtype_in(types), _tile(tm, tn, tk), "",
                        "no" if kind == "simt" else "yes")


def _cutlass_template(name: str) -> GemmIdentity | None:
    if "cutlass::" not in name or "gemm" not in name.lower():
        return None
    arch = _CUTLASS_ARCH.search(name)
    # The CTA tile, not the cluster shape (cute::C<2>, cute::C<1>, cute::C<1>): the largest.
    tiles = [tuple(int(d) for d in t) for t in _CUTE_TILE.findall(name)]
    tile = max(tiles, key=lambda t: t[0] * t[1] * t[2], default=None)
    dtype = _CUTLASS_TYPE.search(name)
    tc = "yes" if re.search(r"OpClassTensorOp|Gmma|Sm90|Sm100|Umma", name) else (
        "no" if "OpClassSimt" in name else "")
    return GemmIdentity("CUTLASS", f"sm{arch.group(1)}" if arch else "", "",
                        _CUTLASS_TYPES[dtype.group(1)] if dtype else "",
                        _tile(*tile) if tile else "", "", tc)


def _xmma(name: str) -> GemmIdentity | None:
    m = _XMMA.search(name)
    if not m:
        return None
    arch, tm, tn, tk = m.groups()
    library = "cuDNN" if "cudnn" in name else "cuBLAS"
    layout = re.search(r"_([nt]{2})_[nt]_tilesize", name)
    stages = re.search(r"_stage(\d+)_", name)
    return GemmIdentity(library, arch, layout.group(1) if layout else "", _dtype_in(name),
                        _tile(tm, tn, tk), stages.group(1) if stages else "", "yes")


def _cublas_arch(name: str) -> GemmIdentity | None:
    m = _CUBLAS_ARCH.search(name)
    if not m:
        return None
    arch, types, letter, instr, tm, tn, rest, layout = m.groups()
    dtype = _dtype_in(types or "") or _BLAS_LETTER.get(letter, "")
    # A tensor-core instruction shape (h884, s1688, s16816, i8816) before `gemm`; sgemm and
    # cgemm without one run on the CUDA cores (SIMT).
    tc = "yes" if instr else "no"
    if letter == "s" and not instr and not types:
        dtype = "f32"
    stages = _STAGES.search(rest)
    tile = _tile(tm, tn, stages.group(1)) if stages else _tile(tm, tn)
    return GemmIdentity("cuBLAS", arch, layout, dtype, tile, stages.group(2) if stages else "", tc)


def _nvjet(name: str) -> GemmIdentity | None:
    m = _NVJET.search(name)
    if not m:
        return None
    types, tm, tn, tk, stages, layout = m.groups()
    return GemmIdentity("nvjet (cuBLAS)", "", layout.lower(), _NVJET_TYPES.get(types[0], ""),
                        _tile(tm, tn, tk), stages, "yes")


def _trt_type(text: str) -> str:
    m = _TRT_TYPE.fullmatch(text)
    if not m:
        return ""
    base = _TRT_TYPES.get(m.group(2).lower(), m.group(2).lower())
    return f"mx{base}" if m.group(1) else base


def _trtllm(name: str) -> GemmIdentity | None:
    m = _TRTLLM.search(name)
    if not m:
        return None
    _, ab, tm, tn, tk, stages, layout, arch = m.groups()
    parts = [p.group(0) for p in _TRT_TYPE.finditer(ab)]
    types = [_trt_type(p) for p in parts]
    dtype = types[0] if len(set(types)) == 1 else "/".join(types)
    return GemmIdentity("TensorRT-LLM", arch, layout.lower(), dtype, _tile(tm, tn, tk), stages,
                        "yes")


def _tensile_type(code: str) -> str:
    for prefix, dtype in _TENSILE_TYPES:
        if code.startswith(prefix):
            return dtype
    return ""


def _tensile(name: str) -> GemmIdentity | None:
    m = _TENSILE.search(name)
    if not m:
        return None
    a, b, types = m.groups()
    tile, mfma, isa = (_TENSILE_TILE.search(name), _TENSILE_MFMA.search(name),
                       _TENSILE_ISA.search(name))
    layout = (_TENSILE_A.get(a, "") + _TENSILE_B.get(b, "")) if a in _TENSILE_A and \
        b in _TENSILE_B else ""
    # MI<m>x<n>x<k>: the MFMA instruction (matrix cores); MI0 or none: vector ALUs.
    tc = "yes" if mfma and int(mfma.group(1)) > 0 else "no"
    return GemmIdentity("hipBLASLt" if "UserArgs" in name else "rocBLAS",
                        f"gfx{isa.group(1)}" if isa else "", layout, _tensile_type(types),
                        _tile(*tile.groups()) if tile else "", "", tc)


def _miopen(name: str) -> GemmIdentity | None:
    m = _MIOPEN.search(name)
    if not m:
        return None
    xdlops, dtype, tm, tn, tk = m.groups()
    # gtcx: the xdlops (MFMA) kernels; plain gtc: vector ALUs.
    return GemmIdentity("MIOpen", "", "", _DTYPES.get(dtype, dtype), _tile(tm, tn, tk), "",
                        "yes" if xdlops else "no")


def _triton(name: str) -> GemmIdentity | None:
    if _INDUCTOR_MM.search(name):
        return GemmIdentity("Inductor (Triton)")
    ogs = _OGS.search(name)
    if ogs:  # triton_kernels' MoE matmul: Y x X x W types, BLOCK_M x BLOCK_N x BLOCK_K
        types, tm, tn, tk = ogs.groups()
        x, w = (_OGS_SPLIT.split(types) + ["", "", ""])[1:3]
        dtype = _DTYPES.get(x, x) if x == w else f"{_DTYPES.get(x, x)}/{_DTYPES.get(w, w)}"
        return GemmIdentity("Triton (triton_kernels)", dtype=dtype, tile=_tile(tm, tn, tk))
    # Inductor's pointwise and reduction kernels name the ops they fuse (an mm's epilogue).
    if (" " not in name and "::" not in name and not _INDUCTOR_OTHER.match(name)
            and _TRITON_MM.search(name)):
        return GemmIdentity("Triton")
    return None


def _other(name: str) -> GemmIdentity | None:
    if _CK.search(name):
        return GemmIdentity("CK", tensor_core="yes" if "xdl" in name or "wmma" in name else "")
    lowered = name.lower()
    if re.search(r"gemv|gemmsn_|gemmk1_|gemm_kernel|gemm", lowered):
        cpp_type = _CPP_TYPE.search(name)
        return GemmIdentity("cuBLAS" if re.search(r"gemv2|gemvx|gemmsn_|gemmk1_", lowered) else "",
                            dtype=_dtype_in(name) or (_CPP_TYPES[cpp_type.group(1)] if cpp_type
                                                      else ""))
    return None


_PARSERS = (_cutlass2, _cutlass3, _xmma, _cublas_arch, _nvjet, _trtllm, _tensile, _miopen,
            _cutlass_template, _triton, _other)


@functools.lru_cache(maxsize=8192)  # asked once per launch; a trace has few distinct names
def gemm_identity(name: str) -> GemmIdentity | None:
    """The GEMM fields a kernel name shows; None for a kernel that is not a GEMM."""
    for parse in _PARSERS:
        found = parse(name)
        if found is not None:
            return found
    return None


def is_gemm(name: str) -> bool:
    return gemm_identity(name) is not None
