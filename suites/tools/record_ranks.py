"""Record a real multi-rank trace on this machine: N processes (torch.distributed, gloo) each run
a small training step under torch.profiler and write their own trace, rank<r>.json.gz, into one
folder, as a multi-GPU job's ranks would (`python -m suites.analyze FOLDER` reads them together).

    python -m suites.tools.record_ranks OUT [--ranks 2] [--slow-rank 1 --slow-ms 40]

Each step: forward and backward of a 3-layer MLP on the rank's own batch, one all-reduce of the
flattened gradients (gloo, on the CPU), the optimizer step. `--slow-rank` gives one rank extra
work of about `--slow-ms` before its all-reduce, in a range named `extra_work` (matmuls: CPU
compute), so the others wait that long in every all-reduce: the skew is known, and the slow rank's
own trace says how long its extra work took.
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from pathlib import Path

WIDTH, BATCH, STEPS = 256, 64, 4  # profiled: wait 1, warmup 1, active STEPS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _extra_work(ms: float) -> None:
    """About `ms` of CPU compute, as matmuls (timed here, so a busy machine stretches nothing)."""
    import torch
    a = torch.randn(384, 384)
    end = time.perf_counter() + ms / 1e3
    with torch.profiler.record_function("extra_work"):
        while time.perf_counter() < end:
            a = torch.tanh(a @ a)


def _rank(rank: int, world: int, port: int, out: str, slow_rank: int, slow_ms: float) -> None:
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.GELU(),
                                torch.nn.Linear(WIDTH, WIDTH), torch.nn.GELU(),
                                torch.nn.Linear(WIDTH, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(rank)
    x, y = torch.randn(BATCH, WIDTH, generator=gen), torch.randn(BATCH, 1, generator=gen)
    path = Path(out) / f"rank{rank}.json.gz"
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=STEPS)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=schedule, record_shapes=True,
                                on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for _ in range(STEPS + 2):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            if rank == slow_rank:
                _extra_work(slow_ms)
            grads = torch.cat([p.grad.flatten() for p in model.parameters()])
            dist.all_reduce(grads)
            offset = 0
            for p in model.parameters():
                p.grad.copy_(grads[offset:offset + p.numel()].view_as(p) / world)
                offset += p.numel()
            opt.step()
            prof.step()
    dist.barrier()
    dist.destroy_process_group()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m suites.tools.record_ranks",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-ms", type=float, default=40.0)
    args = parser.parse_args(argv)
    if not 2 <= args.ranks <= 8:
        parser.error(f"--ranks {args.ranks}: 2 to 8 processes")
    if args.slow_rank >= args.ranks:
        parser.error(f"--slow-rank {args.slow_rank}: the ranks are 0 to {args.ranks - 1}")
    args.out.mkdir(parents=True, exist_ok=True)
    import torch.multiprocessing as mp
    mp.spawn(_rank, args=(args.ranks, _free_port(), str(args.out), args.slow_rank, args.slow_ms),
             nprocs=args.ranks, join=True)
    print(f"wrote {', '.join(sorted(p.name for p in args.out.glob('rank*.json.gz')))} in "
          f"{args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
