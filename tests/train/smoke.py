#!/usr/bin/python3
"""Smoke test of the whole training pipeline (docs/training.md), about a minute on 2 cores.

    /usr/bin/python3 tests/train/smoke.py --bin BUILD/bin --work DIR

1. A small fixed dataset (tokenised, made here from a seed): the reply copies the three tokens after
   the prompt's first marker token, then EOS.
2. train.py trains the tiny geometry for a few dozen steps; the reply loss must fall well below its
   start.
3. export.py writes safetensors; needle-pack packs them; needle-info loads the archive.
4. parity.py: the trainer's forward equals needle-ref (--kv f32 --act f32) at every position, within
   1e-3 relative, on two examples and on one sequence longer than kv_window (without and with
   --sink).
Exits non-zero with a message on the first failure.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = os.path.join(ROOT, "tools", "train")
sys.path.insert(0, TRAIN)

MARKER = 13  # a token id the prompts use as the "look here" sign


def make_dataset(path: str, count: int, seed: int) -> list:
    """Tokenised examples: prompt [2, noise..., MARKER, a, b, c, noise...], reply [a, b, c, 1]."""
    rng = np.random.default_rng(seed)
    examples = []
    with open(path, "w") as f:
        for _ in range(count):
            before = rng.integers(14, 512, int(rng.integers(2, 20))).tolist()
            key = rng.integers(14, 64, 3).tolist()
            after = rng.integers(14, 512, int(rng.integers(2, 20))).tolist()
            prompt = [2] + before + [MARKER] + key + after
            target = key + [1]
            f.write(json.dumps({"prompt_ids": prompt, "target_ids": target}) + "\n")
            examples.append(prompt + target)
    return examples


def fail(message: str) -> None:
    print(f"smoke: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="directory with needle-pack, needle-info and needle-ref")
    ap.add_argument("--work", required=True, help="scratch directory (created; reused runs start over)")
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    run_dir = os.path.join(work, "run")
    if os.path.exists(os.path.join(run_dir, "checkpoint.pt")):
        os.remove(os.path.join(run_dir, "checkpoint.pt"))

    import torch
    import export
    import parity
    import train

    # 1-2. Train.
    sequences = make_dataset(os.path.join(work, "train.jsonl"), 400, seed=11)
    result = train.run(train.parse_args([
        "--data", os.path.join(work, "train.jsonl"), "--geometry", "tiny", "--out", run_dir,
        "--steps", "30", "--batch-tokens", "1024", "--lr", "3e-3", "--min-lr", "1e-3", "--warmup", "5",
        "--log-every", "5", "--threads", "1", "--quiet"]))
    losses = [float(r["loss"]) for r in result["rows"]]
    print(f"smoke: reply loss by 5 steps: {' '.join(f'{x:.3f}' for x in losses)}")
    if not (losses[-1] < 0.75 * losses[0]):
        fail(f"the loss did not go down enough: {losses[0]:.3f} -> {losses[-1]:.3f}")
    for name in ("checkpoint.pt", "log.csv", "loss.png"):
        if not os.path.exists(os.path.join(run_dir, name)):
            fail(f"the run wrote no {name}")

    # 3. Export, pack, inspect.
    checkpoint = os.path.join(run_dir, "checkpoint.pt")
    net = export.load_model(checkpoint)
    bits_map = torch.load(checkpoint, map_location="cpu")["bits_map"]
    archive = os.path.join(work, "smoke.cact")
    parity.pack(args.bin, net, bits_map, archive)
    info = subprocess.run([parity.tool(args.bin, "needle-info"), archive], capture_output=True, text=True)
    if info.returncode != 0:
        fail(f"needle-info refused {archive}: {info.stderr.strip()}")
    print(f"smoke: needle-info: {info.stdout.splitlines()[0] if info.stdout else '(no output)'}")

    # 4. Parity at every position.
    long = [t for s in sequences for t in s][:net.g.kv_window + 24]
    cases = [("example 0", sequences[0], 0), ("example 1", sequences[1], 0),
             ("long", long, 0), ("long, sink 4", long, 4)]
    results = parity.check(args.bin, net, archive, cases)
    for label, length, sink, rel, pos in results:
        print(f"smoke: parity {label}: {length} tokens, worst maxRel {rel:.2e} (position {pos})")
    worst = max(r[3] for r in results)
    if not worst <= parity.TOLERANCE:
        fail(f"parity: worst maxRel {worst:.3e} > {parity.TOLERANCE}")
    print(f"smoke: OK (worst parity maxRel {worst:.2e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
