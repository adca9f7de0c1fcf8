"""Does fusebench's timing agree with an independent timer?

    python -m suites.benchmarks.timer_agreement [--sizes 64 1024] [--rounds 3]

For eager matmul+add in fp32, compares the harness's median (one sample per call) with
torch.utils.benchmark.Timer's median (blocked_autorange, blocks of calls) at the same thread
count, alternating the two timers in rounds so machine noise hits both alike. Prints the ratio
per round and the median ratio.
"""
from __future__ import annotations

import argparse
import statistics

import torch
import torch.utils.benchmark as tbench

from kernels import registry
from kernels.base import Case
from suites.harness import timing
from suites.harness.timing import TimingSpec


def one_round(call, spec: TimingSpec, threads: int, budget_s: float) -> tuple[float, float]:
    ours = timing.summarize(timing.sample_calls(call, "cpu", spec, spec.warmup_calls))["median_us"]
    timer = tbench.Timer(stmt="call()", globals={"call": call}, num_threads=threads)
    theirs = timer.blocked_autorange(min_run_time=budget_s).median * 1e6
    return ours, theirs


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 1024])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", type=float, default=1.0, help="seconds per timer per round")
    args = parser.parse_args(argv)
    threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    spec = TimingSpec("agreement", args.budget, 10, 100_000, 3, 3, False, threads)
    op = registry.get_op("matmul_add")
    eager = registry.get_variant("matmul_add", "eager")
    print(f"threads={threads}  torch {torch.__version__}")
    for n in args.sizes:
        case = Case.make("matmul_add", {"M": n, "N": n, "K": n}, "float32", "cpu")
        call = eager.prepare(case, op.make_inputs(case, torch.Generator().manual_seed(0)))
        ratios = []
        for r in range(args.rounds):
            ours, theirs = one_round(call, spec, threads, args.budget)
            ratios.append(ours / theirs)
            print(f"  n={n:<5} round {r}: fusebench {ours:10.2f} us  torch.utils.benchmark "
                  f"{theirs:10.2f} us  ratio {ours / theirs:.3f}")
        print(f"n={n}: median ratio fusebench / torch.utils.benchmark = {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
