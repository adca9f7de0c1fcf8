"""`python -m suites.analyze TRACE --suggest` (suites/traces/suggest/): a model's trace to a sweep
at its shapes. A small model (layer norm, causal attention through SDPA with its projections, a
GeGLU MLP, an RMS norm written in torch ops, a matmul + bias) profiled on the CPU with shapes:
every block found at its shapes, the generated experiment composes and sweeps exactly those
cases; the shared real traces map their GEMMs, norms and attention; a trace without shapes gets
one line; a non-causal attention is listed as not buildable, with the reason."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from suites.traces import command

ROOT = Path(__file__).resolve().parents[1]
REAL = Path(__file__).parent / "fixtures" / "real_traces"
# Large enough that each op's own time, not the profiler's cost per op, is its time in the trace.
B, S, D, H, I = 2, 64, 128, 4, 384
T = B * S
N_OUT = 48


class TinyModel(nn.Module):
    """What the patterns must find: norm (layer), attention (SDPA, causal, with QKV and output
    projections as linears), norm (rms, in torch ops), GeGLU MLP (bias-free linears), and a
    matmul + bias."""

    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.rms_weight = nn.Parameter(torch.ones(D))
        self.gate = nn.Linear(D, I, bias=False)
        self.up = nn.Linear(D, I, bias=False)
        self.down = nn.Linear(I, D, bias=False)
        self.w = nn.Parameter(torch.randn(D, N_OUT))
        self.b = nn.Parameter(torch.randn(N_OUT))

    def forward(self, x):
        h = self.norm1(x)
        q, k, v = self.qkv(h).split(D, dim=-1)
        q, k, v = (t.reshape(B, S, H, D // H).transpose(1, 2).contiguous() for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(B, S, D))
        variance = x.pow(2).mean(-1, keepdim=True)
        n = x * torch.rsqrt(variance + 1e-6)
        n = self.rms_weight * n
        x = x + self.down(F.gelu(self.gate(n), approximate="tanh") * self.up(n))
        flat = x.reshape(T, D)
        return torch.add(torch.matmul(flat, self.w), self.b)


def profile_model(path: Path, record_shapes: bool = True, steps: int = 2) -> Path:
    model = TinyModel().eval()
    x = torch.randn(B, S, D)
    with torch.no_grad(), torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=record_shapes,
            schedule=torch.profiler.schedule(wait=0, warmup=1, active=steps),
            on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for _ in range(steps + 1):
            model(x)
            prof.step()
    return path


@pytest.fixture(scope="module")
def model_trace(tmp_path_factory) -> Path:
    return profile_model(tmp_path_factory.mktemp("suggest") / "tiny.json")


def suggest(trace: Path, out: Path, capsys) -> tuple[int, list[str], pd.DataFrame]:
    code = command.main([str(trace), "--suggest", "--out", str(out)])
    captured = capsys.readouterr()
    lines = (captured.out.strip() or captured.err.strip()).splitlines()
    frame = pd.read_csv(out / "suggest.csv") if (out / "suggest.csv").exists() else None
    return code, lines, frame


def test_every_block_of_a_small_model_is_found_at_its_shapes(model_trace, tmp_path, capsys):
    code, lines, frame = suggest(model_trace, tmp_path / "out", capsys)
    assert code == 0
    mapped = frame[frame["mapped"]]
    found = set(mapped["group"])
    assert {f"norm T{T}-D{D}-layer float32", f"linear T{T}-IN{D}-OUT{3 * D} float32",
            f"attention B{B}-H{H}-S{S}-D{D // H} float32", f"linear T{T}-IN{D}-OUT{D} float32",
            f"norm T{T}-D{D}-rms float32", f"mlp T{T}-D{D}-I{I} float32",
            f"matmul_add M{T}-N{N_OUT}-K{D} float32"} <= found, found
    assert (mapped["calls_per_step"] == 1).all()  # two profiled steps, once a step each
    mlp = mapped[mapped["block"] == "mlp"].iloc[0]
    assert mlp["ops"] == "aten::linear x3, aten::gelu, aten::mul"
    # The last line is the command that runs the generated sweep.
    folder = tmp_path / "out"
    assert lines[-1].endswith(f"experiment=suggested 'hydra.searchpath=[file://{folder}]'")
    assert any(line.startswith("covered: ") for line in lines)


def test_each_group_is_replayed_alone_beside_the_trace(model_trace, tmp_path, capsys):
    """Replay first: every mapped group run alone by the block's variant of the trace's form,
    its time beside the trace's; a difference past 1.5x either way says so, with a cause."""
    _, lines, frame = suggest(model_trace, tmp_path / "out", capsys)
    mapped = frame[frame["mapped"]].set_index("block")
    replayed = dict(zip(mapped["group"], mapped["replay_variant"]))
    assert replayed[f"attention B{B}-H{H}-S{S}-D{D // H} float32"] == "sdpa"
    assert replayed[f"norm T{T}-D{D}-layer float32"] == "functional"
    assert replayed[f"norm T{T}-D{D}-rms float32"] == "eager"  # written in torch ops
    assert replayed[f"mlp T{T}-D{D}-I{I} float32"] == "eager"
    assert replayed[f"matmul_add M{T}-N{N_OUT}-K{D} float32"] == "eager"  # matmul, then add
    assert (mapped["replay_us"] > 0).all() and (mapped["trace_us_per_instance"] > 0).all()
    ratio = mapped["trace_us_per_instance"] / mapped["replay_us"]
    assert ratio.to_numpy() == pytest.approx(mapped["trace_over_replay"].to_numpy())
    apart = (ratio > 1.5) | (ratio < 1 / 1.5)
    notes = mapped["replay_note"].fillna("")
    assert (notes[apart].str.startswith("the model's ")).all()
    assert (notes[~apart] == "").all()
    assert lines[lines.index(next(x for x in lines if x.startswith("replay (")))
                 + 1].startswith("  ")


def test_the_generated_experiment_sweeps_exactly_the_found_cases(model_trace, tmp_path, capsys):
    out = tmp_path / "out"
    suggest(model_trace, out, capsys)
    text = (out / "experiment" / "suggested.yaml").read_text()
    assert text.startswith("# @package _global_")
    sweep = tmp_path / "sweep"
    # The baselines, and the library forms that need no compile (seconds each on a CPU).
    variants = {"norm": "[eager,functional]", "linear": "[eager]", "attention": "[naive,sdpa]",
                "mlp": "[eager]", "matmul_add": "[eager,addmm]"}
    baselines = [f"suggested.{name}.variants={v}" for name, v in variants.items()]
    done = subprocess.run(
        [sys.executable, str(ROOT / "run_suite.py"), "-m", "experiment=suggested",
         f"hydra.searchpath=[file://{out}]", *baselines, "device=cpu",
         "timing=quick", "calibrate=false", "profile.enabled=false", "progress=false",
         f"hydra.sweep.dir={sweep}"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-3000:]  # 1: rows noisy on a busy machine
    ids = {}
    for folder in sorted(p for p in sweep.iterdir() if (p / "measurements.csv").exists()):
        rows = pd.read_csv(folder / "measurements.csv")
        ids[rows["suite"].iloc[0]] = set(rows["case_id"])
        config = json.loads((folder / "run.json").read_text())["config"]
        assert config["suggested"]["_trace"]["steps"] == 2  # the trace travels with the run
    assert ids == {
        "norm": {f"T{T}-D{D}-layer-fp32", f"T{T}-D{D}-rms-fp32"},
        "linear": {f"T{T}-IN{D}-OUT{3 * D}-fp32", f"T{T}-IN{D}-OUT{D}-fp32"},
        "attention": {f"B{B}-H{H}-S{S}-D{D // H}-fp32"},
        "mlp": {f"T{T}-D{D}-I{I}-fp32"},
        "matmul_add": {f"M{T}-N{N_OUT}-K{D}-fp32"},
    }
    # The sweep's report: the traced step, group by group, and what fusing would save.
    from suites.collect import main as collect
    assert collect([str(sweep), "--out", str(tmp_path / "ladder")]) == 0
    out_text = capsys.readouterr().out
    table = pd.read_csv(tmp_path / "ladder" / "prediction.csv")
    pairs = set(zip(table["case_id"], table["replay"], table["variant"]))
    expected = {(f"T{T}-D{D}-layer-fp32", "functional", "eager"),
                (f"T{T}-D{D}-rms-fp32", "eager", "functional"),
                (f"M{T}-N{N_OUT}-K{D}-fp32", "eager", "addmm"),
                (f"B{B}-H{H}-S{S}-D{D // H}-fp32", "sdpa", "naive")}
    # A prediction reads ok rows only: a pair the busy machine made noisy is left out.
    ok = {(r.case_id, r.variant) for folder in sweep.iterdir()
          if (folder / "measurements.csv").exists()
          for r in pd.read_csv(folder / "measurements.csv").itertuples() if r.status == "ok"}
    expected = {(c, r, v) for c, r, v in expected if (c, r) in ok and (c, v) in ok}
    assert expected <= pairs, (expected, pairs)
    timed = table.dropna(subset=["time_ratio"])
    assert len(timed) or not expected
    assert (timed["time_ratio_low"] <= timed["time_ratio"] + 1e-12).all()
    assert (timed["time_ratio"] <= timed["time_ratio_high"] + 1e-12).all()
    assert timed["saved_us_per_step"].to_numpy() == pytest.approx(
        (timed["trace_us_per_step"] * (1 - timed["time_ratio"])).to_numpy())
    step = table["step_us"].iloc[0]
    assert step >= table["covered_us"].iloc[0] > 0
    printed = out_text.splitlines()
    head = next(line for line in printed[printed.index("## The answer") + 1:] if line)
    assert head.startswith(("fusing these", "no variant is surely faster")), head
    assert "of the step is in ops no block covers" in head, head


def test_a_trace_without_shapes_gets_one_line_and_its_diagnosis(tmp_path, capsys):
    trace = profile_model(tmp_path / "plain.json", record_shapes=False)
    code, lines, frame = suggest(trace, tmp_path / "out", capsys)
    assert code == 0 and frame is None
    assert lines[-1].startswith("--suggest: this trace has no input shapes")
    assert "record_shapes=True" in lines[-1]
    assert any("findings" in line or "step" in line for line in lines[:-1])  # the diagnosis


def test_out_without_suggest_is_refused_before_the_trace_is_read(tmp_path, capsys):
    code = command.main([str(tmp_path / "absent.json"), "--out", str(tmp_path)])
    assert code == 2
    assert "--out and --scale are --suggest's" in capsys.readouterr().err


@pytest.mark.parametrize("name, expected", [
    ("h100_bert_small", {"linear T141-IN512-OUT512 bfloat16", "norm T141-D512-layer bfloat16",
                         "linear T141-IN512-OUT2048 bfloat16"}),
    ("h100_qwen1.5_0.5b", {"norm T8944-D1024-rms bfloat16", "linear T8944-IN1024-OUT2816 bfloat16",
                           "attention B16-H16-S559-D64 bfloat16"}),
])
def test_real_traces_map_their_gemms_norms_and_attention(name, expected, tmp_path, capsys):
    code, lines, frame = suggest(REAL / f"{name}.json.gz", tmp_path / "out", capsys)
    assert code == 0
    assert expected <= set(frame.loc[frame["mapped"], "group"])
    covered = next(line for line in lines if line.startswith("covered: "))
    share = float(covered.rsplit("(", 1)[1].rstrip("%)")) / 100
    assert share > {"h100_bert_small": 0.6, "h100_qwen1.5_0.5b": 0.35}[name], covered


def test_non_causal_attention_is_listed_with_the_reason(tmp_path, capsys):
    code, lines, frame = suggest(REAL / "h100_bert_small.json.gz", tmp_path / "out", capsys)
    if not torch.cuda.is_available():  # a GPU trace is replayed on a GPU only, in one line
        assert "replay: not replayed: the trace ran on cuda, this machine has no CUDA" in lines
    attention = frame[frame["block"] == "attention"].iloc[0]
    assert not attention["mapped"]
    assert attention["why"].startswith("not causal (is_causal=False)")
    assert any("not buildable" in line for line in lines)


def test_scale_divides_an_axis_the_work_is_linear_in_and_says_by_how_much(tmp_path, capsys):
    from suites.traces.suggest.scaling import scaled
    # Attention: the batch first, the rest of the factor on the heads; never S or D.
    assert scaled("attention", {"B": 16, "H": 16, "S": 559, "D": 64}, 64) == (
        {"B": 1, "H": 4, "S": 559, "D": 64}, 64.0)
    values, applied = scaled("linear", {"T": 8944, "IN": 1024, "OUT": 2816}, 64)
    assert values == {"T": 140, "IN": 1024, "OUT": 2816} and applied == pytest.approx(63.886, 1e-3)
    assert scaled("norm", {"T": 141, "D": 512, "norm": "layer"}, 1) == (
        {"T": 141, "D": 512, "norm": "layer"}, 1.0)
    code = command.main([str(REAL / "h100_bert_small.json.gz"), "--suggest", "--scale", "4",
                         "--out", str(tmp_path / "out")])
    assert code == 0
    text = (tmp_path / "out" / "experiment" / "suggested.yaml").read_text()
    assert "shapes scaled down 4x" in text and "trace_values" in text and "T: [36]" in text
    capsys.readouterr()
    assert command.main([str(REAL / "h100_bert_small.json.gz"), "--suggest", "--scale",
                         "0.5"]) == 2
    assert "--scale 0.5: a factor of 1 or more" in capsys.readouterr().err


def test_a_users_block_claims_its_own_calls_with_from_trace(tmp_path, capsys, monkeypatch):
    """The public block API's hook: an Op with `from_trace(call)` returns its params for a
    call it covers (here every aten::relu), and the suggestion maps those calls to it."""
    from kernels import registry
    from kernels.api import Formula, Op

    class ReluBlock(Op):
        name = "relu_block"
        params = ("T", "D")
        size_axis = "T"
        flops_formula = Formula("T * D")
        bytes_formula = Formula("2 * T * D * itemsize")

        def from_trace(self, call):
            dims = call.tensor_dims()
            if call.name != "aten::relu" or not dims:
                return None
            *lead, d = dims[0]
            return {"T": math.prod(lead), "D": d}

    monkeypatch.setitem(registry._OPS, "relu_block", ReluBlock())
    path = tmp_path / "relu.json"
    x = torch.randn(8, 16, 64)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                record_shapes=True) as prof:
        torch.relu(x @ torch.randn(64, 64))
    prof.export_chrome_trace(str(path))
    code, lines, frame = suggest(path, tmp_path / "out", capsys)
    assert code == 0
    row = frame[frame["block"] == "relu_block"].iloc[0]
    assert row["group"] == "relu_block T128-D64 float32" and row["mapped"]


def test_a_replay_past_the_free_memory_is_said_not_allocated(model_trace, tmp_path, capsys,
                                                             monkeypatch):
    from suites.traces.suggest import replay
    monkeypatch.setattr(replay, "available_memory", lambda device: (1024, "free (test)"))
    code, lines, frame = suggest(model_trace, tmp_path / "out", capsys)
    assert code == 0
    notes = frame.loc[frame["mapped"], "replay_note"]
    assert notes.str.startswith("not replayed: MemoryError: needs ~").all(), notes.tolist()
    assert notes.str.endswith("GiB free (test)").all()
