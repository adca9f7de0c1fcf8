"""The float64 causal attention reference, a block of query rows at a time.

The whole (B, H, S, S) float64 score tensor at the CUDA grid's largest attention case (B4 H32
S8192) is 68.7 GB, and masking and softmax keep two or three such tensors alive: every variant
of that case failed on its reference. Here the scores of a block of query rows are computed at a
time, against the keys up to the block's last row (the later keys are masked anyway), so the
score chunk never exceeds SCORES_BYTES, whatever the shape.

Memory bound: about 3 x SCORES_BYTES for the chunk and softmax's temporaries (768 MiB), plus q,
k, v and the output in float64, 4 x B·H·S·D x 8 bytes (4.3 GB at B4 H32 S8192 D128): under 6 GB
for every shape of the CUDA grids.
"""
from __future__ import annotations

import math

import torch

SCORES_BYTES = 256 * 2**20


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     scores_bytes: int = SCORES_BYTES) -> torch.Tensor:
    """softmax(q k^T / sqrt(D), keys after the query masked) v for (B, H, S, D) tensors, in
    their dtype (float64 for a reference)."""
    B, H, S, D = q.shape
    rows = max(1, scores_bytes // max(1, B * H * S * q.element_size()))
    out = torch.empty(B, H, S, v.shape[-1], dtype=q.dtype, device=q.device)
    keys = torch.arange(S, device=q.device)
    for start in range(0, S, rows):
        stop = min(S, start + rows)
        scores = q[:, :, start:stop] @ k[:, :, :stop].transpose(-2, -1) / math.sqrt(D)
        future = keys[:stop][None, :] > torch.arange(start, stop, device=q.device)[:, None]
        scores.masked_fill_(future, float("-inf"))
        out[:, :, start:stop] = torch.softmax(scores, dim=-1) @ v[:, :, :stop]
    return out
