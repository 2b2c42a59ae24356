#!/usr/bin/python3
"""average.py: the weighted mean of two runs' weights, as a checkpoint that export.py and evaluate.py read.

    /usr/bin/python3 tools/train/average.py RUN-A/checkpoint.pt RUN-B/checkpoint.pt --weight 0.5 \
        -o RUN-AVG/checkpoint.pt

Either input may be a packed archive (.cact): its dequantised weights, read as train.py --init reads
them (unpack.weights_of), the weights a run started from the archive begins with.

Every floating-point tensor of the model is (1 - weight) A + weight B, in float32 as the trainer keeps
them; the two must be the same model (geometry, bits map, tensor names and shapes), typically a run
and the run that started from it (train.py --init), whose weights lie on one path of training. The
rest of the checkpoint is B's, without its optimiser and random state (an average is not a point a
run can resume from: train.py --resume refuses it), with "averaged" recording the inputs and the
weight. docs/training.md, "Averaged weights".
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import unpack  # noqa: E402


def average(a: dict, b: dict, weight: float) -> dict:
    """The checkpoint whose model weights are (1 - weight) a + weight b; raises ValueError when a and b
    are not the same model."""
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"weight {weight}: must be from 0 to 1")
    for key in ("geometry", "bits_map"):
        if a[key] != b[key]:
            raise ValueError(f"the checkpoints differ in {key}: {a[key]!r} and {b[key]!r}")
    ma, mb = a["model"], b["model"]
    if list(ma) != list(mb):
        missing = sorted(set(ma) ^ set(mb))
        raise ValueError(f"the checkpoints differ in their tensors: {missing[:5] or 'their order'}")
    model = {}
    for name, tb in mb.items():
        ta = ma[name]
        if ta.shape != tb.shape or ta.dtype != tb.dtype:
            raise ValueError(f"tensor {name}: {tuple(ta.shape)} {ta.dtype} against {tuple(tb.shape)} {tb.dtype}")
        if tb.is_floating_point():
            model[name] = weight * tb + (1.0 - weight) * ta
        elif torch.equal(ta, tb):
            model[name] = tb.clone()
        else:
            raise ValueError(f"tensor {name}: integer values differ; they cannot be averaged")
    # an archive's own fields (its path, its inexact groups) are not the average's
    out = {k: v for k, v in b.items() if k not in ("model", "optimizer", "rng", "archive", "inexact_groups")}
    out["model"] = model
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", help="the first checkpoint (or archive)")
    ap.add_argument("b", help="the second checkpoint (or archive)")
    ap.add_argument("--weight", type=float, default=0.5, help="B's share, 0 to 1 (default 0.5)")
    ap.add_argument("-o", "--out", required=True, help="the averaged checkpoint")
    args = ap.parse_args(argv)
    try:
        a, b = unpack.weights_of(args.a), unpack.weights_of(args.b)
        out = average(a, b, args.weight)
    except (OSError, KeyError, ValueError) as e:  # unpack.ArchiveError is a ValueError
        print(f"average: {e}", file=sys.stderr)
        return 1
    out["averaged"] = {"a": args.a, "b": args.b, "weight": args.weight}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    torch.save(out, args.out + ".tmp")
    os.replace(args.out + ".tmp", args.out)
    print(f"average: wrote {args.out}: (1 - {args.weight}) {args.a} + {args.weight} {args.b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
