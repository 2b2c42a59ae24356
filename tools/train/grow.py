#!/usr/bin/python3
"""grow.py: a trained model made deeper by layers that start as the identity, as a checkpoint that
train.py --init continues from.

    /usr/bin/python3 tools/train/grow.py --init models/needlework-tools.cact --after 3 --add 4 \
        -o build/train/grown/checkpoint.pt

`--add` new layers go in after layer `--after` (0-based); the layers after them move down and the
engram sites with them. Each new layer starts so that it passes its lanes on unchanged: its attention
output projection (Wout) and its MLP's last scale (d3) are zero, so the block's output y = out - u
is zero, and its lane routing starts near the identity (b_res = 8 I, where a fresh layer has 4 I; the
Sinkhorn matrix then mixes each lane with the others by about 1e-3). Its other tensors are a fresh
layer's (model.Needle2's initial values, from --seed). The grown model's logits are the old model's to
within that mixing, and training moves the new layers from there. docs/training.md, "Deeper by new
layers".

`--add` must be a multiple of the lane count (4): a layer's mHC offsets depend on its index modulo
the lanes (docs/model.md), and an old layer keeps its offsets only if it moves by whole multiples.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cq  # noqa: E402
import model as M  # noqa: E402
import unpack  # noqa: E402

IDENTITY_ROUTING = 8.0   # b_res diagonal of a new layer: Sinkhorn(exp(8 I)) is within 1e-3 of I
PER_LAYER = {*M.LAYER_CQ, *M.LAYER_FP16, *M.MHC_CQ, *M.MHC_FP16}  # tensors stacked over layers


def grow(start: dict, after: int, add: int, seed: int = 0) -> dict:
    """The checkpoint fields (model, geometry, bits_map, args) of `start` (unpack.start_from's) with
    `add` identity layers after layer `after`; raises ValueError for a placement it cannot keep."""
    g = M.Geometry.from_dict(start["geometry"])
    L, lanes = g.num_layers, g.mhc_lanes
    if not 0 <= after < L:
        raise ValueError(f"--after {after}: the model's layers are 0..{L - 1}")
    if add <= 0 or add % lanes:
        raise ValueError(f"--add {add}: must be a positive multiple of the {lanes} lanes, so that "
                         "every old layer keeps its lane offsets")
    grown = M.Geometry.from_dict(dict(start["geometry"], num_layers=L + add,
                                      engram_sites=[s if s <= after else s + add
                                                    for s in g.engram_sites]))
    fresh = M.Needle2(grown, cq.BitsMap.parse(start["bits_map"]), seed=seed).state_dict()
    new = range(after + 1, after + 1 + add)
    moved = [i for i in range(L + add) if i not in new]   # old layer k is layer moved[k]
    model = {}
    for name, t in start["model"].items():
        if name not in PER_LAYER:
            model[name] = t.clone()          # embedding, engram, final norm: not per layer
            continue
        layers = fresh[name].clone()
        layers[moved] = t.to(layers.dtype)
        model[name] = layers
    for i in new:
        model["out_proj"][i].zero_()
        model["d3"][i].zero_()
        model["b_res"][i] = IDENTITY_ROUTING * torch.eye(lanes)
    geometry = grown.to_json()
    return {"model": model, "geometry": json.loads(geometry), "bits_map": start["bits_map"],
            # train.py --init reads the geometry and bits map from args, and reports the state.
            "args": {"geometry": geometry, "bits_map": start["bits_map"],
                     "grown": {"after": after, "add": add, "seed": seed, "from_layers": L}},
            "state": {key: start.get("state", {}).get(key, 0) for key in ("step", "tokens")}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--init", required=True, metavar="CHECKPOINT",
                    help="a .cact archive (its dequantised weights) or a train.py checkpoint")
    ap.add_argument("--after", type=int, required=True, help="the new layers go after this layer")
    ap.add_argument("--add", type=int, default=4, help="how many layers (a multiple of the lanes)")
    ap.add_argument("--seed", type=int, default=0, help="the new layers' fresh tensors")
    ap.add_argument("-o", "--out", required=True, help="the checkpoint to write")
    args = ap.parse_args(argv)
    try:
        out = grow(unpack.start_from(args.init), args.after, args.add, args.seed)
    except ValueError as e:
        raise SystemExit(f"grow.py: {e}") from None
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    torch.save(out, args.out)
    g = out["geometry"]
    print(f"grow.py: {args.out}: {g['num_layers']} layers (layers {args.after + 1}.."
          f"{args.after + args.add} new), engram sites {g['engram_sites']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
