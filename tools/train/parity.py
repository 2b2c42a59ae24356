#!/usr/bin/python3
"""parity.py: the trainer's forward against needle-ref on the packed archive, at every position.

Packs a checkpoint (export.py, then needle-pack --safetensors), runs
`needle-ref --archive X --ids "..." --kv f32 --act f32 [--sink N] --logits-out F` on a few token
sequences, and compares every row with the trainer's forward on the same weights (CQ decided in
f64 exactly as needle-pack decides, FP16 tensors rounded): maxRel per row = max|a - ref| / max|ref|
(docs/numerics.md). Exits 1 when the worst row exceeds the tolerance (1e-3).

    /usr/bin/python3 tools/train/parity.py --checkpoint RUN/checkpoint.pt --bin build/bin \
        --data build/train/data/A.jsonl --tokenizer T.model [--count 3] [--long] [--sink 4]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402
import model as M  # noqa: E402

TOLERANCE = 1e-3


def tool(bin_dir: str, name: str) -> str:
    path = os.path.join(bin_dir, name)
    if not os.access(path, os.X_OK):
        raise SystemExit(f"{path} is missing: build it (cmake --build BUILD --target {name})")
    return path


def pack(bin_dir: str, net: M.Needle2, bits_map: str, archive: str, spm: str | None = None) -> None:
    """export.py's safetensors next to `archive`, then needle-pack."""
    weights = os.path.splitext(archive)[0] + ".safetensors"
    export.export(net, weights)
    cmd = [tool(bin_dir, "needle-pack"), "--safetensors", weights, "--bits-map", bits_map, "-o", archive]
    if spm:
        cmd[-2:-2] = ["--spm", spm]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def reference_logits(bin_dir: str, archive: str, ids: list, vocab: int, sink: int = 0) -> np.ndarray:
    """needle-ref's exact oracle (--kv f32 --act f32): one row of logits per position."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "logits.f32")
        subprocess.run([tool(bin_dir, "needle-ref"), "--archive", archive, "--ids", " ".join(map(str, ids)),
                        "--kv", "f32", "--act", "f32", "--sink", str(sink), "--logits-out", out],
                       check=True, stdout=subprocess.DEVNULL)
        return np.fromfile(out, dtype="<f4").reshape(len(ids), vocab)


@torch.no_grad()
def trainer_logits(net: M.Needle2, ids: list, sink: int = 0) -> np.ndarray:
    """The trainer's forward on the archive's weights: every position of one sequence."""
    was_training = net.training
    net.eval()
    tokens = torch.tensor([ids], dtype=torch.int64, device=next(net.parameters()).device)
    logits = net(tokens, sink=sink, exact=True)[0].float().cpu().numpy()
    net.train(was_training)
    return logits


def max_rel(a: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Per row: max|a - ref| / max|ref|."""
    return np.abs(a - ref).max(axis=1) / np.abs(ref).max(axis=1)


def check(bin_dir: str, net: M.Needle2, archive: str, cases: list) -> list:
    """cases: [(label, ids, sink)] -> [(label, length, sink, worst maxRel, position of the worst)]."""
    results = []
    for label, ids, sink in cases:
        rel = max_rel(trainer_logits(net, ids, sink), reference_logits(bin_dir, archive, ids, net.g.vocab, sink))
        results.append((label, len(ids), sink, float(rel.max()), int(rel.argmax())))
    return results


def example_sequences(path: str, tokenizer: str | None, count: int) -> list:
    """The first `count` examples of a JSONL file as the token ids the model runs (prompt, reply)."""
    import train
    examples = train.load_examples(path, tokenizer)[:count]
    return [list(map(int, np.concatenate([p, t]))) for p, t in examples]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--bin", required=True, help="directory with needle-pack and needle-ref")
    ap.add_argument("--data", help="JSONL examples whose token ids to run")
    ap.add_argument("--tokenizer", help="SentencePiece model for --data (and packed into the archive)")
    ap.add_argument("--ids", action="append", default=[], help="a sequence of token ids (repeatable)")
    ap.add_argument("--count", type=int, default=3, help="examples from --data (default 3)")
    ap.add_argument("--long", action="store_true",
                    help="also one sequence longer than kv_window (examples joined), with and without --sink")
    ap.add_argument("--sink", type=int, default=4, help="sink positions for the long sequence (default 4)")
    ap.add_argument("--work", help="where to write the archive (default: a temporary directory)")
    args = ap.parse_args()

    state = torch.load(args.checkpoint, map_location="cpu")
    net = export.load_model(args.checkpoint)
    sequences = [list(map(int, s.split())) for s in args.ids]
    if args.data:
        sequences += example_sequences(args.data, args.tokenizer, max(args.count, 50 if args.long else 0))
    if not sequences:
        raise SystemExit("give --data and/or --ids")
    cases = [(f"sequence {k}", s, 0) for k, s in enumerate(sequences[:args.count + len(args.ids)])]
    if args.long:
        joined = [t for s in sequences for t in s][:min(net.g.max_seq_len, net.g.kv_window + 64)]
        if len(joined) <= net.g.kv_window:
            raise SystemExit(f"the sequences hold only {len(joined)} tokens; kv_window is {net.g.kv_window}")
        cases += [("long", joined, 0), ("long, sink", joined, args.sink)]

    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or tmp
        os.makedirs(work, exist_ok=True)
        archive = os.path.join(work, "parity.cact")
        pack(args.bin, net, state["bits_map"], archive, args.tokenizer)
        results = check(args.bin, net, archive, cases)
    worst = max(r[3] for r in results)
    for label, length, sink, rel, pos in results:
        print(f"{label:>14}: {length:4d} tokens, sink {sink}: worst maxRel {rel:.3e} at position {pos}")
    print(json.dumps({"worst_max_rel": worst, "tolerance": TOLERANCE, "pass": worst <= TOLERANCE}))
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
