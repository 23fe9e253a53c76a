#!/usr/bin/env python3
"""What measuring adds to one module call inside a request: vxperf against the reference module.

    PYTHONPATH=build/python build-venv/bin/python bench/python/hook_overhead.py [--rounds 21]
        [--calls 2000] [--reference PATH/seed_perf.py] [--json OUT]

For each implementation a pipeline is instrumented with its own `instrument_pipeline`; inside one
of its requests, the pipeline calls its instrumented `transformer` component N times and, in
alternating blocks, a never-instrumented module of the same class N times. The added cost of a
call is the difference of the two per-call times; the figure is the median over the rounds (one
request each). The module is called as diffusers calls a transformer, with a keyword argument.
Host only (CPU tensors, no device). Both implementations run in the same process.

Then, vxperf alone, the same with a transformer of BLOCKS blocks (--blocks, default 8) whose
calls vxperf reads (a probe on each block: the rows and tokens it ran on): what a block call adds
is the difference between what a call of that transformer adds and what a call of the blockless
one adds, over the blocks.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

import torch  # noqa: E402


class Tower(torch.nn.Module):
    """A transformer-named component whose own work is as small as a module call gets."""

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(1))

    def forward(self, hidden_states):
        return hidden_states


class Block(torch.nn.Module):
    """A transformer block as vxperf finds one (it holds attention projections), as cheap as a
    module call gets."""

    def __init__(self):
        super().__init__()
        self.to_q, self.to_k, self.to_v = (torch.nn.Linear(8, 8) for _ in range(3))

    def forward(self, hidden_states):
        return hidden_states


class BlockTower(torch.nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(blocks))

    def forward(self, hidden_states):
        for block in self.blocks:
            hidden_states = block(hidden_states)
        return hidden_states


def make_pipeline_class(label, make=Tower):
    class Pipeline:
        def __init__(self):
            self.transformer = make()
            self.plain = make()  # never instrumented: not among the components

        @property
        def components(self):
            return {"transformer": self.transformer}

        def __call__(self, x, calls, blocks=4):
            """Per-call ns of the instrumented and the plain module, measured in one request."""
            timed = plain = 0
            clock = time.perf_counter_ns
            per_block = calls // blocks
            for _ in range(blocks):
                module = self.transformer
                start = clock()
                for _ in range(per_block):
                    module(hidden_states=x)
                timed += clock() - start
                module = self.plain
                start = clock()
                for _ in range(per_block):
                    module(hidden_states=x)
                plain += clock() - start
            n = per_block * blocks
            return timed / n, plain / n

    Pipeline.__name__ = f"{label}Pipeline"
    return Pipeline


def load_reference(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("seed_perf", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(pipe, rounds, calls):
    x = torch.zeros(1, 16, 8)
    pipe(x, 200)  # warm up
    added, timed_all, plain_all = [], [], []
    for _ in range(rounds):
        timed, plain = pipe(x, calls)
        added.append(timed - plain)
        timed_all.append(timed)
        plain_all.append(plain)
    return {"added_ns": statistics.median(added), "instrumented_ns": statistics.median(timed_all),
            "plain_ns": statistics.median(plain_all),
            "added_ns_min": min(added), "added_ns_max": max(added)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--reference", default=os.environ.get("VXPERF_REFERENCE") or os.path.join(
        REPO, "..", "shared", "reference", "seed_perf.py"))
    parser.add_argument("--blocks", type=int, default=8,
                        help="blocks of the transformer whose block calls vxperf reads")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    import vxperf

    implementations = [("vxperf", vxperf)]
    if os.path.exists(args.reference):
        implementations.append(("reference", load_reference(args.reference)))
    else:
        print(f"hook_overhead: no reference at {args.reference}; vxperf only", file=sys.stderr)

    # The per-request lines of both implementations would flood the terminal: silenced while
    # measuring (vxperf writes to the descriptor, the reference through logging).
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    results = {}
    try:
        for label, perf in implementations:
            pipe = perf.instrument_pipeline(make_pipeline_class(label)())
            results[label] = measure(pipe, args.rounds, args.calls)
        blocked = make_pipeline_class("Blocked", lambda: BlockTower(args.blocks))
        pipe = vxperf.instrument_pipeline(blocked())
        results["vxperf_blocks"] = measure(pipe, args.rounds, args.calls)
    finally:
        os.dup2(saved, 2)
        os.close(devnull)

    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, {args.rounds} requests x "
          f"{args.calls} calls per module")
    print(f"{'':10} {'added/call':>11} {'(min..max)':>18} {'instrumented':>13} {'plain':>8}")
    for label, r in results.items():
        print(f"{label:10} {r['added_ns'] / 1000:9.3f}us ({r['added_ns_min'] / 1000:6.3f}.."
              f"{r['added_ns_max'] / 1000:6.3f}us) {r['instrumented_ns'] / 1000:11.3f}us "
              f"{r['plain_ns'] / 1000:6.3f}us")
    per_block = (results["vxperf_blocks"]["added_ns"] - results["vxperf"]["added_ns"]) / args.blocks
    results["added_ns_per_block_call"] = per_block
    print(f"vxperf, a transformer of {args.blocks} blocks: "
          f"{results['vxperf_blocks']['added_ns'] / 1000:.3f}us added per call, "
          f"{per_block / 1000:.3f}us per block call read")
    if "reference" in results:
        ratio = results["vxperf"]["added_ns"] / results["reference"]["added_ns"]
        results["ratio"] = ratio
        print(f"vxperf adds {ratio:.2f}x what the reference adds per call (goal: at most 0.33x)")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)
    sys.stdout.flush()
    os._exit(0)  # skip both exit summaries


if __name__ == "__main__":
    main()
