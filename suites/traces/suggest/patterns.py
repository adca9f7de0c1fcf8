"""Which of a trace's top-level op calls a fusebench block covers, and at what shape.

Read per thread, in the order the model called them (op_calls.py's top-level calls), longest
pattern first at each call, each call taken once:

- `block` (pre-norm decoder): rms norm, attention (with its QKV and output projections), a
  residual add, rms norm, GeGLU MLP, a residual add, all at one (B, S, D);
- `mlp` (GeGLU): two projections of one x (T, D) to (T, I), gelu(tanh) of one times the other,
  a projection back to D: `aten::linear` or `aten::matmul`/`aten::mm` for each;
- `attention`: any `aten::scaled_dot_product_attention` (B, H, S, D from q; causal from its
  `is_causal` flag), or the naive form, a matmul of q and k^T, optional scaling and masking, a
  softmax and a matmul with v;
- `norm`: `aten::layer_norm` (layer), `aten::rms_norm`, or the decomposed RMS norm (pow, mean,
  add, rsqrt, mul, and the weight's mul), T the product of the leading dims;
- `linear`: `aten::linear` with a bias (T, IN, OUT); `matmul_add`: `aten::addmm` outside a
  linear, or `aten::mm`/`aten::matmul` whose output an `aten::add` adds a vector to next;
- a user's block: an Op that defines `from_trace(call)` (kernels/api.py) claims single calls.

A call no pattern takes is left unmapped with its reason ("aten::gelu alone: no block covers
it", "attention without is_causal: the attention block is causal"). A pattern that matched but
cannot be built (a dtype fusebench does not sweep) is a Match with `problem` set.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from kernels.names import DTYPE_NAMES
from suites.traces.suggest.op_calls import OpCall

GEMMS = ("aten::linear", "aten::matmul", "aten::mm")
SDPA = "aten::scaled_dot_product_attention"
SOFTMAX = ("aten::softmax", "aten::_softmax", "aten::safe_softmax", "aten::_safe_softmax")
# What eager attention does to the scores between q @ k^T and the softmax: scale them, mask them
# (in place or not, by a fill or an additive mask).
SCALE_AND_MASK = ("aten::mul", "aten::mul_", "aten::div", "aten::div_", "aten::masked_fill",
                  "aten::masked_fill_", "aten::add", "aten::add_", "aten::where")
RMS_STEPS = ("aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul")
# Ops that move no data worth a kernel of their own: views, between the parts of a pattern.
VIEWS = frozenset({"aten::view", "aten::reshape", "aten::transpose", "aten::permute",
                   "aten::t", "aten::contiguous", "aten::expand", "aten::unsqueeze",
                   "aten::squeeze", "aten::split", "aten::chunk", "aten::slice", "aten::select",
                   "aten::unbind", "aten::to", "aten::_to_copy", "aten::clone",
                   "aten::detach", "aten::dropout", "aten::as_strided", "aten::flatten",
                   "aten::_unsafe_view", "aten::alias", "aten::lift_fresh",
                   "aten::type_as", "aten::empty", "aten::empty_like", "aten::zeros",
                   "aten::ones", "aten::arange", "aten::full", "aten::ones_like",
                   "aten::zeros_like", "aten::masked_fill", "aten::masked_fill_",
                   "aten::triu", "aten::tril", "aten::div", "aten::mul_", "aten::div_"})


@dataclass
class Match:
    suite: str
    values: dict            # the block's params
    dtype: str
    calls: list[OpCall]     # the top-level calls it covers, in order
    notes: list[str] = field(default_factory=list)
    problem: str = ""       # why the case cannot be built ("" where it can)
    replay: str = ""        # the block's variant that runs what the trace ran (suites/suggest/)

    @property
    def device_us(self) -> float:
        return sum(c.device_us for c in self.calls)

    @property
    def host_us(self) -> float:
        return sum(c.host_us for c in self.calls)


def _prod(dims) -> int:
    return math.prod(dims) if dims else 1


def _dtype_problem(dtype: str) -> str:
    if dtype not in DTYPE_NAMES:
        return f"dtype {dtype or 'unknown'}: fusebench sweeps {', '.join(DTYPE_NAMES)}"
    return ""


def _linear_shape(call: OpCall) -> tuple[int, int, int, bool] | None:
    """(T, IN, OUT, has_bias) of a linear-like call: aten::linear(x, w(OUT, IN)[, b]), or a
    matmul/mm of x (..., IN) by w (IN, OUT)."""
    dims = call.tensor_dims()
    if len(dims) < 2 or len(dims[0]) < 2 or len(dims[1]) != 2:
        return None
    x, w = dims[0], dims[1]
    if call.name == "aten::linear":
        if w[1] != x[-1]:
            return None
        return _prod(x[:-1]), x[-1], w[0], len(dims) > 2 and len(dims[2]) == 1
    if w[0] != x[-1]:
        return None
    return _prod(x[:-1]), x[-1], w[1], False


def _norm(call: OpCall, norm: str) -> Match | None:
    """One norm call (layer_norm, rms_norm, a library's): the norm block at (T, D) of its
    input, replayed by the block's functional form."""
    x = call.tensor_dims()[0] if call.tensor_dims() else ()
    if not x:
        return None
    return Match("norm", {"T": _prod(x[:-1]), "D": x[-1], "norm": norm}, call.dtype(), [call],
                 replay="functional")


def _with_problem(match: Match) -> Match:
    match.problem = match.problem or _dtype_problem(match.dtype)
    for call in match.calls:
        for i, shape in enumerate(call.tensor_dims()):
            if not call.contiguous(i) and call.name not in ("aten::linear",):
                note = (f"{call.name}'s input {i} is a strided view in the trace "
                        f"{call.strides[i] if i < len(call.strides) else ''}; the case "
                        "builds it contiguous")
                if note not in match.notes:
                    match.notes.append(note)
                break
    return match


class Matcher:
    """The patterns over one thread's top-level calls (see the module's docstring)."""

    def __init__(self, calls: list[OpCall], own_blocks=()):
        self.calls = calls
        self.used = [False] * len(calls)
        self.index = {id(c): i for i, c in enumerate(calls)}
        self.own = own_blocks  # Ops with from_trace

    # --- walking -------------------------------------------------------------------------

    def _next(self, i: int, names, skip_views: bool = True, limit: int = 12,
              passing=()) -> int | None:
        """The index of the next unused call after i named one of `names`, passing only views
        and the calls named in `passing` (and at most `limit` calls)."""
        j, seen = i + 1, 0
        while j < len(self.calls) and seen <= limit:
            call = self.calls[j]
            if not self.used[j]:
                if call.name in names:
                    return j
                if not ((skip_views and call.name in VIEWS) or call.name in passing):
                    return None
            j += 1
            seen += 1
        return None

    def run(self) -> list[Match]:
        found = []
        for i in range(len(self.calls)):
            if self.used[i]:
                continue
            for pattern in (self.mlp, self.naive_attention, self.rms_decomposed,
                            self.matmul_then_add, self.single):
                match = pattern(i)
                if match is not None:
                    for call in match.calls:
                        self.used[self.index[id(call)]] = True
                    found.append(_with_problem(match))
                    break
        return found

    # --- the patterns ----------------------------------------------------------------------

    def single(self, i: int) -> Match | None:
        call = self.calls[i]
        for op in self.own:
            values = op.from_trace(call)
            if values:
                return Match(op.name, dict(values), call.dtype(), [call], replay=op.baseline)
        if call.name == SDPA:
            q = call.tensor_dims()[0] if call.tensor_dims() else ()
            if len(q) != 4:
                return None
            causal = call.flag(5) == "True"
            match = Match("attention", {"B": q[0], "H": q[1], "S": q[2], "D": q[3]},
                          call.dtype(), [call], replay="sdpa")
            if not causal:
                match.problem = ("not causal (is_causal=False): fusebench's attention block "
                                 "is causal")
                if len(call.tensor_dims()) > 3:
                    match.problem += " and takes no mask"
            return match
        if call.name == "aten::layer_norm":
            return _norm(call, "layer")
        if "::" in call.name and call.name.endswith("rms_norm") and \
                not call.name.startswith("aten::"):
            # A library's own RMS norm op (vLLM's _C::rms_norm, _C::fused_add_rms_norm: the
            # residual add fused in): the norm block at its (T, D).
            match = _norm(call, "rms")
            if match is not None:
                match.notes.append(f"{call.name}: a library's fused kernel"
                                   + (" with the residual add" if "add" in call.name else ""))
            return match
        if call.name == "aten::rms_norm":
            return _norm(call, "rms")
        if call.name == "aten::linear":
            shape = _linear_shape(call)
            if shape is None:
                return None
            T, IN, OUT, bias = shape
            match = Match("linear", {"T": T, "IN": IN, "OUT": OUT}, call.dtype(), [call],
                          replay="eager")
            if not bias:
                match.notes.append("calls without a bias in the trace (the linear block adds "
                                   "one)")
            return match
        if call.name == "aten::addmm":
            dims = call.tensor_dims()
            if len(dims) == 3 and len(dims[1]) == 2 and len(dims[2]) == 2:
                (M, K), (_, N) = dims[1], dims[2]
                return Match("matmul_add", {"M": M, "N": N, "K": K}, call.dtype(1), [call],
                             replay="addmm")
        return None

    def matmul_then_add(self, i: int) -> Match | None:
        """x @ w, then + a bias vector: the series' torch.add(torch.matmul(x, w), b)."""
        call = self.calls[i]
        if call.name not in ("aten::matmul", "aten::mm"):
            return None
        dims = call.tensor_dims()
        if len(dims) != 2 or len(dims[0]) != 2 or len(dims[1]) != 2:
            return None
        j = self._next(i, ("aten::add",), limit=2)
        if j is None:
            return None
        add = self.calls[j].tensor_dims()
        (M, K), (_, N) = dims
        if len(add) == 2 and (M, N) in (add[0], add[1]) and (N,) in (add[0], add[1]):
            return Match("matmul_add", {"M": M, "N": N, "K": K}, call.dtype(),
                         [call, self.calls[j]], replay="eager")
        return None

    def _following(self, i: int, n: int) -> list[int]:
        """The indices of the next n unused calls after i that are not views."""
        out, j = [], i + 1
        while j < len(self.calls) and len(out) < n:
            if not self.used[j] and self.calls[j].name not in VIEWS:
                out.append(j)
            j += 1
        return out

    def mlp(self, i: int) -> Match | None:
        """gate = x Wg^T and up = x Wu^T (either order, gelu(tanh) of the gate before or after
        the up projection), gelu(gate) * up, then the down projection back to D."""
        first = self.calls[i]
        if first.name not in GEMMS:
            return None
        a = _linear_shape(first)
        if a is None:
            return None
        T, D, I, _ = a
        after = self._following(i, 4)
        if len(after) < 4:
            return None
        middle, down_at = after[:3], after[3]
        names = sorted(self.calls[j].name for j in middle)
        gemms = [j for j in middle if self.calls[j].name in GEMMS]
        if len(gemms) != 1 or "aten::gelu" not in names or "aten::mul" not in names:
            return None
        up = _linear_shape(self.calls[gemms[0]])
        down = _linear_shape(self.calls[down_at]) if self.calls[down_at].name in GEMMS else None
        if up is None or up[:3] != a[:3] or down is None or down[:3] != (T, I, D):
            return None
        gelu = next(self.calls[j] for j in middle if self.calls[j].name == "aten::gelu")
        covered = [first] + [self.calls[j] for j in middle] + [self.calls[down_at]]
        match = Match("mlp", {"T": T, "D": D, "I": I}, first.dtype(), covered, replay="eager")
        if gelu.flag(1) not in ("tanh", ""):
            match.notes.append(f"gelu approximate={gelu.flag(1)!r} in the trace; the block's "
                               "is tanh")
        return match

    def naive_attention(self, i: int) -> Match | None:
        """scores = q @ k^T (a matmul or bmm of 4-d or 3-d operands), maybe scaled and masked,
        softmax, then @ v."""
        call = self.calls[i]
        if call.name not in ("aten::matmul", "aten::bmm"):
            return None
        dims = call.tensor_dims()
        if len(dims) != 2 or len(dims[0]) not in (3, 4) or len(dims[0]) != len(dims[1]):
            return None
        q, kt = dims
        if q[-1] != kt[-2] or q[-2] != kt[-1]:
            return None
        j = self._next(i, SOFTMAX, limit=6, passing=SCALE_AND_MASK)
        if j is None:
            return None
        k = self._next(j, ("aten::matmul", "aten::bmm"), limit=4)
        if k is None:
            return None
        if len(q) == 4:
            B, H, S, D = q
        else:
            B, H, (S, D) = 1, q[0], q[1:]
        covered = [c for c in self.calls[i:k + 1] if not self.used[self.index[id(c)]]]
        return Match("attention", {"B": B, "H": H, "S": S, "D": D}, call.dtype(), covered,
                     replay="naive",
                     notes=["naive attention (matmul, softmax, matmul); causal assumed when a "
                            "mask is applied" if any("mask" in c.name for c in covered) else
                            "naive attention without a mask in the trace; the block is causal"])

    def rms_decomposed(self, i: int) -> Match | None:
        """x.pow(2).mean(-1, keepdim) + eps, rsqrt, x * that, weight * it (Llama/Qwen's
        RMSNorm written in torch ops)."""
        call = self.calls[i]
        if call.name != "aten::pow":
            return None
        at, covered = i, [call]
        for name in RMS_STEPS[1:]:
            nxt = self._next(at, (name,), limit=3)
            if nxt is None:
                return None
            covered.append(self.calls[nxt])
            at = nxt
        weight = self._next(at, ("aten::mul",), limit=3)
        if weight is not None:
            covered.append(self.calls[weight])
        x = call.tensor_dims()[0] if call.tensor_dims() else ()
        if not x:
            return None
        dtype, note = call.dtype(), "RMS norm written in torch ops (pow, mean, add, rsqrt, mul)"
        cast = self._cast_before(i, x)
        if cast is not None:  # x.to(float32) first (Llama, Qwen): the norm's dtype is x's
            covered.insert(0, cast)
            dtype = cast.dtype()
            note += f", computed in {call.dtype()} from {dtype} input"
        return Match("norm", {"T": _prod(x[:-1]), "D": x[-1], "norm": "rms"}, dtype, covered,
                     notes=[note], replay="eager")

    def _cast_before(self, i: int, shape: tuple) -> OpCall | None:
        """The unused aten::to / _to_copy of the same shape just before call i, if any."""
        j = i - 1
        while j >= 0 and i - j <= 3:
            call = self.calls[j]
            if not self.used[j] and call.name in ("aten::to", "aten::_to_copy"):
                dims = call.tensor_dims()
                return call if dims and dims[0] == shape else None
            j -= 1
        return None


def match_thread(calls: list[OpCall], own_blocks=()) -> tuple[list[Match], list[OpCall]]:
    """(matches, the calls none took) of one thread's top-level calls."""
    matcher = Matcher(calls, own_blocks)
    found = matcher.run()
    return found, [c for c, used in zip(calls, matcher.used) if not used]
