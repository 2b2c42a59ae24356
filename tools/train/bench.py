#!/usr/bin/python3
"""bench.py: training speed (tokens/s) of geometries, on synthetic batches shaped like the data.

    /usr/bin/python3 tools/train/bench.py d256l8 d256l6 d384l6 d192l8 [--steps 8] [--threads N]

Each geometry runs full training steps (forward with CQ fake quantisation, reply-token loss,
backward, clipping, AdamW) on batches of --batch-tokens padded tokens: sequences of --prompt prompt
tokens and --reply reply tokens (220 + 20 by default). Tokens/s counts prompt + reply tokens
processed. The first step (allocation, codebooks) is not counted; the median and the best of the
rest are printed, with the process CPU time per step (on a shared machine the best step is the
closest to the machine's real speed). --profile prints the top operators of one step.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as train.py: spinning threads stall shared machines

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cq  # noqa: E402
import model as M  # noqa: E402
import train  # noqa: E402


def bench(geometry: str, args) -> dict:
    g = M.geometry_from(geometry)
    net = M.Needle2(g, cq.BitsMap.parse(args.bits_map), seed=1)
    opt = train.make_optimizer(net, argparse.Namespace(lr=1e-3, weight_decay=0.1))
    seq = args.prompt + args.reply - 1
    count = max(1, args.batch_tokens // seq)
    gen = torch.Generator().manual_seed(0)
    import numpy as np
    examples = [(np.concatenate([[2], torch.randint(14, g.vocab, (args.prompt - 1,), generator=gen).numpy()]),
                 torch.randint(14, g.vocab, (args.reply,), generator=gen).numpy()) for _ in range(count)]
    batch = train.make_batch(examples, list(range(count)), "cpu")

    def step():
        loss, _ = train.reply_loss(net, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()

    step()
    if args.profile:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CPU]) as p:
            step()
        print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))
    walls, cpus = [], []
    for _ in range(args.steps):
        w, c = time.perf_counter(), time.process_time()
        step()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    tokens = batch["n_tokens"]
    return {"geometry": geometry, "parameters": M.count_parameters(net), "batch": f"{count} x {seq}",
            "median_tok_s": round(tokens / statistics.median(walls)),
            "best_tok_s": round(tokens / min(walls)),
            "median_step_s": round(statistics.median(walls), 3),
            "cpu_s_per_step": round(statistics.median(cpus), 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("geometries", nargs="+")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--batch-tokens", type=int, default=4096)
    ap.add_argument("--prompt", type=int, default=220)
    ap.add_argument("--reply", type=int, default=20)
    ap.add_argument("--bits-map", default="embedding=4,mhc=4,default=2")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)
    for geometry in args.geometries:
        print(json.dumps(bench(geometry, args)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
