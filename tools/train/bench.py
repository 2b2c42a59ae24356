#!/usr/bin/python3
"""bench.py: training speed (tokens/s) of geometries, on synthetic batches shaped like the data.

    /usr/bin/python3 tools/train/bench.py d256l8 d256l6 d384l6 d192l8 [--steps 8] [--threads N]

Every geometry runs full training steps (forward with CQ fake quantisation, reply-token loss,
backward, clipping, AdamW) on batches of --batch-tokens padded tokens: sequences of --prompt prompt
tokens and --reply reply tokens (220 + 20 by default). Tokens/s counts prompt + reply tokens
processed. The geometries take turns, one step each per round, so that a busy machine slows them
alike; the first round (allocation, codebooks) is not counted. Printed per geometry: the median and
the best step as tokens/s, and the median process CPU time per step (threads together). On a
shared machine the best step is the closest to the machine's own speed. --profile prints the top
operators of one step of each.

With --data, the geometries instead train side by side on the same real batches (warmup 30 steps,
cosine over --steps, the train.py defaults otherwise), taking turns as above, and every --eval-every
steps print their held-out reply loss and accuracy (--eval, first 128 examples) with the training
time each has used: learning per step and per second, compared on an equally busy machine.
Examples longer than the smallest max_seq_len of the geometries are dropped from both (as train.py
drops them), with a line on stderr saying how many.

    /usr/bin/python3 tools/train/bench.py d256l8 d256l6 d384l6 d192l8 --data build/train/data \
        --tokenizer T.model --eval build/train/data/A.jsonl --steps 200 --eval-every 40
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as train.py: spinning threads stall shared machines

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cq  # noqa: E402
import model as M  # noqa: E402
import train  # noqa: E402


def setup(geometry: str, args):
    """A model, its optimiser and one synthetic batch; returns (step function, tokens per step, info)."""
    g = M.geometry_from(geometry)
    net = M.Needle2(g, cq.BitsMap.parse(args.bits_map), seed=1)
    opt = train.make_optimizer(net, argparse.Namespace(lr=1e-3, weight_decay=0.1))
    seq = args.prompt + args.reply - 1
    count = max(1, args.batch_tokens // seq)
    gen = torch.Generator().manual_seed(0)
    examples = [(np.concatenate([[2], torch.randint(14, g.vocab, (args.prompt - 1,), generator=gen).numpy()]),
                 torch.randint(14, g.vocab, (args.reply,), generator=gen).numpy()) for _ in range(count)]
    batch = train.make_batch(examples, list(range(count)), "cpu")

    def step():
        loss, _ = train.reply_loss(net, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()

    info = {"geometry": geometry, "parameters": M.count_parameters(net), "batch": f"{count} x {seq}"}
    return step, batch["n_tokens"], info


def run(args) -> list:
    runs = [setup(g, args) for g in args.geometries]
    for step, _, info in runs:
        step()
        if args.profile:
            from torch.profiler import profile, ProfilerActivity
            with profile(activities=[ProfilerActivity.CPU]) as p:
                step()
            print(info["geometry"])
            print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))
    walls = [[] for _ in runs]
    cpus = [[] for _ in runs]
    for _ in range(args.steps):
        for k, (step, _, _) in enumerate(runs):
            w, c = time.perf_counter(), time.process_time()
            step()
            walls[k].append(time.perf_counter() - w)
            cpus[k].append(time.process_time() - c)
    results = []
    for (_, tokens, info), wall, cpu in zip(runs, walls, cpus):
        results.append(dict(info, median_tok_s=round(tokens / statistics.median(wall)),
                            best_tok_s=round(tokens / min(wall)),
                            median_step_s=round(statistics.median(wall), 3),
                            cpu_s_per_step=round(statistics.median(cpu), 3)))
    return results


def compare(args) -> None:
    """Train the geometries side by side on real batches; print eval results as JSON lines."""
    import sentencepiece as spm
    cache = os.path.join(os.path.abspath(args.data), "cache") if os.path.isdir(args.data) else None
    data = args.data if args.data.endswith(".jsonl") else os.path.join(args.data, "train.jsonl")
    vocab = spm.SentencePieceProcessor(model_file=args.tokenizer).get_piece_size() if args.tokenizer else None
    # Every geometry trains on the same batches, so the shortest max_seq_len decides which examples
    # fit (train.py drops the longer ones the same way).
    longest = min(M.geometry_from(name, vocab).max_seq_len for name in args.geometries)
    fits = lambda e: train.sequence_length(e) <= longest  # noqa: E731
    loaded = train.load_examples(data, args.tokenizer, cache)
    examples = [e for e in loaded if fits(e)]
    held_loaded = train.load_examples(args.eval, args.tokenizer, cache)
    held_fit = [e for e in held_loaded if fits(e)]
    held_out = held_fit[:128]
    dropped = (len(loaded) - len(examples), len(held_loaded) - len(held_fit))
    if any(dropped):
        print(f"dropped {dropped[0]} training and {dropped[1]} held-out examples longer than max_seq_len {longest}",
              file=sys.stderr, flush=True)
    batches = train.epoch_batches(np.array([train.sequence_length(e) for e in examples]),
                                  args.batch_tokens, 1, 0)
    settings = argparse.Namespace(**train.RUN_SETTINGS)
    runs = []
    for name in args.geometries:
        net = M.Needle2(M.geometry_from(name, vocab), cq.BitsMap.parse(args.bits_map), seed=1)
        runs.append({"geometry": name, "net": net, "opt": train.make_optimizer(net, settings),
                     "wall": 0.0, "cpu": 0.0})
    for step in range(args.steps):
        batch = train.make_batch(examples, batches[step % len(batches)], "cpu")
        lr = train.learning_rate(step, args.steps, settings.lr, settings.min_lr, 30)
        for r in runs:
            w, c = time.perf_counter(), time.process_time()
            for group in r["opt"].param_groups:
                group["lr"] = lr
            loss, _ = train.reply_loss(r["net"], batch)
            r["opt"].zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(r["net"].parameters(), settings.clip)
            r["opt"].step()
            r["wall"] += time.perf_counter() - w
            r["cpu"] += time.process_time() - c
            r["loss"] = loss.item()
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            for r in runs:
                eval_loss, eval_acc, eval_decision = train.evaluate(r["net"], held_out, args.batch_tokens, "cpu")
                print(json.dumps({"step": step + 1, "geometry": r["geometry"], "train_loss": round(r["loss"], 4),
                                  "eval_loss": round(eval_loss, 4), "eval_accuracy": round(eval_acc, 4),
                                  "eval_decision": round(eval_decision, 4),
                                  "train_s": round(r["wall"]), "cpu_s": round(r["cpu"])}), flush=True)


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
    ap.add_argument("--data", help="train side by side on this data (train.py's --data) instead")
    ap.add_argument("--tokenizer", help="with --data: the SentencePiece model")
    ap.add_argument("--eval", help="with --data: held-out examples (JSONL)")
    ap.add_argument("--eval-every", type=int, default=40)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)
    if args.data:
        if not args.eval:
            ap.error("--data needs --eval")
        compare(args)
        return 0
    for result in run(args):
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
